//! Share groups (KIP-932) on a cluster: each `share-consumer` is a real share consumer —
//! librdkafka's, through confluent-kafka's `ShareConsumer` (2.16+), the only share consumer
//! librdkafka has a binding for — in a process of its own ([`SHARE_AGENT`], run with
//! [`python`]), so that `crash` is a `SIGKILL`.
//!
//! | line | on the cluster |
//! |---|---|
//! | `alter-share-group` | IncrementalAlterConfigs on the GROUP resource |
//! | `share-consumer`, `restart` | a new share agent: `subscribe()` |
//! | `share-poll` | one `poll()` that hands out records; what it handed out (offsets, delivery counts) must be what the model's poll acquired |
//! | `process` | the application applies the records, in the order they were handed out |
//! | `share-ack` | `acknowledge(record, type)` of each, then `commitSync()`: the broker must accept them |
//! | `crash`, `close` | `SIGKILL` of the agent; `close()` |
//! | `expect share-group=…` | the group's window as the cluster showed it (below) |
//!
//! Kafka shows no outside reader a share partition's records. The run keeps each group's
//! window from the cluster's own answers — what each member was handed and with which
//! delivery count, which acknowledgements the broker accepted, whose connection ended, whose
//! acquisition lock ran out ([`ShareGroup::handed_out`] and the rest) — and computes its
//! figures as the model's are computed ([`share_figure`]). What makes them the cluster's is
//! that every later poll checks them: a record the window says is available must be handed out
//! again, with the next delivery count, and one it says is held must not be.

use super::error::LineFailure;
use super::{interrupted, ClusterRun};
use crate::protocol::{Reply, Request, ShareAck as AckRequest, ShareDelivered};
use crate::run::agent_process::AgentProcess;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::share::{AcknowledgeType, AcknowledgementMode, ShareGroup, ShareGroupConfig};
use offsetlab_scenario::command::{share_figure, AlterShareGroup, Expect, ShareAck};
use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;
use std::time::{Duration, Instant};

mod agent;
mod figures;
pub use agent::{python, python_cannot_run_share_agents, SHARE_AGENT};
use agent::{run_admin, ShareSettings};
pub use figures::{share_differences, ShareGroupFigures};

/// How long a share poll waits for the records the model's poll acquired (a first join, a
/// released record coming back) before it hands out what it has.
const SHARE_POLL_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a share poll that the model says acquires nothing polls, for anything the broker
/// would hand out to come.
const SHARE_POLL_SETTLE: Duration = Duration::from_millis(1500);
/// Time for a broker to act on an acquisition lock that ran out before a line after it runs.
const LOCK_MARGIN: Duration = Duration::from_millis(750);
/// Time for a broker to notice a killed share consumer's connections closed and release what
/// it held (the model does it at the kill's instant). On Apache Kafka 4.4 a poll right after
/// the kill was handed other records; within half a second the released ones came back.
const CONNECTION_CLOSE_MARGIN: Duration = Duration::from_millis(1500);
/// A lock runs from the broker's acquisition, a moment before the agent has the record: the
/// window lets a record go this much before its lock's end as the agent saw it.
const HAND_OUT_SLACK_MS: i64 = 1000;

/// One record a real share consumer holds: handed out by a poll, not acknowledged yet.
#[derive(Debug, Clone)]
struct Held {
    tp: TopicPartition,
    offset: i64,
    processed: bool,
}

/// A share consumer of the scenario, for real.
pub struct RealShareConsumer {
    agent: Option<AgentProcess>,
    group: String,
    topic: String,
    member: String,
    mode: AcknowledgementMode,
    held: Vec<Held>,
}

/// The run's share consumers and each share group's window as the cluster showed it.
pub struct ShareApp {
    consumers: BTreeMap<String, RealShareConsumer>,
    /// By the scenario's group name.
    pub groups: BTreeMap<String, ShareGroup>,
    /// Wall time the windows' locks are counted from.
    origin: Instant,
    /// No line runs before this: a killed member's connections are being closed.
    settle_until: Option<Instant>,
}

impl Default for ShareApp {
    fn default() -> Self {
        Self {
            consumers: BTreeMap::new(),
            groups: BTreeMap::new(),
            origin: Instant::now(),
            settle_until: None,
        }
    }
}

