//! A `topic` line on the cluster — created with the run's prefix, or reused as it is there
//! (its records read into the model) — and a `produce` line's records sent to it.

use super::error::LineFailure;
use super::{days, ClusterRun};
use crate::produce::{model_records, Sender};
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::{CreateTopic, Produce};
use std::collections::BTreeMap;

impl ClusterRun {
    /// A `topic` line: created on the cluster with the run's prefix, its settings as Kafka's
    /// topic configs.
    pub(super) fn create_topic(&mut self, topic: &CreateTopic) -> Result<String, LineFailure> {
        let name = self.opts.prefix.on_cluster(&topic.name);
        let partitions = self.partitions(&topic.name);
        // Its settings as Kafka's topic configs; what they do (retention, cleaning) the
        // cluster does on its own schedule.
        let configs: Vec<(String, String)> = topic
            .config
            .kafka_overrides()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        self.cluster.create_topic(&name, partitions, &configs)?;
        self.created.push(name.clone());
        let set: Vec<String> = configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Ok(if set.is_empty() {
            format!("created topic {name} ({partitions} partition(s))")
        } else {
            format!(
                "created topic {name} ({partitions} partition(s), {})",
                set.join(", ")
            )
        })
    }

    /// A `produce` line: the model's new records — from `from`, each partition's log end
    /// before the line — sent to the topic the run created, at the model's offsets.
    pub(super) fn produce(&mut self, p: &Produce, from: &BTreeMap<i32, i64>) -> Result<String, LineFailure> {
        let name = self.opts.prefix.on_cluster(&p.topic);
        if !self.created.contains(&name) {
            return Err(LineFailure::Other(format!(
                "topic {} was not created by this run: a run writes only to topics it created",
                p.topic
            )));
        }
        if self.sender.is_none() {
            self.sender = Some(Sender::new(
                &self.opts.bootstrap,
                &self.opts.extra,
                self.opts.timeout,
            )?);
        }
        let mut sent = 0;
        for (&partition, &from) in from {
            let tp = TopicPartition::new(p.topic.clone(), partition);
            let shift = self.shift_of(&p.topic);
            let records: Vec<_> = model_records(&self.model.lab, &tp, from)
                .map_err(|e| LineFailure::Other(e.to_string()))?
                .into_iter()
                .map(|mut r| {
                    r.timestamp = r.timestamp.saturating_add(shift);
                    r
                })
                .collect();
            if let Some(sender) = &self.sender {
                // The model's batches, each sent and flushed before the next (`batch=N`: N
                // records a request): a share fetch acquires whole batches, so the cluster's
                // must be the model's.
                let log = self
                    .model
                    .lab
                    .partition_log(&tp)
                    .map_err(|e| LineFailure::Other(e.to_string()))?;
                let mut rest = records.as_slice();
                while let Some(first) = rest.first() {
                    let end = log.batch_end(first.offset);
                    let n = rest.iter().take_while(|r| r.offset < end).count().max(1);
                    sender.send(&name, partition, &rest[..n])?;
                    rest = &rest[n..];
                }
            }
            sent += records.len();
        }
        Ok(format!("{sent} record(s) on {name}, at the model's offsets"))
    }

    /// A reused topic's `topic` line: the topic is taken as it is on the cluster — its records
    /// (offsets 0 to its end, no gaps) are read and appended to the model's new topic, so the
    /// model's log is the cluster's — and the run neither writes to it nor deletes it.
    pub(super) fn reuse_topic(&mut self, topic: &str) -> Result<String, LineFailure> {
        let name = self.opts.prefix.on_cluster(topic);
        let partitions = self.partitions(topic);
        let mut logs = Vec::new();
        for p in 0..partitions {
            // Asked by a client of no group the run has: it only reads.
            let asker = self.opts.prefix.on_cluster("runner");
            let (low, high) = self.inspector.watermarks(&asker, &name, p)?;
            if low != 0 {
                return Err(LineFailure::Other(format!(
                    "{name}-{p} starts at offset {low} (retention or DeleteRecords): a reused topic's log must start at 0, as the model's does"
                )));
            }
            logs.push(self.inspector.read_log(&asker, &name, p, high)?);
        }
        // Its records were moved onto the day the earlier run wrote them ([`days`]): the day of
        // its first record, from the model's start, moves them back.
        // (On the page of `serve --bootstrap-server`, whose clock is the wall clock, the
        // records keep the cluster's timestamps.)
        let first = logs.iter().flatten().filter_map(|r| r.timestamp).min();
        let shift = match (self.origin, first) {
            (Some((start, shift)), Some(t)) if shift != 0 => days::shift(start, t),
            _ => self.shift(),
        };
        self.reused_shift.insert(topic.to_string(), shift);
        let mut read = 0;
        for (p, records) in (0..partitions).zip(logs) {
            let sent: Vec<offsetlab_engine::lab::SentRecord> = records
                .into_iter()
                .map(|r| offsetlab_engine::lab::SentRecord {
                    key: r.key,
                    value: r.value,
                    timestamp: r.timestamp.map(|t| t.saturating_sub(shift)),
                    headers: r
                        .headers
                        .into_iter()
                        .map(|(k, v)| offsetlab_engine::lab::SentHeader::from((k, v)))
                        .collect(),
                    batch_timestamp: None,
                })
                .collect();
            for chunk in sent.chunks(offsetlab_engine::lab::MAX_SEND_RECORDS) {
                self.model
                    .lab
                    .send(topic, p, chunk, "the reused topic")
                    .map_err(|e| {
                        LineFailure::Other(format!("the model could not take {name}-{p}'s records: {e}"))
                    })?;
            }
            read += sent.len();
        }
        Ok(format!(
            "reused topic {name} ({partitions} partition(s)): its {read} record(s) read into the model; the run will not write to it or delete it"
        ))
    }
}
