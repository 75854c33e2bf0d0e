//! What the runner reads from the cluster itself — committed offsets (OffsetFetch), a
//! partition's log start and end and the offset at a time (ListOffsets), a reused topic's
//! records (Fetch) — and the offsets an admin writes for a group with no members
//! (`reset-offsets … execute`, as `kafka-consumer-groups.sh` does).
//!
//! One client per group, with that `group.id` but never subscribed: it never joins the group,
//! so asking changes nothing the scenario's consumers see, and its commits are the
//! out-of-group commits Kafka accepts only while the group is empty.

use crate::admin::ClusterError;
use offsetlab_records::RecordBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::message::{Headers, Message};
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// One record as the cluster holds it (a reused topic's, the page's log view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRecord {
    pub offset: i64,
    pub key: Option<RecordBytes>,
    pub value: Option<RecordBytes>,
    /// Its timestamp (CreateTime or LogAppendTime), epoch ms.
    pub timestamp: Option<i64>,
    pub headers: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

pub struct Inspector {
    bootstrap: String,
    extra: Vec<(String, String)>,
    timeout: Duration,
    /// By the group's name on the cluster.
    clients: BTreeMap<String, BaseConsumer>,
    /// The client that reads records ([`Inspector::read`]), once one was read.
    reader: Option<BaseConsumer>,
}

impl Inspector {
    pub fn new(bootstrap: &str, extra: &[(String, String)], timeout: Duration) -> Self {
        Self {
            bootstrap: bootstrap.to_string(),
            extra: extra.to_vec(),
            timeout,
            clients: BTreeMap::new(),
            reader: None,
        }
    }