impl ShareApp {
    fn now_ms(&self) -> i64 {
        i64::try_from(self.origin.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    /// The wall instant of a lock's expiry (ms on this app's clock).
    fn instant(&self, ms: i64) -> Instant {
        self.origin + Duration::from_millis(u64::try_from(ms.max(0)).unwrap_or(0))
    }

    pub fn is_running(&self, name: &str) -> bool {
        self.consumers.get(name).is_some_and(|c| c.agent.is_some())
    }

    pub fn running(&self) -> Vec<String> {
        self.consumers
            .iter()
            .filter(|(_, c)| c.agent.is_some())
            .map(|(n, _)| n.clone())
            .collect()
    }

    fn group_mut(&mut self, group: &str, config: ShareGroupConfig) -> &mut ShareGroup {
        let g = self
            .groups
            .entry(group.to_string())
            .or_insert_with(|| ShareGroup::new(group, config.clone()));
        g.config = config;
        g
    }
}

fn ack_name(ack: AcknowledgeType) -> &'static str {
    match ack {
        AcknowledgeType::Accept => "accept",
        AcknowledgeType::Release => "release",
        AcknowledgeType::Reject => "reject",
    }
}

impl ClusterRun {
    fn agent_timeout(&self) -> Duration {
        self.opts.timeout + SHARE_POLL_TIMEOUT
    }

    /// The model's configs of share group `group` (the run sets the same on the cluster).
    fn model_share_config(&self, group: &str) -> ShareGroupConfig {
        self.model
            .lab
            .share_group(group)
            .map(|g| g.config.clone())
            .unwrap_or_default()
    }

    /// `alter-share-group G …`: the group's configs on the cluster (IncrementalAlterConfigs),
    /// by a share agent in its admin mode.
    pub(super) fn alter_share_group(&mut self, a: &AlterShareGroup) -> Result<String, LineFailure> {
        let configs: Vec<(String, String)> = a
            .change
            .kafka_configs()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let group = self.opts.prefix.on_cluster(&a.group);
        self.groups.insert(group.clone());
        let settings = ShareSettings {
            mode: "alter-configs",
            bootstrap_servers: &self.opts.bootstrap,
            group: group.clone(),
            topic: None,
            client_id: None,
            acknowledgement_mode: None,
            max_poll_records: None,
            configs: configs.clone(),
            extra: &self.opts.extra,
        };
        let json = serde_json::to_string(&settings).map_err(|e| LineFailure::Other(e.to_string()))?;
        run_admin(&json)
            .map_err(|why| LineFailure::Other(format!("setting group {group}'s configs: {why}")))?;
        let config = self.model_share_config(&a.group);
        self.shares.group_mut(&a.group, config);
        let said: Vec<String> = configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
        Ok(format!("group {group}'s configs set: {}", said.join(" ")))
    }

    /// `share-consumer NAME …` or `restart NAME` of a share consumer: a new share agent.
    pub(super) fn start_share(&mut self, name: &str) -> Result<String, LineFailure> {
        let model = self
            .model
            .lab
            .share_consumer(name)
            .map_err(|e| LineFailure::Other(e.to_string()))?;
        let (config, member) = (model.config.clone(), model.member_id());
        let group = self.opts.prefix.on_cluster(&config.group);
        let topic = self.opts.prefix.on_cluster(&config.topic);
        self.groups.insert(group.clone());
        let settings = ShareSettings {
            mode: "consumer",
            bootstrap_servers: &self.opts.bootstrap,
            group: group.clone(),
            topic: Some(topic),
            client_id: Some(self.opts.prefix.on_cluster(name)),
            acknowledgement_mode: Some(config.acknowledgement_mode.to_string()),
            max_poll_records: Some(config.max_poll_records),
            configs: Vec::new(),
            extra: &self.opts.extra,
        };
        let json = serde_json::to_string(&settings).map_err(|e| LineFailure::Other(e.to_string()))?;
        let mut command = Command::new(python());
        command.args(["-c", SHARE_AGENT]);
        let agent = AgentProcess::spawn(command, name, &json, self.agent_timeout())
            .map_err(|e| LineFailure::Other(e.to_string()))?;
        let group_config = self.model_share_config(&config.group);
        self.shares.group_mut(&config.group, group_config);
        self.shares.consumers.insert(
            name.to_string(),
            RealShareConsumer {
                agent: Some(agent),
                group: config.group.clone(),
                topic: config.topic.clone(),
                member: member.clone(),
                mode: config.acknowledgement_mode,
                held: Vec::new(),
            },
        );
        Ok(format!(
            "{member} subscribed to {} in share group {group}",
            config.topic
        ))
    }

