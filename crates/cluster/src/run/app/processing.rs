//! A poll and the processing after it: what the real consumer is handed (in the model's
//! batch order, each partition's share), the sink writes and the audit of each record, and the
//! commit the strategy makes after a record or a batch.

use super::{AppError, Application, Crashed, InFlight, PollPlan, TxnWrite, ASK_TIMEOUT, POLL_TIMEOUT};
use crate::protocol::{Delivered, Reply, Request};
use offsetlab_engine::audit::Delivery;
use offsetlab_engine::consumer::ConsumerConfig;
use offsetlab_engine::delivery::DeliveryReason;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::sink::{SinkWrite, WriteOutcome};
use offsetlab_engine::strategy::{CommitCall, CommitWhen};
use std::collections::BTreeMap;
use std::time::Instant;

impl Application {
    /// `poll NAME` at model time `now`, as `plan` says the model's went: how many records the
    /// cluster handed over.
    pub fn poll(&mut self, name: &str, now: i64, plan: PollPlan) -> Result<(usize, Crashed), AppError> {
        let PollPlan {
            assigned,
            rejoins,
            revoked,
            lost,
            batch,
        } = plan;
        if rejoins && self.revoke_all(name)? {
            return Ok((0, true));
        }
        if !revoked.is_empty() && self.revoke_some(name, &revoked)? {
            return Ok((0, true));
        }
        if lost {
            let c = self.consumer(name)?;
            c.give_up_partitions();
            c.pending_async.clear();
        }
        self.consumer(name)?.last_poll.clear();
        let starts = self.sink_starts(name, assigned.as_deref())?;
        let c = self.consumer(name)?;
        let rules = c.config.strategy.rules();
        let max = c.config.max_poll_records;
        if let Some(due) = c.next_poll_commit.filter(|&d| now >= d) {
            // The Java client's auto-commit runs first in poll(): what earlier polls returned.
            c.next_poll_commit = Some(now.saturating_add(c.config.auto_commit_interval_ms));
            let _ = due;
            let positions = c.positions.clone();
            if self.commit(name, positions, true)? {
                return Ok((0, true));
            }
        }
        let reply = self.agent(name)?.ask(
            &Request::Poll {
                max,
                timeout_ms: u64::try_from(POLL_TIMEOUT.as_millis()).unwrap_or(30_000),
                assigned,
                starts,
                shares: batch.as_ref().map(|b| shares(b)),
            },
            POLL_TIMEOUT + ASK_TIMEOUT,
        )?;
        let mut records = match reply {
            Reply::Records { records } => records,
            Reply::Stopped { .. } => {
                self.stop(name)?;
                return Ok((0, false));
            }
            Reply::Failed { message } => return Err(AppError::Other(format!("{name}'s poll: {message}"))),
            other => return Err(AppError::Other(format!("{name}'s poll answered {other:?}"))),
        };
        if let Some(order) = &batch {
            let place = |r: &Delivered| {
                order
                    .iter()
                    .position(|&(p, o)| p == r.partition && o == r.offset)
                    .unwrap_or(usize::MAX)
            };
            records.sort_by_key(place);
        }
        let n = records.len();
        let c = self.consumer(name)?;
        c.last_poll = records.iter().map(|r| (r.partition, r.offset)).collect();
        let (group, topic) = (c.config.group.clone(), c.config.topic.clone());
        for r in &records {
            c.positions.insert(r.partition, r.offset + 1);
        }
        if !records.is_empty() {
            c.positions_moved = Some(Instant::now());
        }
        if let Some(g) = self.groups.get_mut(&group) {
            for r in &records {
                g.audit
                    .note_start(&TopicPartition::new(topic.clone(), r.partition), r.offset);
            }
        }
        let c = self.consumer(name)?;
        let last = records.len().saturating_sub(1);
        c.in_flight
            .extend(records.into_iter().enumerate().map(|(i, record)| InFlight {
                record,
                last_of_batch: i == last,
            }));
        if self.effect(name)? {
            return Ok((n, true));
        }
        if rules.when == CommitWhen::AfterPoll && n > 0 && self.consumer(name)?.config.commits_to_kafka() {
            let positions = self.consumer(name)?.positions.clone();
            if self.commit(name, positions, true)? {
                return Ok((n, true));
            }
        }
        Ok((n, false))
    }

