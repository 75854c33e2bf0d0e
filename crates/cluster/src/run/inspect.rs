//! What the runner reads from the cluster itself — committed offsets (OffsetFetch) and a
//! partition's log start and end (ListOffsets) — and the offsets an admin writes for a group
//! with no members (`reset-offsets … execute`, as `kafka-consumer-groups.sh` does).
//!
//! One client per group, with that `group.id` but never subscribed: it never joins the group,
//! so asking changes nothing the scenario's consumers see, and its commits are the
//! out-of-group commits Kafka accepts only while the group is empty.

use crate::admin::ClusterError;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
use rdkafka::{Offset, TopicPartitionList};
use std::collections::BTreeMap;
use std::time::Duration;

pub struct Inspector {
    bootstrap: String,
    extra: Vec<(String, String)>,
    timeout: Duration,
    /// By the group's name on the cluster.
    clients: BTreeMap<String, BaseConsumer>,
}

impl Inspector {
    pub fn new(bootstrap: &str, extra: &[(String, String)], timeout: Duration) -> Self {
        Self {
            bootstrap: bootstrap.to_string(),
            extra: extra.to_vec(),
            timeout,
            clients: BTreeMap::new(),
        }
    }

    fn client(&mut self, group: &str) -> Result<&BaseConsumer, ClusterError> {
        if !self.clients.contains_key(group) {
            let mut config = ClientConfig::new();
            config
                .set("bootstrap.servers", &self.bootstrap)
                .set("group.id", group)
                .set("enable.auto.commit", "false")
                .set("client.id", "offsetlab-runner");
            for (k, v) in &self.extra {
                config.set(k, v);
            }
            let client: BaseConsumer = config.create().map_err(|e| ClusterError::Unreachable {
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
        let got = self
            .client(group)?
            .committed_offsets(tpl, timeout)
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
        self.client(group)?
            .commit(&tpl, CommitMode::Sync)
            .map_err(|e| ClusterError::Refused {
                what: format!("resetting the offsets of group {group:?}"),
                why: e.to_string(),
            })
    }
}