    /// `share-poll NAME`: one real `poll()`; what it handed out must be what the model's poll
    /// acquired — the same offsets, each with the same delivery count.
    pub(super) fn share_poll(&mut self, name: &str) -> Result<String, LineFailure> {
        let model = self
            .model
            .lab
            .share_consumer(name)
            .map_err(|e| LineFailure::Other(e.to_string()))?;
        let polled: BTreeSet<(TopicPartition, i64)> = model.last_poll.iter().cloned().collect();
        let mut wanted: Vec<(i32, i64, u16)> = model
            .held
            .iter()
            .filter(|h| polled.contains(&(h.tp.clone(), h.offset)))
            .map(|h| (h.tp.partition, h.offset, h.delivery_count))
            .collect();
        wanted.sort_unstable();
        let timeout = self.agent_timeout();
        let c = self.running_share(name)?;
        let request = Request::SharePoll {
            want: wanted.len(),
            timeout_ms: u64::try_from(SHARE_POLL_TIMEOUT.as_millis()).unwrap_or(u64::MAX),
            settle_ms: u64::try_from(SHARE_POLL_SETTLE.as_millis()).unwrap_or(u64::MAX),
        };
        let reply = c
            .agent
            .as_mut()
            .ok_or_else(|| LineFailure::Other(format!("{name} is not running")))?
            .ask(&request, timeout)
            .map_err(|e| LineFailure::Other(e.to_string()))?;
        let Reply::ShareRecords { records } = reply else {
            return Err(LineFailure::Other(format!(
                "{name}'s agent answered {reply:?} to a poll"
            )));
        };
        let (group, topic, member, mode) = (c.group.clone(), c.topic.clone(), c.member.clone(), c.mode);
        // Locks that ran out by now (give or take the moment between the broker's acquisition
        // and the agent's receipt) are the broker's to hand out again.
        let now = self.shares.now_ms();
        if let Some(g) = self.shares.groups.get_mut(&group) {
            g.expire_locks(now.saturating_add(HAND_OUT_SLACK_MS));
        }
        let before: Vec<Held> = std::mem::take(&mut self.share_consumer_mut(name)?.held);
        let still: Vec<Held> = before
            .into_iter()
            .filter(|h| self.holds(&group, &member, h))
            .collect();
        match mode {
            // This poll acknowledged the previous one's records (accepted) — those whose lock
            // had not run out: the model's poll accepts the same.
            AcknowledgementMode::Implicit => {
                self.acknowledged(&group, &member, &still, AcknowledgeType::Accept)?;
            }
            // Records whose lock ran out are no longer the consumer's (the model's poll drops
            // them too).
            AcknowledgementMode::Explicit => self.share_consumer_mut(name)?.held = still,
        }
        self.check_share_records(&topic, &records)?;
        self.check_hand_outs(&group, &topic, &records)?;
        let mut got: Vec<(i32, i64, u16)> = records
            .iter()
            .map(|r| (r.partition, r.offset, r.delivery_count))
            .collect();
        got.sort_unstable();
        let start = self.share_start(&group, &topic, &records);
        self.start_model_partitions(&group, &topic)?;
        let mut counted = Vec::new();
        if let Some(g) = self.shares.groups.get_mut(&group) {
            for r in &records {
                let tp = TopicPartition::new(topic.clone(), r.partition);
                let at = start.get(&r.partition).copied().unwrap_or(r.offset);
                counted.push((
                    r.offset,
                    g.handed_out(&tp, r.offset, &member, now, at),
                    r.delivery_count,
                ));
            }
        }
        let c = self.share_consumer_mut(name)?;
        c.held.extend(records.iter().map(|r| Held {
            tp: TopicPartition::new(topic.clone(), r.partition),
            offset: r.offset,
            processed: false,
        }));
        if got != wanted {
            let show = |v: &[(i32, i64, u16)]| {
                v.iter()
                    .map(|(p, o, d)| format!("{topic}-{p}@{o} (delivery {d})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            return Err(LineFailure::Other(format!(
                "the cluster handed {name} [{}] where the model's poll acquired [{}]",
                show(&got),
                show(&wanted)
            )));
        }
        if let Some((o, ours, theirs)) = counted.iter().find(|(_, ours, theirs)| ours != theirs) {
            return Err(LineFailure::Other(format!(
                "the broker gave {topic}@{o} delivery count {theirs}, where what it handed out before makes it {ours}"
            )));
        }
        Ok(format!(
            "the cluster handed {} record(s) to {member}",
            records.len()
        ))
    }

