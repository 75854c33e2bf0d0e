//! The consumer application of a run, outside the agents: what each real consumer was handed
//! and has not processed yet, the group's SQLite sink and its audit, and the commits each
//! strategy makes — the same decisions the model's application makes, taken on what the real
//! cluster handed out.
//!
//! The agent is only the Kafka client. Processing (a sink write), the strategy's commits and
//! the audit live here, so a `SIGKILL` of the agent ends exactly what a crash ends: the
//! client, its timer, its unprocessed records.

use super::agent_process::{AgentError, AgentProcess};
use super::clock::TimerPhase;
use crate::protocol::{Delivered, PartitionOffset, Reply, Request};
use crate::settings::ConsumerSettings;
use offsetlab_engine::audit::{Delivery, GroupAudit};
use offsetlab_engine::consumer::ConsumerConfig;
use offsetlab_engine::delivery::DeliveryReason;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::sink::{Sink, SinkError, SinkWrite, WriteOutcome};
use offsetlab_engine::strategy::{CommitCall, CommitSource, CommitWhen};
use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::time::{Duration, Instant};

/// How long a poll waits for a first record: a group's first join, or a restarted consumer
/// waiting out its dead incarnation's session.
pub const POLL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long any other request to an agent may take.
pub const ASK_TIMEOUT: Duration = Duration::from_secs(30);

#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error(transparent)]
    Agent(#[from] AgentError),
    #[error("the sink of group {group:?}: {error}")]
    Sink { group: String, error: SinkError },
    #[error("{0}")]
    Other(String),
}

/// A record handed to the application and not processed yet.
#[derive(Debug, Clone)]
struct InFlight {
    record: Delivered,
    last_of_batch: bool,
}

/// A scenario consumer running (or not) on the cluster.
pub struct RealConsumer {
    pub config: ConsumerConfig,
    /// Its topic's name on the cluster.
    cluster_topic: String,
    agent: Option<AgentProcess>,
    pub incarnation: u32,
    pub state: &'static str,
    in_flight: VecDeque<InFlight>,
    /// Per partition: what a record read again from this incarnation's start is (why the
    /// partition came to it).
    repeat: BTreeMap<i32, DeliveryReason>,
    /// Per partition, the next offset after what poll handed out / what was processed.
    positions: BTreeMap<i32, i64>,
    processed: BTreeMap<i32, i64>,
    /// When `positions` last changed (a poll handed records over, a seek, partitions given
    /// up): an auto-commit timer that fired before then may have committed older ones.
    pub positions_moved: Option<Instant>,
    /// auto-poll: when the Java client's next commit inside `poll()` is due (model time).
    next_poll_commit: Option<i64>,
    pub timer: Option<TimerPhase>,
    /// commitAsync() calls sent and, on the model's clock, not landed yet: when each lands
    /// (`async-commit-latency` after it was sent) and what it commits.
    pending_async: Vec<(i64, BTreeMap<i32, i64>)>,
    /// `sink=kafka-tx`: the output topic's name on the cluster, and what the open transaction
    /// carries (it enters the sink and the audit when the transaction commits).
    output: Option<String>,
    txn: Vec<TxnWrite>,
}

/// A record processed into an open transaction.
#[derive(Debug, Clone)]
struct TxnWrite {
    tp: TopicPartition,
    offset: i64,
    key: Vec<u8>,
    value: Vec<u8>,
    incarnation: u32,
    reason: DeliveryReason,
}

impl RealConsumer {
    pub fn in_flight(&self) -> usize {
        self.in_flight.len()
    }

    /// The records handed out and not processed yet.
    pub fn in_flight_records(&self) -> impl Iterator<Item = &Delivered> {
        self.in_flight.iter().map(|f| &f.record)
    }

    pub fn position(&self, partition: i32) -> Option<i64> {
        self.positions.get(&partition).copied()
    }

    pub fn is_running(&self) -> bool {
        self.agent.is_some()
    }

    /// Its partitions are gone (revoked in a rebalance, or lost): the records it polled and
    /// did not process with them, and its positions — the next assignment sets them afresh.
    fn give_up_partitions(&mut self) {
        self.in_flight.clear();
        if !self.positions.is_empty() {
            self.positions_moved = Some(Instant::now());
        }
        self.positions.clear();
        self.processed.clear();
    }
}