    /// A runner's client of `group` that never commits by itself: `own` properties, then the
    /// run's `-X` and `--command-config` ones (which win).
    fn config(&self, group: &str, own: &[(&str, &str)]) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.bootstrap)
            .set("group.id", group)
            .set("enable.auto.commit", "false")
            .set("client.id", "offsetlab-runner");
        for (k, v) in own {
            config.set(*k, *v);
        }
        for (k, v) in &self.extra {
            config.set(k, v);
        }
        config
    }

    fn client(&mut self, group: &str) -> Result<&BaseConsumer, ClusterError> {
        if !self.clients.contains_key(group) {
            let client: BaseConsumer =
                self.config(group, &[])
                    .create()
                    .map_err(|e| ClusterError::Unreachable {
                        bootstrap: self.bootstrap.clone(),
                        why: e.to_string(),
                    })?;
            self.clients.insert(group.to_string(), client);
        }
        self.clients.get(group).ok_or_else(|| ClusterError::Refused {
            what: format!("a client for group {group:?}"),
            why: "not created".into(),
        })
    }

    /// The committed offset of `group` for each of `partitions` of `topic` (cluster names);
    /// `None` where the group holds none.
    pub fn committed(
        &mut self,
        group: &str,
        topic: &str,
        partitions: &[i32],
    ) -> Result<BTreeMap<i32, Option<i64>>, ClusterError> {
        let timeout = self.timeout;
        let mut tpl = TopicPartitionList::new();
        for &p in partitions {
            tpl.add_partition(topic, p);
        }
        let client = self.client(group)?;
        let got = again_while_coordinator_moves(timeout, || client.committed_offsets(tpl.clone(), timeout))
            .map_err(|e| ClusterError::Refused {
            what: format!("the committed offsets of group {group:?}"),
            why: e.to_string(),
        })?;
        Ok(got
            .elements()
            .iter()
            .map(|e| {
                let offset = match e.offset() {
                    Offset::Offset(o) => Some(o),
                    _ => None,
                };
                (e.partition(), offset)
            })
            .collect())
    }

    /// The log start and log end offsets of a partition (cluster names).
    pub fn watermarks(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
    ) -> Result<(i64, i64), ClusterError> {
        let timeout = self.timeout;
        self.client(group)?
            .fetch_watermarks(topic, partition, timeout)
            .map_err(|e| ClusterError::Refused {
                what: format!("the offsets of {topic}-{partition}"),
                why: e.to_string(),
            })
    }

    /// Every record of a partition from offset 0 up to `end` (its log end), as the cluster
    /// hands them out ([`Self::read`]). They must be offsets 0, 1, 2, … without a gap: a log
    /// with gaps (transaction markers, compaction) or a log start past 0 is refused, since a
    /// model's log cannot hold it.
    pub fn read_log(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        end: i64,
    ) -> Result<Vec<ReadRecord>, ClusterError> {
        let idle = self.timeout;
        let read = self.read(group, topic, partition, 0, usize::MAX, end, idle)?;
        let mut out = Vec::with_capacity(read.len());
        for (i, r) in read.into_iter().enumerate() {
            let next = i64::try_from(i).unwrap_or(i64::MAX);
            if r.offset != next {
                return Err(ClusterError::Refused {
                    what: format!("reading {topic}-{partition}"),
                    why: format!(
                        "offset {} comes where {next} should: the log starts past 0 or has gaps (retention, transaction markers, compaction), which a model's log cannot hold",
                        r.offset
                    ),
                });
            }
            out.push(r);
        }
        if i64::try_from(out.len()).unwrap_or(i64::MAX) != end {
            return Err(ClusterError::Refused {
                what: format!("reading {topic}-{partition}"),
                why: format!("{} record(s) came of the {end} its log end promises", out.len()),
            });
        }
        Ok(out)
    }

    /// Up to `max` records of a partition from offset `from`, stopping at `end` (its log end
    /// as asked just before) — Fetch, through a client that names `group` (librdkafka wants
    /// one; the first read's names it) but only assigns itself the partition: it never joins
    /// and commits nothing. One such client serves the run, reassigned for each read.
    /// Transaction markers are not records: a read past one skips its offset. When nothing
    /// comes for `idle`, it answers with what came (the caller decides whether that is enough).
    #[allow(clippy::too_many_arguments)]
    pub fn read(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        from: i64,
        max: usize,
        end: i64,
        idle: Duration,
    ) -> Result<Vec<ReadRecord>, ClusterError> {
        let refused = |why: String| ClusterError::Refused {
            what: format!("reading {topic}-{partition}"),
            why,
        };
        if self.reader.is_none() {
            // A read is answered at once: an outstanding long-poll at a partition's end would
            // hold the next read's first fetch back.
            let config = self.config(
                group,
                &[("enable.partition.eof", "true"), ("fetch.wait.max.ms", "10")],
            );
            self.reader = Some(config.create().map_err(|e| refused(e.to_string()))?);
        }
        let Some(reader) = &self.reader else {
            return Err(refused("no reader".into()));
        };
        let mut out: Vec<ReadRecord> = Vec::new();
        if from >= end || max == 0 {
            return Ok(out);
        }
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, partition, Offset::Offset(from))
            .map_err(|e| refused(e.to_string()))?;
        reader.assign(&tpl).map_err(|e| refused(e.to_string()))?;
        let mut idle_since = Instant::now();
        let done =
            |out: &Vec<ReadRecord>| out.len() >= max || out.last().is_some_and(|r| r.offset + 1 >= end);
        while !done(&out) {
            match reader.poll(Duration::from_millis(100)) {
                Some(Ok(m)) if m.topic() == topic && m.partition() == partition && m.offset() >= from => {
                    out.push(ReadRecord {
                        offset: m.offset(),
                        key: m.key().map(|k| RecordBytes::new(k.to_vec())),
                        value: m.payload().map(|v| RecordBytes::new(v.to_vec())),
                        timestamp: m.timestamp().to_millis(),
                        headers: m
                            .headers()
                            .map(|hs| {
                                hs.iter()
                                    .map(|h| (h.key.as_bytes().to_vec(), h.value.map(<[u8]>::to_vec)))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    });
                    idle_since = Instant::now();
                }
                // A record of an earlier assignment still queued.
                Some(Ok(_)) => {}
                // The partition's end, as its leader knows it now.
                Some(Err(rdkafka::error::KafkaError::PartitionEOF(_))) => break,
                Some(Err(e)) => return Err(refused(e.to_string())),
                None if idle_since.elapsed() > idle => break,
                None => {}
            }
        }
        Ok(out)
    }

    /// The first offset of a partition whose record's timestamp is at or after `ts` (epoch ms),
    /// as ListOffsets finds it; `None` when every record is older.
    pub fn offset_for_time(
        &mut self,
        group: &str,
        topic: &str,
        partition: i32,
        ts: i64,
    ) -> Result<Option<i64>, ClusterError> {
        let timeout = self.timeout;
        let refused = |why: String| ClusterError::Refused {
            what: format!("the offset of {topic}-{partition} at timestamp {ts}"),
            why,
        };
        let mut tpl = TopicPartitionList::new();
        tpl.add_partition_offset(topic, partition, Offset::Offset(ts))
            .map_err(|e| refused(e.to_string()))?;
        let got = self
            .client(group)?
            .offsets_for_times(tpl, timeout)
            .map_err(|e| refused(e.to_string()))?;
        let found = got
            .find_partition(topic, partition)
            .ok_or_else(|| refused("not answered".into()))?;
        if let Err(e) = found.error() {
            return Err(refused(e.to_string()));
        }
        Ok(match found.offset() {
            Offset::Offset(o) if o >= 0 => Some(o),
            _ => None,
        })
    }

    /// Commits `offsets` of `topic` for `group` from outside the group.
    pub fn commit(&mut self, group: &str, topic: &str, offsets: &[(i32, i64)]) -> Result<(), ClusterError> {
        let mut tpl = TopicPartitionList::new();
        for &(p, o) in offsets {
            tpl.add_partition_offset(topic, p, Offset::Offset(o))
                .map_err(|e| ClusterError::Refused {
                    what: format!("offset {o} of {topic}-{p}"),
                    why: e.to_string(),
                })?;
        }
        let timeout = self.timeout;
        let client = self.client(group)?;
        again_while_coordinator_moves(timeout, || client.commit(&tpl, CommitMode::Sync)).map_err(|e| {
            ClusterError::Refused {
                what: format!("resetting the offsets of group {group:?}"),
                why: e.to_string(),
            }
        })
    }
}

/// Runs `ask` until it succeeds, fails otherwise than on a moving or loading coordinator
/// ([`crate::admin::coordinator_moving`]: a new cluster's first group, a coordinator failing
/// over), or `timeout` has passed.
fn again_while_coordinator_moves<T>(
    timeout: Duration,
    mut ask: impl FnMut() -> rdkafka::error::KafkaResult<T>,
) -> rdkafka::error::KafkaResult<T> {
    let deadline = Instant::now() + timeout;
    loop {
        match ask() {
            Err(e)
                if e.rdkafka_error_code()
                    .is_some_and(crate::admin::coordinator_moving)
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            answer => return answer,
        }
    }
}