    /// Whether the window kept from the cluster's answers says `member` still holds `h`.
    fn holds(&self, group: &str, member: &str, h: &Held) -> bool {
        self.shares
            .groups
            .get(group)
            .and_then(|g| g.partitions.get(&h.tp))
            .and_then(|p| p.record(h.offset))
            .is_some_and(|r| {
                r.state == offsetlab_engine::share::DeliveryState::Acquired
                    && r.lock.as_ref().is_some_and(|l| l.member == member)
            })
    }

    /// Every record the cluster handed out is one its earlier answers leave free to hand out:
    /// never delivered, or Available again — not held by a member whose lock still runs, nor
    /// acknowledged or archived. Otherwise the window and the cluster disagree, and the run
    /// says so at this line.
    fn check_hand_outs(
        &self,
        group: &str,
        topic: &str,
        records: &[ShareDelivered],
    ) -> Result<(), LineFailure> {
        let Some(g) = self.shares.groups.get(group) else {
            return Ok(());
        };
        for r in records {
            let tp = TopicPartition::new(topic.to_string(), r.partition);
            let Some(p) = g.partitions.get(&tp) else {
                continue;
            };
            let why = match p.record(r.offset) {
                _ if r.offset < p.start_offset => {
                    Some("behind the share partition's start offset: its delivery was complete".to_string())
                }
                Some(rec) if rec.state == offsetlab_engine::share::DeliveryState::Available => None,
                Some(rec) => Some(match &rec.lock {
                    Some(l) => format!("{} by {}", rec.state, l.member),
                    None => rec.state.to_string(),
                }),
                None => None,
            };
            if let Some(why) = why {
                return Err(LineFailure::Other(format!(
                    "the cluster handed out {tp}@{} which its earlier answers make {why}",
                    r.offset
                )));
            }
        }
        Ok(())
    }