/// A scenario group's application state.
pub struct RealGroup {
    /// Opened when the group's first consumer starts (an admin's reset may come before).
    pub sink: Option<Box<dyn Sink>>,
    pub audit: GroupAudit,
    /// Why each partition last changed hands, and from whom.
    handoffs: BTreeMap<i32, (DeliveryReason, Option<String>)>,
    /// The last offsets the application (or an admin's reset) committed, per partition.
    committed: BTreeMap<i32, i64>,
}

impl RealGroup {
    pub fn new(sink: Option<Box<dyn Sink>>) -> Self {
        Self {
            sink,
            audit: GroupAudit::default(),
            handoffs: BTreeMap::new(),
            committed: BTreeMap::new(),
        }
    }

    /// An admin's reset landed: what the group reads again is a deliberate replay, and what it
    /// jumps over forward is skipped on purpose.
    pub fn reset(&mut self, topic: &str, rows: &[ResetRow]) {
        for &ResetRow {
            partition: p,
            current,
            target,
            log,
        } in rows
        {
            self.handoffs.insert(p, (DeliveryReason::Replay, None));
            self.committed.insert(p, target);
            if (log.0..=log.1).contains(&target) {
                if let Some(c) = current {
                    let tp = TopicPartition::new(topic, p);
                    self.audit.mark_skipped(&tp, c.clamp(log.0, log.1), target);
                }
            }
        }
    }
}

/// One partition of an executed offset reset: where the group was, where it goes, and the
/// partition's log start and end at that moment.
#[derive(Debug, Clone, Copy)]
pub struct ResetRow {
    pub partition: i32,
    pub current: Option<i64>,
    pub target: i64,
    pub log: (i64, i64),
}

/// One partition of a seek: from the position the consumer had to the one it jumps to, and the
/// partition's log start and end at that moment.
#[derive(Debug, Clone, Copy)]
pub struct Move {
    pub partition: i32,
    pub from: i64,
    pub to: i64,
    pub log: (i64, i64),
}

/// Offsets by partition of `topic` (the cluster's name), as the agent's requests carry them.
fn requested(topic: &str, offsets: &BTreeMap<i32, i64>) -> Vec<PartitionOffset> {
    offsets
        .iter()
        .map(|(&partition, &offset)| PartitionOffset {
            topic: topic.to_string(),
            partition,
            offset,
        })
        .collect()
}

/// What the model's poll did, for the real one to do the same. The default is a poll of
/// whatever the group gives, in fetch order (the explorer's drain, past the model).
#[derive(Debug, Clone, Default)]
pub struct PollPlan {
    /// The model's assignment of the consumer after its poll (see [`Request::Poll`]).
    pub assigned: Option<Vec<i32>>,
    /// The model's poll rejoins a rebalance with partitions held: its revoke hook runs first
    /// ([`Application::revoke_all`]).
    pub rejoins: bool,
    /// The model's consumer was removed from its group while away (`max.poll.interval.ms`):
    /// its partitions are lost — nothing committed — and its polled records dropped, before it
    /// joins again inside this poll.
    pub lost: bool,
    /// The records the model's poll handed out (partition, offset), in order: the real batch
    /// takes as many of each partition, and is put in the model's order — which records are
    /// there, and what they hold, is the cluster's.
    pub batch: Option<Vec<(i32, i64)>>,
}

/// How many records of each partition a batch of (partition, offset) has.
fn shares(batch: &[(i32, i64)]) -> Vec<(i32, usize)> {
    let mut n: BTreeMap<i32, usize> = BTreeMap::new();
    for &(p, _) in batch {
        *n.entry(p).or_default() += 1;
    }
    n.into_iter().collect()
}

/// Whether the consumer was killed by its fault plan during an action.
pub type Crashed = bool;

