//! The strategy's commits on the cluster, as the model's application makes them (their rules
//! from the engine's `CommitStrategy::rules`): the client's own auto-commit timer observed, a
//! synchronous commit, a kafka-tx application's `commitTransaction`, `commitAsync` landing on
//! the model's clock, the revoke hook's commit. Apart from the consumers' lifecycle, since
//! every one of them is an effect a fault plan can stop at.

use super::{AppError, Application, Crashed, RealConsumer, ASK_TIMEOUT};
use crate::protocol::{PartitionOffset, Reply, Request};
use offsetlab_engine::audit::Delivery;
use offsetlab_engine::sink::SinkWrite;
use offsetlab_engine::strategy::CommitSource;
use std::collections::BTreeMap;

impl Application {
    /// Whether `name`'s auto-commit timer, firing now, would commit anything: a stored offset
    /// (what poll handed over) the group does not hold yet.
    pub fn timer_would_commit(&self, name: &str) -> bool {
        let Some(c) = self.consumers.get(name) else {
            return false;
        };
        let held = self.groups.get(&c.config.group).map(|g| &g.committed);
        c.positions
            .iter()
            .any(|(p, o)| held.and_then(|h| h.get(p)) != Some(o))
    }

    /// The scenario group and topic of `name`, and the offsets it has stored (after what poll
    /// handed over, per partition): what its auto-commit timer commits.
    pub fn stored(&self, name: &str) -> Option<(String, String, BTreeMap<i32, i64>)> {
        let c = self.consumers.get(name)?;
        Some((
            c.config.group.clone(),
            c.config.topic.clone(),
            c.positions.clone(),
        ))
    }

    /// A real auto-commit timer's fire has landed: an effect when it committed anything new
    /// (librdkafka commits only stored offsets that changed).
    pub fn timer_fired(&mut self, name: &str) -> Result<Crashed, AppError> {
        let c = self.consumer(name)?;
        if let Some(t) = c.timer.as_mut() {
            t.fires_seen += 1;
        }
        let stored = c.positions.clone();
        let group = c.config.group.clone();
        let Some(g) = self.groups.get_mut(&group) else {
            return Ok(false);
        };
        let changed = stored.iter().any(|(p, o)| g.committed.get(p) != Some(o));
        if !changed {
            return Ok(false);
        }
        g.committed.extend(stored);
        self.effect(name)
    }

    /// Commits `offsets` (scenario partition → next offset) synchronously; with `only_changes`,
    /// what the group holds already is left out. An effect when anything was committed.
    pub(super) fn commit(
        &mut self,
        name: &str,
        offsets: BTreeMap<i32, i64>,
        only_changes: bool,
    ) -> Result<Crashed, AppError> {
        // Requests on one connection are answered in order: earlier async commits land first.
        if self.land_async(name, i64::MAX)? {
            return Ok(true);
        }
        let c = self.consumer(name)?;
        let (group, topic) = (c.config.group.clone(), c.cluster_topic.clone());
        let held = self
            .groups
            .get(&group)
            .map(|g| g.committed.clone())
            .unwrap_or_default();
        let wanted: BTreeMap<i32, i64> = offsets
            .into_iter()
            .filter(|(p, o)| !only_changes || held.get(p) != Some(o))
            .collect();
        if wanted.is_empty() {
            return Ok(false);
        }
        let request = Request::CommitOffsets {
            offsets: requested(&topic, &wanted),
        };
        if let Reply::CommitRefused { .. } = self.agent(name)?.ask(&request, ASK_TIMEOUT)? {
            // Fenced by the coordinator: nothing committed, and no effect (as the model's
            // refused commit).
            return Ok(false);
        }
        if let Some(g) = self.groups.get_mut(&group) {
            g.committed.extend(wanted);
        }
        self.effect(name)
    }

    /// `commitTransaction()` with the processed offsets sent to it: the transaction's output
    /// enters the group's kafka-tx sink and the audit — what a read_committed reader sees — and
    /// the offsets are committed. An effect; nothing when no transaction is open.
    pub(super) fn commit_txn(&mut self, name: &str) -> Result<Crashed, AppError> {
        let c = self.consumer(name)?;
        if c.txn.is_empty() {
            return Ok(false);
        }
        let (group, topic, consumer) = (
            c.config.group.clone(),
            c.cluster_topic.clone(),
            c.config.name.clone(),
        );
        let processed = c.processed.clone();
        let at = self.now;
        self.agent(name)?.ask(
            &Request::TxnCommit {
                offsets: requested(&topic, &processed),
            },
            ASK_TIMEOUT,
        )?;
        let writes = std::mem::take(&mut self.consumer(name)?.txn);
        if let Some(g) = self.groups.get_mut(&group) {
            for w in &writes {
                let reason = g.audit.classify(&w.tp, w.offset, w.reason);
                if let Some(sink) = g.sink.as_mut() {
                    sink.apply(&SinkWrite {
                        tp: &w.tp,
                        offset: w.offset,
                        key: &w.key,
                        value: &w.value,
                        consumer: &consumer,
                        incarnation: w.incarnation,
                        generation: 0,
                        reason,
                        at,
                    })
                    .map_err(|error| AppError::Sink {
                        group: group.clone(),
                        error,
                    })?;
                }
                g.audit.record(Delivery {
                    at,
                    tp: w.tp.clone(),
                    offset: w.offset,
                    key: String::from_utf8_lossy(&w.key).into_owned(),
                    consumer: consumer.clone(),
                    incarnation: w.incarnation,
                    reason,
                });
            }
            g.committed.extend(processed);
        }
        self.effect(name)
    }