    /// The share partitions the model's group started reading (its first fetch sets the start
    /// offset, whether or not it acquired anything) start in the window kept from the cluster
    /// too: where `share.auto.offset.reset` says on the cluster's log.
    fn start_model_partitions(&mut self, group: &str, topic: &str) -> Result<(), LineFailure> {
        let started: Vec<TopicPartition> = self
            .model
            .lab
            .share_group(group)
            .map(|g| {
                g.partitions
                    .keys()
                    .filter(|tp| tp.topic == topic)
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let earliest = self.model_share_config(group).auto_offset_reset
            == offsetlab_engine::share::ShareAutoOffsetReset::Earliest;
        for tp in started {
            if self
                .shares
                .groups
                .get(group)
                .is_none_or(|g| g.partitions.contains_key(&tp))
            {
                continue;
            }
            let asker = self.opts.prefix.on_cluster("runner");
            let (low, high) = self
                .inspector
                .watermarks(&asker, &self.opts.prefix.on_cluster(topic), tp.partition)
                .map_err(|e| LineFailure::Other(format!("{tp}'s offsets on the cluster: {e}")))?;
            if let Some(g) = self.shares.groups.get_mut(group) {
                g.partitions.insert(
                    tp,
                    offsetlab_engine::share::SharePartition::new(if earliest { low } else { high }),
                );
            }
        }
        Ok(())
    }

    /// Where a share partition's window starts the first time the group is handed a record of
    /// it: the log start on the cluster (`share.auto.offset.reset=earliest`) or the first record
    /// handed out (`latest`: the log end when the group first read it).
    fn share_start(&mut self, group: &str, topic: &str, records: &[ShareDelivered]) -> BTreeMap<i32, i64> {
        let mut out = BTreeMap::new();
        let earliest = self.model_share_config(group).auto_offset_reset
            == offsetlab_engine::share::ShareAutoOffsetReset::Earliest;
        for r in records {
            let tp = TopicPartition::new(topic.to_string(), r.partition);
            let known = self
                .shares
                .groups
                .get(group)
                .is_some_and(|g| g.partitions.contains_key(&tp));
            if known || out.contains_key(&r.partition) {
                continue;
            }
            let first = records
                .iter()
                .filter(|x| x.partition == r.partition)
                .map(|x| x.offset)
                .min()
                .unwrap_or(r.offset);
            let start = if earliest {
                let asker = self.opts.prefix.on_cluster("runner");
                self.inspector
                    .watermarks(&asker, &self.opts.prefix.on_cluster(topic), r.partition)
                    .map_or(first, |(low, _)| low)
            } else {
                first
            };
            out.insert(r.partition, start);
        }
        out
    }

    /// Every record the cluster handed out is the model's at that offset (same key and value).
    fn check_share_records(&self, topic: &str, records: &[ShareDelivered]) -> Result<(), LineFailure> {
        for r in records {
            let tp = TopicPartition::new(topic.to_string(), r.partition);
            self.check_models_record(&tp, r.offset, r.key.as_ref(), r.value.as_ref())?;
        }
        Ok(())
    }

    /// `process NAME` of a share consumer: the records the model's consumer applied, applied
    /// by the real one.
    pub(super) fn share_process(&mut self, name: &str) -> Result<String, LineFailure> {
        let processed: BTreeSet<(TopicPartition, i64)> = self
            .model
            .lab
            .share_consumer(name)
            .map_err(|e| LineFailure::Other(e.to_string()))?
            .held
            .iter()
            .filter(|h| h.processed)
            .map(|h| (h.tp.clone(), h.offset))
            .collect();
        let c = self.share_consumer_mut(name)?;
        let group = c.group.clone();
        let mut applied = Vec::new();
        for h in c.held.iter_mut().filter(|h| !h.processed) {
            if processed.contains(&(h.tp.clone(), h.offset)) {
                h.processed = true;
                applied.push((h.tp.clone(), h.offset));
            }
        }
        if let Some(g) = self.shares.groups.get_mut(&group) {
            for (tp, o) in &applied {
                g.applied(tp, *o);
            }
        }
        Ok(format!("{} record(s) applied", applied.len()))
    }

    /// `share-ack NAME …`: `acknowledge()` of each record the line names, then `commitSync()`;
    /// the broker must accept them.
    pub(super) fn share_ack(&mut self, a: &ShareAck) -> Result<String, LineFailure> {
        let c = self.running_share(&a.consumer)?;
        let chosen: Vec<Held> = c
            .held
            .iter()
            .filter(|h| a.partition.is_none_or(|p| h.tp.partition == p))
            .filter(|h| a.offsets.as_ref().is_none_or(|os| os.contains(&h.offset)))
            .cloned()
            .collect();
        let acks: Vec<AckRequest> = chosen
            .iter()
            .map(|h| AckRequest {
                partition: h.tp.partition,
                offset: h.offset,
                kind: ack_name(a.ack).to_string(),
            })
            .collect();
        let (group, member) = (c.group.clone(), c.member.clone());
        let timeout = self.agent_timeout();
        let c = self.share_consumer_mut(&a.consumer)?;
        let agent = c
            .agent
            .as_mut()
            .ok_or_else(|| LineFailure::Other(format!("{} is not running", a.consumer)))?;
        match agent.ask(&Request::ShareAck { acks }, timeout) {
            Ok(Reply::Acknowledged) => {}
            Ok(other) => {
                return Err(LineFailure::Other(format!(
                    "{}'s agent answered {other:?} to its acknowledgements",
                    a.consumer
                )))
            }
            Err(e) => return Err(LineFailure::Other(e.to_string())),
        }
        c.held
            .retain(|h| !chosen.iter().any(|x| x.tp == h.tp && x.offset == h.offset));
        let now = self.shares.now_ms();
        if let Some(g) = self.shares.groups.get_mut(&group) {
            g.expire_locks(now);
        }
        self.acknowledged(&group, &member, &chosen, a.ack)?;
        Ok(format!(
            "{} record(s) acknowledged ({}) and committed",
            chosen.len(),
            ack_name(a.ack)
        ))
    }

    /// The broker accepted `member`'s acknowledgement of `records`: the window follows.
    fn acknowledged(
        &mut self,
        group: &str,
        member: &str,
        records: &[Held],
        ack: AcknowledgeType,
    ) -> Result<(), LineFailure> {
        let Some(g) = self.shares.groups.get_mut(group) else {
            return Ok(());
        };
        let mut by_tp: BTreeMap<TopicPartition, Vec<i64>> = BTreeMap::new();
        for h in records {
            by_tp.entry(h.tp.clone()).or_default().push(h.offset);
        }
        for (tp, offsets) in by_tp {
            g.acknowledged(member, &tp, &offsets, ack).map_err(|e| {
                LineFailure::Other(format!(
                    "the broker accepted an acknowledgement the window kept from its answers says it could not: {e}"
                ))
            })?;
        }
        Ok(())
    }

    /// `crash NAME` of a share consumer: `SIGKILL`. Its connections close with it, and the
    /// broker ends its share sessions: what it held is released (Kafka 4.4).
    pub(super) fn share_crash(&mut self, name: &str) -> Result<String, LineFailure> {
        let c = self.share_consumer_mut(name)?;
        if let Some(agent) = c.agent.take() {
            agent.kill();
        }
        c.held.clear();
        self.shares.settle_until = Some(Instant::now() + CONNECTION_CLOSE_MARGIN);
        let c = self.share_consumer_mut(name)?;
        let (group, member) = (c.group.clone(), c.member.clone());
        if let Some(g) = self.shares.groups.get_mut(&group) {
            g.release_everything_of(&member);
        }
        Ok(format!("SIGKILL of {name}'s process"))
    }

    /// `close NAME` of a share consumer: `close()` — its acknowledgements sent, the records
    /// it still holds released, its membership left.
    pub(super) fn share_close(&mut self, name: &str) -> Result<String, LineFailure> {
        let timeout = self.agent_timeout();
        let c = self.share_consumer_mut(name)?;
        let closed = c.agent.take().map(|a| a.close(timeout));
        c.held.clear();
        let (group, member) = (c.group.clone(), c.member.clone());
        if let Some(g) = self.shares.groups.get_mut(&group) {
            g.release_everything_of(&member);
        }
        if let Some(Err(e)) = closed {
            return Err(LineFailure::Other(e.to_string()));
        }
        Ok(format!("{member} closed"))
    }

    /// `expect share-group=…`: each figure of the window kept from the cluster's answers.
    pub(super) fn share_expect(&mut self, e: &Expect, group: &str) -> Vec<String> {
        let now = self.shares.now_ms();
        let Some(g) = self.shares.groups.get_mut(group) else {
            return vec![format!(
                "share group {group} has handed out nothing on the cluster"
            )];
        };
        g.expire_locks(now);
        let mut failures = Vec::new();
        for (key, want) in &e.checks {
            match share_figure(e, g, *key) {
                Ok(got) if &got == want => {}
                Ok(got) => failures.push(format!(
                    "{} expected {want}, got {got} on the cluster",
                    key.name()
                )),
                Err(err) => failures.push(format!("{}: {err}", key.name())),
            }
        }
        failures
    }

    /// Waits until every acquisition lock the model has seen run out by now has run out on the
    /// cluster too, and a killed member's connections are closed (each with a moment for the
    /// broker to act on it): the next line sees the records the model's sees.
    pub(super) fn wait_for_share_locks(&mut self) -> Result<(), LineFailure> {
        let mut until: Option<Instant> = self.shares.settle_until.take();
        for (name, g) in &self.shares.groups {
            let Ok(model) = self.model.lab.share_group(name) else {
                continue;
            };
            for (tp, p) in &g.partitions {
                for (o, r) in p.records() {
                    let Some(lock) = &r.lock else { continue };
                    let still = model
                        .partitions
                        .get(tp)
                        .and_then(|mp| mp.record(o))
                        .and_then(|mr| mr.lock.as_ref())
                        .is_some_and(|ml| ml.member == lock.member);
                    if !still {
                        let at = self.shares.instant(lock.expires_at) + LOCK_MARGIN;
                        until = Some(until.map_or(at, |u: Instant| u.max(at)));
                    }
                }
            }
        }
        if let Some(until) = until {
            if let Some(tell) = self.opts.progress {
                let left = until.saturating_duration_since(Instant::now());
                if left >= Duration::from_secs(1) {
                    tell(left);
                }
            }
            while Instant::now() < until {
                if interrupted() {
                    return Err(LineFailure::Other("interrupted".into()));
                }
                std::thread::sleep(
                    until
                        .saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(100)),
                );
            }
        }
        Ok(())
    }

    /// Closes every running share consumer (the end of a run).
    pub(super) fn close_shares(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        for name in self.shares.running() {
            if let Err(e) = self.share_close(&name) {
                failed.push(format!("{e:?}"));
            }
        }
        failed
    }

    fn share_consumer_mut(&mut self, name: &str) -> Result<&mut RealShareConsumer, LineFailure> {
        self.shares
            .consumers
            .get_mut(name)
            .ok_or_else(|| LineFailure::Other(format!("{name} has no share agent")))
    }

    fn running_share(&mut self, name: &str) -> Result<&mut RealShareConsumer, LineFailure> {
        let c = self.share_consumer_mut(name)?;
        if c.agent.is_none() {
            return Err(LineFailure::Other(format!("{name} is not running")));
        }
        Ok(c)
    }
}