/// The application of every consumer of a run.
pub struct Application {
    pub consumers: BTreeMap<String, RealConsumer>,
    pub groups: BTreeMap<String, RealGroup>,
    /// Observable effects per consumer name, across its incarnations (as the model counts).
    effects: BTreeMap<String, u64>,
    /// The one fault plan (a new `fault` line replaces it): this consumer dies right after
    /// this effect.
    fault: Option<(String, u64)>,
    /// The model time of the last poll or process: when a commit at close is stamped.
    now: i64,
}

impl Application {
    pub fn new() -> Self {
        Self {
            consumers: BTreeMap::new(),
            groups: BTreeMap::new(),
            effects: BTreeMap::new(),
            fault: None,
            now: 0,
        }
    }

    fn consumer(&mut self, name: &str) -> Result<&mut RealConsumer, AppError> {
        self.consumers
            .get_mut(name)
            .ok_or_else(|| AppError::Other(format!("no consumer {name:?} on the cluster")))
    }

    /// Starts (or restarts) `config`'s consumer as a new agent process, at model time `now`.
    /// A client that stops as it is given its partitions (`reset=none` with no offset to start
    /// from) is stopped here when `fail_at_start` (the model's consumer failed as it joined);
    /// otherwise it runs on, and its first poll says it stopped (the model's fails there too).
    #[allow(clippy::too_many_arguments)]
    pub fn start(
        &mut self,
        config: &ConsumerConfig,
        settings: &ConsumerSettings,
        program: &Path,
        partitions: i32,
        now: i64,
        fail_at_start: bool,
        sink: impl FnOnce() -> Result<Box<dyn Sink>, SinkError>,
    ) -> Result<(), AppError> {
        let g = self
            .groups
            .entry(config.group.clone())
            .or_insert_with(|| RealGroup::new(None));
        if g.sink.is_none() {
            g.sink = Some(sink().map_err(|error| AppError::Sink {
                group: config.group.clone(),
                error,
            })?);
        }
        let incarnation = self.consumers.get(&config.name).map_or(1, |c| c.incarnation + 1);
        let group = self.groups.get(&config.group);
        let repeat = (0..partitions)
            .map(|p| {
                let reason = match group.and_then(|g| g.handoffs.get(&p)) {
                    Some((DeliveryReason::RestartRedelivery, Some(from))) if from != &config.name => {
                        DeliveryReason::RebalanceRedelivery
                    }
                    Some((reason, _)) => *reason,
                    None => DeliveryReason::RestartRedelivery,
                };
                (p, reason)
            })
            .collect();
        let output = settings.output_topic.clone();
        let mut settings = settings.clone();
        if settings.offsets_in_sink {
            // A transactional sink's consumer starts where its sink says.
            let topic = TopicPartition::new(config.topic.clone(), 0);
            if let Some(sink) = self.groups.get(&config.group).and_then(|g| g.sink.as_ref()) {
                for p in 0..partitions {
                    let tp = TopicPartition {
                        partition: p,
                        ..topic.clone()
                    };
                    if let Some(o) = sink.stored_offset(&tp).map_err(|error| AppError::Sink {
                        group: config.group.clone(),
                        error,
                    })? {
                        settings.start_offsets.push((p, o));
                    }
                }
            }
        }
        let agent = AgentProcess::start(program, &config.name, &settings, ASK_TIMEOUT)?;
        let stopped = agent.stopped.clone();
        let commits = config.commits_to_kafka();
        let rules = config.strategy.rules();
        let timer = (rules.when == CommitWhen::Timer && commits).then_some(TimerPhase {
            low: agent
                .created
                .checked_sub(super::agent_process::CREATED_SLACK)
                .unwrap_or(agent.created)
                .max(agent.started),
            high: agent.created + super::agent_process::CREATED_SLACK,
            interval_ms: config.auto_commit_interval_ms,
            model_origin: now,
            fires_seen: 0,
            ahead: 0,
        });
        self.consumers.insert(
            config.name.clone(),
            RealConsumer {
                config: config.clone(),
                cluster_topic: settings.topic.clone(),
                agent: Some(agent),
                incarnation,
                state: "running",
                in_flight: VecDeque::new(),
                repeat,
                positions: BTreeMap::new(),
                processed: BTreeMap::new(),
                positions_moved: None,
                next_poll_commit: (rules.when == CommitWhen::InsidePoll && commits)
                    .then(|| now.saturating_add(config.auto_commit_interval_ms)),
                timer,
                pending_async: Vec::new(),
                output: output.clone(),
                txn: Vec::new(),
            },
        );
        if stopped.is_some() && fail_at_start {
            self.stop(&config.name)?;
        }
        Ok(())
    }