    /// A transactional sink's next offset of each of `partitions`: where one the group gives
    /// the consumer in this poll starts (empty for a consumer whose offsets are Kafka's).
    pub(super) fn sink_starts(
        &mut self,
        name: &str,
        partitions: Option<&[i32]>,
    ) -> Result<Vec<(i32, i64)>, AppError> {
        let c = self.consumer(name)?;
        if c.config.commits_to_kafka() {
            return Ok(Vec::new());
        }
        let (group, topic) = (c.config.group.clone(), c.config.topic.clone());
        let Some(sink) = self.groups.get(&group).and_then(|g| g.sink.as_ref()) else {
            return Ok(Vec::new());
        };
        let mut starts = Vec::new();
        for &p in partitions.unwrap_or_default() {
            let tp = TopicPartition::new(topic.clone(), p);
            if let Some(o) = sink.stored_offset(&tp).map_err(|error| AppError::Sink {
                group: group.clone(),
                error,
            })? {
                starts.push((p, o));
            }
        }
        Ok(starts)
    }

    /// The consumer now holds `partitions` (given in a poll): a record of one read again is a
    /// repeat of the kind each names — why the partition came to it (a crash, a close, a
    /// rebalance), as the model's handoffs say; the cluster's assignment was checked to be the
    /// model's.
    pub fn took_over(&mut self, name: &str, partitions: &[(i32, DeliveryReason)]) -> Result<(), AppError> {
        let c = self.consumer(name)?;
        for &(p, reason) in partitions {
            c.repeat.insert(p, reason);
        }
        Ok(())
    }

    /// `process NAME [count=N]` at model time `now`: each record written to the group's sink and
    /// audited, with the strategy's commit after it. How many were processed.
    pub fn process(
        &mut self,
        name: &str,
        count: Option<usize>,
        now: i64,
    ) -> Result<(usize, Crashed), AppError> {
        let c = self.consumer(name)?;
        let n = count.unwrap_or(usize::MAX).min(c.in_flight.len());
        let mut done = 0;
        while done < n {
            let c = self.consumer(name)?;
            let Some(item) = c.in_flight.pop_front() else {
                break;
            };
            let transactional = c.config.is_transactional_producer();
            self.now = now;
            let outcome = if transactional {
                self.process_in_txn(name, &item)?
            } else {
                self.process_to_sink(name, &item, now)?
            };
            let Some(crashed) = outcome else {
                continue;
            };
            done += 1;
            if crashed {
                return Ok((done, true));
            }
        }
        Ok((done, false))
    }

    /// What a record of `name`'s is to the group: its consumer's settings and incarnation, why
    /// it is delivered again if it is, and its scenario partition.
    fn record_context(
        &mut self,
        name: &str,
        r: &Delivered,
    ) -> Result<(ConsumerConfig, u32, DeliveryReason, TopicPartition), AppError> {
        let c = self.consumer(name)?;
        let repeat = c
            .repeat
            .get(&r.partition)
            .copied()
            .unwrap_or(DeliveryReason::RestartRedelivery);
        let tp = TopicPartition::new(c.config.topic.clone(), r.partition);
        Ok((c.config.clone(), c.incarnation, repeat, tp))
    }

