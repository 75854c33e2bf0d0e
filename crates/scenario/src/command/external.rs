//! What the Kafka listener's group coordinator reports about groups of real clients:
//!
//! `rebalance GROUP generation=G [type=T] protocol=P members=JSON` — a rebalance completed (of a
//! group of protocol type `T`, `consumer` when left out): the new
//! generation and every member with its assignment. `members` is a JSON array of
//! `{"id": …, "client": …, "host": …, "partitions": {"topic": [0, 1]}}`, each optionally with
//! `"instance": …` (`group.instance.id`), `"topics": […]` (its subscription) and
//! `"session_timeout_ms"` / `"rebalance_timeout_ms"` as it joined — what the coordinator's group
//! metadata record in `__consumer_offsets` holds; `[]` when the last member left or timed out.
//!
//! `commit-offsets GROUP member=M generation=G offsets=T:P=O[,T:P=O…] [metadata=JSON]` — a member
//! committed; `metadata` holds the metadata strings it sent with them (`{"orders:0": "…"}`), for
//! the partitions whose metadata is not empty.
//!
//! The listener writes these lines; the engine checks them (a commit from an unknown member or an
//! old generation is refused) and the lab shows the group like any other. A `commit-offsets`
//! line may also name a group of the lab's own consumers — any process that sends an
//! OffsetCommit with a member id and a generation — where `member` is a member id (`c1#2`) or a
//! consumer's name for its current incarnation's; it is checked the same way.