    /// The client stopped on an error (`reset=none` with no offset to start from): the
    /// application stops and closes it — a LeaveGroup, no commit.
    fn stop(&mut self, name: &str) -> Result<(), AppError> {
        let c = self.consumer(name)?;
        c.state = "failed";
        c.in_flight.clear();
        c.timer = None;
        if let Some(agent) = c.agent.take() {
            agent.close(ASK_TIMEOUT)?;
        }
        Ok(())
    }

    /// `fault NAME after=N`: the consumer dies right after its N-th effect from now.
    pub fn arm_fault(&mut self, name: &str, after: u64) -> Result<(), AppError> {
        self.consumer(name)?;
        self.fault = Some((name.to_string(), self.effects_of(name) + after));
        Ok(())
    }

    /// Observable effects of `name` so far, over all its incarnations.
    pub fn effects_of(&self, name: &str) -> u64 {
        self.effects.get(name).copied().unwrap_or(0)
    }

    /// Counts one effect; kills the consumer if the fault plan says so.
    fn effect(&mut self, name: &str) -> Result<Crashed, AppError> {
        let n = self.effects.entry(name.to_string()).or_default();
        *n += 1;
        let n = *n;
        if self.fault.as_ref().is_some_and(|(c, at)| c == name && *at == n) {
            self.crash(name)?;
            return Ok(true);
        }
        Ok(false)
    }

    /// `kill -9`.
    pub fn crash(&mut self, name: &str) -> Result<(), AppError> {
        let c = self.consumer(name)?;
        if let Some(agent) = c.agent.take() {
            agent.kill();
        }
        c.state = "crashed";
        c.in_flight.clear();
        c.pending_async.clear();
        // Its open transaction is left for the next incarnation (or the coordinator) to abort.
        c.txn.clear();
        c.timer = None;
        let (group, from) = (c.config.group.clone(), c.config.name.clone());
        let partitions: Vec<i32> = c.repeat.keys().copied().collect();
        if let Some(g) = self.groups.get_mut(&group) {
            for p in partitions {
                g.handoffs
                    .insert(p, (DeliveryReason::CrashRedelivery, Some(from.clone())));
            }
        }
        Ok(())
    }

    /// `close()`: the strategy's close-time commit — the client's own final auto-commit of
    /// stored offsets, the Java client's of positions, an application's commitSync of what it
    /// processed (each only what changed, an effect) — then the client's LeaveGroup.
    pub fn close(&mut self, name: &str) -> Result<Crashed, AppError> {
        let c = self.consumer(name)?;
        let (on_close, commits) = (c.config.strategy.rules().on_close, c.config.commits_to_kafka());
        let (positions, processed) = (c.positions.clone(), c.processed.clone());
        let group = c.config.group.clone();
        if c.config.is_transactional_producer() && c.agent.is_some() {
            if self.commit_txn(name)? {
                return Ok(true);
            }
        } else if commits && c.agent.is_some() {
            let crashed = match on_close {
                Some(CommitSource::Stored) => {
                    // librdkafka commits its stored offsets itself as it closes.
                    let held = self
                        .groups
                        .get(&group)
                        .map(|g| g.committed.clone())
                        .unwrap_or_default();
                    let changed = positions.iter().any(|(p, o)| held.get(p) != Some(o));
                    changed && self.effect(name)?
                }
                Some(CommitSource::Position) => self.commit(name, positions, true)?,
                Some(CommitSource::Processed) => self.commit(name, processed, true)?,
                None => false,
            };
            if crashed {
                return Ok(true);
            }
        }
        let c = self.consumer(name)?;
        let agent = c.agent.take();
        c.state = "closed";
        c.in_flight.clear();
        c.timer = None;
        let (group, from) = (c.config.group.clone(), c.config.name.clone());
        let partitions: Vec<i32> = c.repeat.keys().copied().collect();
        let stored = c.positions.clone();
        // The client's own close committed its offset store (what poll handed over).
        let auto = c.config.strategy.rules().on_close == Some(CommitSource::Stored);
        if let Some(g) = self.groups.get_mut(&group) {
            for p in partitions {
                g.handoffs
                    .insert(p, (DeliveryReason::RestartRedelivery, Some(from.clone())));
            }
            if auto {
                g.committed.extend(stored);
            }
        }
        if let Some(agent) = agent {
            agent.close(ASK_TIMEOUT)?;
        }
        Ok(false)
    }

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