    /// commitAsync() of the processed offsets: sent now (an effect), landing on the model's
    /// clock after the consumer's async-commit latency (another).
    pub(super) fn send_async(&mut self, name: &str, now: i64) -> Result<Crashed, AppError> {
        let c = self.consumer(name)?;
        let offsets = c.processed.clone();
        let lands_at = now.saturating_add(c.config.async_commit_latency_ms);
        let topic = c.cluster_topic.clone();
        if offsets.is_empty() {
            return Ok(false);
        }
        let request = Request::CommitOffsetsAsync {
            offsets: requested(&topic, &offsets),
        };
        self.agent(name)?.ask(&request, ASK_TIMEOUT)?;
        self.consumer(name)?.pending_async.push((lands_at, offsets));
        self.effect(name)
    }

    /// The asynchronous commits of `name` due by model time `upto` land: each an effect.
    pub fn land_async(&mut self, name: &str, upto: i64) -> Result<Crashed, AppError> {
        let c = self.consumer(name)?;
        let (due, rest): (Vec<_>, Vec<_>) = c.pending_async.drain(..).partition(|(at, _)| *at <= upto);
        c.pending_async = rest;
        let group = c.config.group.clone();
        for (_, offsets) in due {
            if let Some(g) = self.groups.get_mut(&group) {
                g.committed.extend(offsets);
            }
            if self.effect(name)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every running consumer's asynchronous commits due by model time `upto` land.
    pub fn land_all_async(&mut self, upto: i64) -> Result<(), AppError> {
        let names: Vec<String> = self
            .consumers
            .iter()
            .filter(|(_, c)| c.is_running() && !c.pending_async.is_empty())
            .map(|(n, _)| n.clone())
            .collect();
        for name in names {
            if self.consumers.get(&name).is_some_and(RealConsumer::is_running) {
                self.land_async(&name, upto)?;
            }
        }
        Ok(())
    }

    /// `commit NAME`: an explicit commitSync() of the positions (the stored offsets, for
    /// auto-timer: the same here, since it stores on hand-over).
    pub fn commit_now(&mut self, name: &str) -> Result<Crashed, AppError> {
        if self.consumer(name)?.config.is_transactional_producer() {
            return self.commit_txn(name);
        }
        let c = self.consumer(name)?;
        let offsets = match c.config.strategy.rules().explicit {
            CommitSource::Stored | CommitSource::Position => c.positions.clone(),
            CommitSource::Processed => c.processed.clone(),
        };
        self.commit(name, offsets, false)
    }

    /// Inside a poll that rejoins a rebalance with partitions held (the eager protocol): the
    /// revoke hook's commit — what the model's hook commits: the stored offsets (auto-timer)
    /// or positions (auto-poll) of what poll handed over, the processed offsets for a manual
    /// strategy with `commit-on-revoke` — sent while the member is still in its generation
    /// (Kafka takes a commit during PreparingRebalance for this hook); then every partition is
    /// given up, and with them the records polled and not processed.
    pub fn revoke_all(&mut self, name: &str) -> Result<Crashed, AppError> {
        let offsets = revoke_hook_offsets(self.consumer(name)?).cloned();
        if let Some(offsets) = offsets {
            if self.commit(name, offsets, true)? {
                return Ok(true);
            }
        }
        self.consumer(name)?.give_up_partitions();
        Ok(false)
    }

    /// Inside a poll that revokes some of the consumer's partitions and keeps the others (the
    /// consumer protocol's reconciliation): the revoke hook commits what the model's commits
    /// for `partitions` only, then they are given up with their records polled and not
    /// processed. The client's own callback gives them back to the cluster inside the poll.
    pub fn revoke_some(&mut self, name: &str, partitions: &[i32]) -> Result<Crashed, AppError> {
        let offsets: Option<BTreeMap<i32, i64>> = revoke_hook_offsets(self.consumer(name)?).map(|all| {
            all.iter()
                .filter(|(p, _)| partitions.contains(p))
                .map(|(&p, &o)| (p, o))
                .collect()
        });
        if let Some(offsets) = offsets.filter(|o| !o.is_empty()) {
            if self.commit(name, offsets, true)? {
                return Ok(true);
            }
        }
        self.consumer(name)?.give_up(partitions);
        Ok(false)
    }
}

/// What a consumer's revoke hook commits, as the model's hook does: the stored offsets
/// (auto-timer) or positions (auto-poll) of what poll handed over — the offset store and the
/// positions are one here, the store filled as poll hands records over — or the processed
/// offsets for a manual strategy with `commit-on-revoke`; `None` when it commits nothing to
/// Kafka (a transactional sink or kafka-tx application, a hook that does not commit).
fn revoke_hook_offsets(c: &RealConsumer) -> Option<&BTreeMap<i32, i64>> {
    let cfg = &c.config;
    if !cfg.commits_to_kafka() || cfg.is_transactional_producer() {
        return None;
    }
    match cfg.strategy.rules().at_revoke(cfg.commit_on_revoke)? {
        CommitSource::Stored | CommitSource::Position => Some(&c.positions),
        CommitSource::Processed => Some(&c.processed),
    }
}

/// Offsets by partition of `topic` (the cluster's name), as the agent's requests carry them.
pub(super) fn requested(topic: &str, offsets: &BTreeMap<i32, i64>) -> Vec<PartitionOffset> {
    offsets
        .iter()
        .map(|(&partition, &offset)| PartitionOffset {
            topic: topic.to_string(),
            partition,
            offset,
        })
        .collect()
}