    /// Read-process-write: the output goes into the open transaction; the audit and the sink
    /// see it when the transaction commits (after the record or the batch, as the strategy
    /// says). Whether the consumer crashed on the way.
    fn process_in_txn(&mut self, name: &str, item: &InFlight) -> Result<Option<Crashed>, AppError> {
        let r = &item.record;
        let (cfg, incarnation, repeat, tp) = self.record_context(name, r)?;
        let output = self
            .consumer(name)?
            .output
            .clone()
            .ok_or_else(|| AppError::Other(format!("consumer {name} has no output topic")))?;
        self.agent(name)?.ask(
            &Request::TxnSend {
                topic: output,
                key: r.key.clone(),
                value: r.value.clone(),
            },
            ASK_TIMEOUT,
        )?;
        let c = self.consumer(name)?;
        c.txn.push(TxnWrite {
            tp,
            offset: r.offset,
            key: r.key.as_ref().map(|k| k.as_bytes().to_vec()).unwrap_or_default(),
            value: r
                .value
                .as_ref()
                .map(|v| v.as_bytes().to_vec())
                .unwrap_or_default(),
            incarnation,
            reason: repeat,
        });
        c.processed.insert(r.partition, r.offset + 1);
        if self.effect(name)? {
            return Ok(Some(true));
        }
        let commits = cfg.strategy.rules().commits_after_record(item.last_of_batch);
        Ok(Some(commits && self.commit_txn(name)?))
    }

    /// A record written to the group's sink and audited, then the strategy's commit after it
    /// (after each record, or after the batch; sync or async). Whether the consumer crashed on
    /// the way; `None` when its group is gone and the record is not counted.
    fn process_to_sink(
        &mut self,
        name: &str,
        item: &InFlight,
        now: i64,
    ) -> Result<Option<Crashed>, AppError> {
        let r = &item.record;
        let (cfg, incarnation, repeat, tp) = self.record_context(name, r)?;
        let g = self
            .groups
            .get_mut(&cfg.group)
            .ok_or_else(|| AppError::Other(format!("no group {:?}", cfg.group)))?;
        let reason = g.audit.classify(&tp, r.offset, repeat);
        let key = r.key.as_ref().map_or(&[][..], |k| k.as_bytes());
        let value = r.value.as_ref().map_or(&[][..], |v| v.as_bytes());
        let sink = g
            .sink
            .as_mut()
            .ok_or_else(|| AppError::Other(format!("group {:?} has no sink", cfg.group)))?;
        let outcome = sink
            .apply(&SinkWrite {
                tp: &tp,
                offset: r.offset,
                key,
                value,
                consumer: &cfg.name,
                incarnation,
                generation: 0,
                reason,
                at: now,
            })
            .map_err(|error| AppError::Sink {
                group: cfg.group.clone(),
                error,
            })?;
        if let WriteOutcome::Fenced { .. } = outcome {
            // Refused by the transactional sink: nothing applied, but the record is done.
            return Ok(Some(self.effect(name)?));
        }
        if let Some(c) = self.consumers.get_mut(name) {
            c.processed.insert(r.partition, r.offset + 1);
        }
        let Some(g) = self.groups.get_mut(&cfg.group) else {
            return Ok(None);
        };
        g.audit.record(Delivery {
            at: now,
            tp,
            offset: r.offset,
            key: String::from_utf8_lossy(key).into_owned(),
            consumer: cfg.name.clone(),
            incarnation,
            reason,
        });
        if self.effect(name)? {
            return Ok(Some(true));
        }
        let rules = cfg.strategy.rules();
        Ok(Some(match rules.call {
            _ if !cfg.commits_to_kafka() || !rules.commits_after_record(item.last_of_batch) => false,
            CommitCall::Sync if rules.when == CommitWhen::AfterEachRecord => {
                self.commit(name, BTreeMap::from([(r.partition, r.offset + 1)]), false)?
            }
            CommitCall::Sync => {
                let processed = self.consumer(name)?.processed.clone();
                self.commit(name, processed, false)?
            }
            CommitCall::Async => self.send_async(name, now)?,
        }))
    }
}

/// How many records of each partition a batch of (partition, offset) has.
pub(super) fn shares(batch: &[(i32, i64)]) -> Vec<(i32, usize)> {
    let mut n: BTreeMap<i32, usize> = BTreeMap::new();
    for &(p, _) in batch {
        *n.entry(p).or_default() += 1;
    }
    n.into_iter().collect()
}
