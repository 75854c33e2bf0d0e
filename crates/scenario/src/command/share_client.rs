//! What real clients' share consumers did, as the Kafka listener writes it into the history (so
//! an export replays it, like `send` and `rebalance` lines):
//! - `share-join GROUP member=ID client=CLIENT topics=T[,T…]` — a ShareGroupHeartbeat that
//!   joins (member epoch 0) or subscribes to other topics;
//! - `share-leave GROUP member=ID [session-timeout]` — the member left (member epoch −1), or
//!   its session ran out; the records it held are released;
//! - `share-release GROUP member=ID` — its share session closed: the records it held are
//!   released, and it stays in the group;
//! - `share-fetch GROUP member=ID topic=T partition=P max=N` — a ShareFetch acquiring up to N
//!   records of one partition;
//! - `share-acknowledge GROUP member=ID topic=T partition=P acks=O[-O]:TYPE[,…]` — the
//!   member's acknowledgements of one partition, in a ShareFetch or a ShareAcknowledge.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::count;
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::share::AcknowledgeType;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareJoin {
    pub group: String,
    pub member: String,
    pub client: String,
    pub topics: Vec<String>,
}

impl ShareJoin {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let member = args.required("member")?;
        let client = args.required("client")?;
        let topics: Vec<String> = args.required("topics")?.split(',').map(str::to_string).collect();
        if topics.iter().any(String::is_empty) {
            return Err(ParseError::new(
                "share-join: topics=… names topics, separated by commas",
            ));
        }
        Ok(Self {
            group,
            member,
            client,
            topics,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.share_client_join(&self.group, &self.member, &self.client, &self.topics)
    }
}

impl fmt::Display for ShareJoin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "share-join {} member={} client={} topics={}",
            Quoted(&self.group),
            Quoted(&self.member),
            Quoted(&self.client),
            Quoted(&self.topics.join(","))
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareLeave {
    pub group: String,
    pub member: String,
    /// Its session ran out, rather than a heartbeat saying it leaves.
    pub session_timeout: bool,
}

impl ShareLeave {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let member = args.required("member")?;
        let session_timeout = args.flag("session-timeout");
        Ok(Self {
            group,
            member,
            session_timeout,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        let why = if self.session_timeout {
            "its session timed out: no heartbeat within share.session.timeout.ms"
        } else {
            "its heartbeat with member epoch -1"
        };
        lab.share_client_leave(&self.group, &self.member, why)
    }
}

impl fmt::Display for ShareLeave {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "share-leave {} member={}",
            Quoted(&self.group),
            Quoted(&self.member)
        )?;
        if self.session_timeout {
            write!(f, " session-timeout")?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareRelease {
    pub group: String,
    pub member: String,
}

impl ShareRelease {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        Ok(Self {
            group: args.word("group")?,
            member: args.required("member")?,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.share_client_release(&self.group, &self.member).map(|_| ())
    }
}

impl fmt::Display for ShareRelease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "share-release {} member={}",
            Quoted(&self.group),
            Quoted(&self.member)
        )
    }
}

fn partition_of(args: &mut Args) -> Result<TopicPartition, ParseError> {
    let topic = args.required("topic")?;
    let partition = args
        .parsed("partition", |v| count(v, i32::MAX as u64).map(|p| p as i32))?
        .ok_or_else(|| ParseError::new(format!("{}: missing partition=…", args.command())))?;
    Ok(TopicPartition::new(topic, partition))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareFetch {
    pub group: String,
    pub member: String,
    pub tp: TopicPartition,
    pub max: usize,
}

impl ShareFetch {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let member = args.required("member")?;
        let tp = partition_of(args)?;
        let max = args
            .parsed("max", |v| count(v, u32::MAX.into()))?
            .ok_or_else(|| ParseError::new("share-fetch: missing max=…"))? as usize;
        Ok(Self {
            group,
            member,
            tp,
            max,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.share_client_fetch(&self.group, &self.member, &self.tp, self.max)
            .map(|_| ())
    }
}

impl fmt::Display for ShareFetch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "share-fetch {} member={} topic={} partition={} max={}",
            Quoted(&self.group),
            Quoted(&self.member),
            Quoted(&self.tp.topic),
            self.tp.partition,
            self.max
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ShareAcknowledge {
    pub group: String,
    pub member: String,
    pub tp: TopicPartition,
    /// Runs of offsets, each with one type: (first, last, type).
    pub acks: Vec<(Offset, Offset, AcknowledgeType)>,
}

impl ShareAcknowledge {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let member = args.required("member")?;
        let tp = partition_of(args)?;
        let acks = args
            .parsed("acks", parse_acks)?
            .ok_or_else(|| ParseError::new("share-acknowledge: missing acks=…"))?;
        Ok(Self {
            group,
            member,
            tp,
            acks,
        })
    }

    /// Every acknowledged offset with its type, in order.
    pub fn offsets(&self) -> Vec<(Offset, AcknowledgeType)> {
        self.acks
            .iter()
            .flat_map(|&(a, b, t)| (a..=b).map(move |o| (o, t)))
            .collect()
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.share_client_acknowledge(&self.group, &self.member, &self.tp, &self.offsets())
    }
}

/// The most offsets one line may acknowledge (the listener refuses more before it writes one).
const MAX_ACKNOWLEDGED: i64 = 1 << 20;

/// `3-5:accept,6:reject`: runs in ascending order, never overlapping (Kafka's rule for a
/// partition's acknowledgement batches), a million offsets at most.
fn parse_acks(v: &str) -> Result<Vec<(Offset, Offset, AcknowledgeType)>, String> {
    let mut out: Vec<(Offset, Offset, AcknowledgeType)> = Vec::new();
    let mut covered: i64 = 0;
    for run in v.split(',') {
        let (range, kind) = run
            .split_once(':')
            .ok_or_else(|| format!("'{run}' is not OFFSET[-OFFSET]:accept|release|reject"))?;
        let number = |s: &str| count(s, i64::MAX as u64).map(|o| o as Offset);
        let (first, last) = match range.split_once('-') {
            Some((a, b)) => (number(a)?, number(b)?),
            None => {
                let o = number(range)?;
                (o, o)
            }
        };
        if last < first {
            return Err(format!("{first}-{last} ends before it starts"));
        }
        if out.last().is_some_and(|&(_, prev, _)| first <= prev) {
            return Err(format!("{range} overlaps or comes before the run before it"));
        }
        covered = covered.saturating_add((last - first).saturating_add(1));
        if covered > MAX_ACKNOWLEDGED {
            return Err(format!(
                "more than {MAX_ACKNOWLEDGED} offsets acknowledged in one line"
            ));
        }
        let kind: AcknowledgeType = kind.parse()?;
        out.push((first, last, kind));
    }
    Ok(out)
}

impl fmt::Display for ShareAcknowledge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let runs: Vec<String> = self
            .acks
            .iter()
            .map(|(a, b, t)| {
                if a == b {
                    format!("{a}:{t}")
                } else {
                    format!("{a}-{b}:{t}")
                }
            })
            .collect();
        write!(
            f,
            "share-acknowledge {} member={} topic={} partition={} acks={}",
            Quoted(&self.group),
            Quoted(&self.member),
            Quoted(&self.tp.topic),
            self.tp.partition,
            runs.join(",")
        )
    }
}
