//! The consumer application of a run, outside the agents: what each real consumer was handed
//! and has not processed yet, the group's SQLite sink and its audit, and the commits each
//! strategy makes — the same decisions the model's application makes, taken on what the real
//! cluster handed out.
//!
//! The agent is only the Kafka client. Processing (a sink write), the strategy's commits and
//! the audit live here, so a `SIGKILL` of the agent ends exactly what a crash ends: the
//! client, its timer, its unprocessed records.

mod commits;
mod processing;

use super::agent_process::{AgentError, AgentProcess};
use super::clock::TimerPhase;
use crate::protocol::{Delivered, PartitionOffset, Reply, Request};
use crate::settings::ConsumerSettings;
use offsetlab_engine::audit::GroupAudit;
use offsetlab_engine::consumer::ConsumerConfig;
use offsetlab_engine::delivery::DeliveryReason;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::sink::{Sink, SinkError};
use offsetlab_engine::strategy::{CommitSource, CommitWhen};
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
    /// What its last poll handed out (partition, offset), in the model's batch order.
    pub last_poll: Vec<(i32, i64)>,
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

    /// Some of its partitions are revoked (the consumer protocol's reconciliation): their
    /// records polled and not processed are dropped, their positions forgotten.
    fn give_up(&mut self, partitions: &[i32]) {
        self.in_flight
            .retain(|f| !partitions.contains(&f.record.partition));
        if partitions.iter().any(|p| self.positions.contains_key(p)) {
            self.positions_moved = Some(Instant::now());
        }
        self.positions.retain(|p, _| !partitions.contains(p));
        self.processed.retain(|p, _| !partitions.contains(p));
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

/// What the model's poll did, for the real one to do the same. The default is a poll of
/// whatever the group gives, in fetch order (the explorer's drain, past the model).
#[derive(Debug, Clone, Default)]
pub struct PollPlan {
    /// The model's assignment of the consumer after its poll (see [`Request::Poll`]).
    pub assigned: Option<Vec<i32>>,
    /// The model's poll rejoins a rebalance with partitions held: its revoke hook runs first
    /// ([`Application::revoke_all`]).
    pub rejoins: bool,
    /// The partitions the model's poll revoked and the consumer keeps the others (the consumer
    /// protocol): its revoke hook commits them first ([`Application::revoke_some`]).
    pub revoked: Vec<i32>,
    /// The model's consumer was removed from its group while away (`max.poll.interval.ms`):
    /// its partitions are lost — nothing committed — and its polled records dropped, before it
    /// joins again inside this poll.
    pub lost: bool,
    /// The records the model's poll handed out (partition, offset), in order: the real batch
    /// takes as many of each partition, and is put in the model's order — which records are
    /// there, and what they hold, is the cluster's.
    pub batch: Option<Vec<(i32, i64)>>,
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
                last_poll: Vec::new(),
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

    /// Whether the fault plan will kill `name` at one of its coming effects.
    pub fn fault_armed_on(&self, name: &str) -> bool {
        self.fault
            .as_ref()
            .is_some_and(|(c, at)| c == name && *at > self.effects_of(name))
    }

    fn agent(&mut self, name: &str) -> Result<&mut AgentProcess, AppError> {
        self.consumer(name)?
            .agent
            .as_mut()
            .ok_or_else(|| AppError::Other(format!("consumer {name} is not running")))
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