    /// Whether the fault plan will kill `name` at one of its coming effects.
    pub fn fault_armed_on(&self, name: &str) -> bool {
        self.fault
            .as_ref()
            .is_some_and(|(c, at)| c == name && *at > self.effects_of(name))
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

    fn agent(&mut self, name: &str) -> Result<&mut AgentProcess, AppError> {
        self.consumer(name)?
            .agent
            .as_mut()
            .ok_or_else(|| AppError::Other(format!("consumer {name} is not running")))
    }

    /// Commits `offsets` (scenario partition → next offset) synchronously; with `only_changes`,
    /// what the group holds already is left out. An effect when anything was committed.
    fn commit(
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
    fn commit_txn(&mut self, name: &str) -> Result<Crashed, AppError> {
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
    fn send_async(&mut self, name: &str, now: i64) -> Result<Crashed, AppError> {
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

    /// `poll NAME` at model time `now`, as `plan` says the model's went: how many records the
    /// cluster handed over.
    pub fn poll(&mut self, name: &str, now: i64, plan: PollPlan) -> Result<(usize, Crashed), AppError> {
        let PollPlan {
            assigned,
            rejoins,
            lost,
            batch,
        } = plan;
        if rejoins && self.revoke_all(name)? {
            return Ok((0, true));
        }
        if lost {
            let c = self.consumer(name)?;
            c.give_up_partitions();
            c.pending_async.clear();
        }
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

    /// Inside a poll that rejoins a rebalance with partitions held (the eager protocol): the
    /// revoke hook's commit — what the model's hook commits: the stored offsets (auto-timer)
    /// or positions (auto-poll) of what poll handed over, the processed offsets for a manual
    /// strategy with `commit-on-revoke` — sent while the member is still in its generation
    /// (Kafka takes a commit during PreparingRebalance for this hook); then every partition is
    /// given up, and with them the records polled and not processed.
    pub fn revoke_all(&mut self, name: &str) -> Result<Crashed, AppError> {
        let c = self.consumer(name)?;
        let cfg = &c.config;
        let offsets = if !cfg.commits_to_kafka() || cfg.is_transactional_producer() {
            None
        } else {
            // The offset store and the positions are one here: the store is filled as poll
            // hands records over.
            match cfg.strategy.rules().at_revoke(cfg.commit_on_revoke) {
                Some(CommitSource::Stored | CommitSource::Position) => Some(c.positions.clone()),
                Some(CommitSource::Processed) => Some(c.processed.clone()),
                None => None,
            }
        };
        if let Some(offsets) = offsets {
            if self.commit(name, offsets, true)? {
                return Ok(true);
            }
        }
        self.consumer(name)?.give_up_partitions();
        Ok(false)
    }

    /// A transactional sink's next offset of each of `partitions`: where one the group gives
    /// the consumer in this poll starts (empty for a consumer whose offsets are Kafka's).
    fn sink_starts(&mut self, name: &str, partitions: Option<&[i32]>) -> Result<Vec<(i32, i64)>, AppError> {
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
            let cfg = c.config.clone();
            let incarnation = c.incarnation;
            let r = &item.record;
            let repeat = c
                .repeat
                .get(&r.partition)
                .copied()
                .unwrap_or(DeliveryReason::RestartRedelivery);
            let tp = TopicPartition::new(cfg.topic.clone(), r.partition);
            self.now = now;
            if cfg.is_transactional_producer() {
                // Read-process-write: the output goes into the open transaction; the audit and
                // the sink see it when the transaction commits.
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
                    tp: tp.clone(),
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
                done += 1;
                if self.effect(name)? {
                    return Ok((done, true));
                }
                if cfg.strategy.rules().commits_after_record(item.last_of_batch) && self.commit_txn(name)? {
                    return Ok((done, true));
                }
                continue;
            }
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
                done += 1;
                if self.effect(name)? {
                    return Ok((done, true));
                }
                continue;
            }
            if let Some(c) = self.consumers.get_mut(name) {
                c.processed.insert(r.partition, r.offset + 1);
            }
            let Some(g) = self.groups.get_mut(&cfg.group) else {
                continue;
            };
            g.audit.record(Delivery {
                at: now,
                tp: tp.clone(),
                offset: r.offset,
                key: String::from_utf8_lossy(key).into_owned(),
                consumer: cfg.name.clone(),
                incarnation,
                reason,
            });
            done += 1;
            if self.effect(name)? {
                return Ok((done, true));
            }
            let rules = cfg.strategy.rules();
            let crashed = match rules.call {
                _ if !cfg.commits_to_kafka() || !rules.commits_after_record(item.last_of_batch) => false,
                CommitCall::Sync if rules.when == CommitWhen::AfterEachRecord => {
                    self.commit(name, BTreeMap::from([(r.partition, r.offset + 1)]), false)?
                }
                CommitCall::Sync => {
                    let processed = self.consumer(name)?.processed.clone();
                    self.commit(name, processed, false)?
                }
                CommitCall::Async => self.send_async(name, now)?,
            };
            if crashed {
                return Ok((done, true));
            }
        }
        Ok((done, false))
    }
}

impl Application {
    /// `seek NAME …`: the real consumer's positions move; what it reads again is a deliberate
    /// replay, what it jumps over forward is skipped on purpose (as the model's audit says),
    /// and nothing is committed.
    pub fn seek(&mut self, name: &str, moves: &[Move]) -> Result<(), AppError> {
        let c = self.consumer(name)?;
        let topic = c.cluster_topic.clone();
        let wanted: Vec<PartitionOffset> = moves
            .iter()
            .map(|m| PartitionOffset {
                topic: topic.clone(),
                partition: m.partition,
                offset: m.to,
            })
            .collect();
        match self
            .agent(name)?
            .ask(&Request::Seek { offsets: wanted }, ASK_TIMEOUT)?
        {
            Reply::Sought { .. } => {}
            Reply::Failed { message } => return Err(AppError::Other(format!("{name}'s seek: {message}"))),
            other => return Err(AppError::Other(format!("{name}'s seek answered {other:?}"))),
        }
        let c = self.consumer(name)?;
        let scenario_topic = c.config.topic.clone();
        let group = c.config.group.clone();
        for m in moves {
            c.positions.insert(m.partition, m.to);
            c.positions_moved = Some(Instant::now());
            c.repeat.insert(m.partition, DeliveryReason::Replay);
        }
        if let Some(g) = self.groups.get_mut(&group) {
            for m in moves {
                let tp = TopicPartition::new(scenario_topic.clone(), m.partition);
                g.audit.mark_skipped(&tp, m.from.max(m.log.0), m.to);
            }
        }
        Ok(())
    }

    /// `reset-offsets … execute` landed for `group` (before or after its consumers started).
    pub fn reset_group(&mut self, group: &str, topic: &str, rows: &[ResetRow]) {
        self.groups
            .entry(group.to_string())
            .or_insert_with(|| RealGroup::new(None))
            .reset(topic, rows);
    }

    /// Where a running consumer of `group` will deliver `tp` from next (its lowest record in
    /// flight, or its position): records below the committed offset it is about to deliver
    /// are not lost.
    pub fn live_next(&self, group: &str, tp: &TopicPartition) -> Option<i64> {
        self.consumers
            .values()
            .filter(|c| c.is_running() && c.config.group == group && c.config.topic == tp.topic)
            .find_map(|c| {
                let in_flight = c
                    .in_flight
                    .iter()
                    .filter(|f| f.record.partition == tp.partition)
                    .map(|f| f.record.offset)
                    .min();
                [c.position(tp.partition), in_flight].into_iter().flatten().min()
            })
    }
}

impl Default for Application {
    fn default() -> Self {
        Self::new()
    }
}