use crate::error::ParseError;
use crate::token::{Args, Quoted, QuotedJson};
use crate::units::count;
use offsetlab_engine::group::ExternalMember;
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::{Lab, LabError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A member as the `members` JSON spells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberJson {
    id: String,
    #[serde(default)]
    client: String,
    #[serde(default)]
    host: String,
    #[serde(default)]
    partitions: BTreeMap<String, Vec<i32>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instance: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    topics: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    session_timeout_ms: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rebalance_timeout_ms: Option<i32>,
}

impl From<&ExternalMember> for MemberJson {
    fn from(m: &ExternalMember) -> Self {
        let mut partitions: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for tp in &m.partitions {
            partitions.entry(tp.topic.clone()).or_default().push(tp.partition);
        }
        Self {
            id: m.id.clone(),
            client: m.client_id.clone(),
            host: m.host.clone(),
            partitions,
            instance: m.instance_id.clone(),
            topics: m.topics.clone(),
            session_timeout_ms: m.session_timeout_ms,
            rebalance_timeout_ms: m.rebalance_timeout_ms,
        }
    }
}

impl From<MemberJson> for ExternalMember {
    fn from(m: MemberJson) -> Self {
        Self {
            id: m.id,
            client_id: m.client,
            host: m.host,
            partitions: m
                .partitions
                .into_iter()
                .flat_map(|(t, ps)| ps.into_iter().map(move |p| TopicPartition::new(t.clone(), p)))
                .collect(),
            instance_id: m.instance,
            topics: m.topics,
            session_timeout_ms: m.session_timeout_ms,
            rebalance_timeout_ms: m.rebalance_timeout_ms,
        }
    }
}

/// `T:P=O[,T:P=O…]`: offsets per partition, as `commit-offsets` and `txn-offsets` write them.
/// Offsets as [`parse_offsets`] reads them: `T:P=O,T:P=O`.
pub(crate) fn offsets_text(offsets: &[(TopicPartition, Offset)]) -> String {
    let offsets: Vec<String> = offsets
        .iter()
        .map(|(tp, o)| format!("{}:{}={o}", tp.topic, tp.partition))
        .collect();
    offsets.join(",")
}

/// `leader-epochs=T:P=E,…`: the leader epoch a client sent with a partition's committed offset
/// (OffsetCommit's `committed_leader_epoch`, KIP-320), for those that sent one (≥ 0).
pub(crate) fn parse_leader_epochs(v: &str) -> Result<BTreeMap<TopicPartition, i32>, String> {
    parse_offsets(v)?
        .into_iter()
        .map(|(tp, e)| match i32::try_from(e) {
            Ok(e) if e >= 0 => Ok((tp, e)),
            _ => Err(format!("{tp}: a leader epoch is 0 to {}", i32::MAX)),
        })
        .collect()
}

/// ` leader-epochs=…` as [`parse_leader_epochs`] reads it; nothing when there is none.
pub(crate) fn write_leader_epochs(
    f: &mut fmt::Formatter<'_>,
    epochs: &BTreeMap<TopicPartition, i32>,
) -> fmt::Result {
    if epochs.is_empty() {
        return Ok(());
    }
    let as_offsets: Vec<(TopicPartition, Offset)> = epochs
        .iter()
        .map(|(tp, e)| (tp.clone(), Offset::from(*e)))
        .collect();
    write!(f, " leader-epochs={}", offsets_text(&as_offsets))
}

pub(crate) fn parse_offsets(v: &str) -> Result<Vec<(TopicPartition, Offset)>, String> {
    v.split(',')
        .map(|entry| {
            let bad = || format!("'{entry}' is not TOPIC:PARTITION=OFFSET");
            let (tp, offset) = entry.rsplit_once('=').ok_or_else(bad)?;
            let (topic, partition) = tp.rsplit_once(':').ok_or_else(bad)?;
            let partition = count(partition, 10_000).map_err(|_| bad())? as i32;
            // Any 64-bit value: Kafka's coordinator stores a committed offset as given (an admin
            // client commits −2 for "earliest", −1 for "latest").
            let offset = offset.parse::<i64>().map_err(|_| bad())?;
            // A topic's name holds no ':', '=' or ',': the list is written as it is.
            if let Some(problem) = offsetlab_engine::names::topic_name_problem(topic) {
                return Err(format!("'{entry}': {problem}"));
            }
            Ok((TopicPartition::new(topic, partition), offset))
        })
        .collect()
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rebalance {
    pub group: String,
    pub generation: i32,
    /// The group's protocol type (`type=`, written when it is not `consumer`).
    pub protocol_type: String,
    pub protocol: String,
    pub members: Vec<ExternalMember>,
}

impl Rebalance {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let generation = args
            .parsed("generation", |v| count(v, i32::MAX as u64).map(|g| g as i32))?
            .ok_or_else(|| ParseError::new("rebalance: missing generation=…"))?;
        // The assignor's name, as the members chose it (any string a client sends).
        let protocol = args.option("protocol").unwrap_or_else(|| "range".to_string());
        let protocol_type = args.option("type").unwrap_or_else(|| "consumer".to_string());
        let members = args
            .parsed("members", |v| {
                serde_json::from_str::<Vec<MemberJson>>(v).map_err(|e| {
                    format!(
                        "not a JSON array of {{\"id\", \"client\", \"host\", \"partitions\"}} members ({e})"
                    )
                })
            })?
            .ok_or_else(|| ParseError::new("rebalance: missing members=[…]"))?;
        Ok(Self {
            group,
            generation,
            protocol_type,
            protocol,
            members: members.into_iter().map(ExternalMember::from).collect(),
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.external_rebalance_of(
            &self.group,
            self.generation,
            &self.protocol_type,
            &self.protocol,
            self.members.clone(),
        )
    }
}

impl fmt::Display for Rebalance {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let members: Vec<MemberJson> = self.members.iter().map(MemberJson::from).collect();
        let json = serde_json::to_string(&members).map_err(|_| fmt::Error)?;
        write!(
            f,
            "rebalance {} generation={}",
            Quoted(&self.group),
            self.generation
        )?;
        if self.protocol_type != "consumer" {
            write!(f, " type={}", Quoted(&self.protocol_type))?;
        }
        write!(
            f,
            " protocol={} members={}",
            Quoted(&self.protocol),
            QuotedJson(&json)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitOffsets {
    pub group: String,
    pub member: String,
    pub generation: i32,
    pub offsets: Vec<(TopicPartition, Offset)>,
    /// The metadata a client sent with a partition's offset (OffsetCommit's
    /// `committed_metadata`), for those that sent any: OffsetFetch hands it back.
    pub metadata: BTreeMap<TopicPartition, String>,
    /// The leader epochs sent with the offsets (`committed_leader_epoch`), for those that sent
    /// one: OffsetFetch hands them back.
    pub leader_epochs: BTreeMap<TopicPartition, i32>,
}

impl CommitOffsets {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let member = args.required("member")?;
        if member.is_empty() {
            return Err(ParseError::new("commit-offsets: member must not be empty"));
        }
        let generation = args
            .parsed("generation", |v| count(v, i32::MAX as u64).map(|g| g as i32))?
            .ok_or_else(|| ParseError::new("commit-offsets: missing generation=…"))?;
        let offsets = args
            .parsed("offsets", parse_offsets)?
            .ok_or_else(|| ParseError::new("commit-offsets: missing offsets=T:P=O,…"))?;
        let metadata = args.parsed("metadata", parse_metadata)?.unwrap_or_default();
        let leader_epochs = args
            .parsed("leader-epochs", parse_leader_epochs)?
            .unwrap_or_default();
        Ok(Self {
            group,
            member,
            generation,
            offsets,
            metadata,
            leader_epochs,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.external_commit(
            &self.group,
            &self.member,
            self.generation,
            &self.offsets,
            &self.metadata,
            &self.leader_epochs,
        )
    }
}

impl fmt::Display for CommitOffsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "commit-offsets {} member={} generation={} offsets={}",
            Quoted(&self.group),
            Quoted(&self.member),
            self.generation,
            offsets_text(&self.offsets)
        )?;
        write_metadata(f, &self.metadata)?;
        write_leader_epochs(f, &self.leader_epochs)
    }
}

/// `metadata={"topic:partition": "…"}`: the metadata strings sent with committed offsets.
pub(crate) fn parse_metadata(v: &str) -> Result<BTreeMap<TopicPartition, String>, String> {
    let by_partition: BTreeMap<String, String> = serde_json::from_str(v)
        .map_err(|e| format!("not a JSON object of \"topic:partition\": metadata ({e})"))?;
    by_partition
        .into_iter()
        .map(|(tp, m)| {
            let (topic, partition) = tp
                .rsplit_once(':')
                .and_then(|(t, p)| Some((t, p.parse::<i32>().ok()?)))
                .ok_or_else(|| format!("'{tp}' is not topic:partition"))?;
            Ok((TopicPartition::new(topic, partition), m))
        })
        .collect()
}

/// ` metadata=…` as [`parse_metadata`] reads it; nothing when there is none.
pub(crate) fn write_metadata(
    f: &mut fmt::Formatter<'_>,
    metadata: &BTreeMap<TopicPartition, String>,
) -> fmt::Result {
    if metadata.is_empty() {
        return Ok(());
    }
    let by_partition: BTreeMap<String, &str> = metadata
        .iter()
        .map(|(tp, m)| (format!("{}:{}", tp.topic, tp.partition), m.as_str()))
        .collect();
    let json = serde_json::to_string(&by_partition).map_err(|_| fmt::Error)?;
    write!(f, " metadata={}", QuotedJson(&json))
}
