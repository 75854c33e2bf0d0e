//! A lab's state without its logs and sinks: what a durable lab saves after every action so it
//! can pick up where it was.
//!
//! Records live in the log store and rows in the sink files; both are durable on their own. The
//! rest — consumers and their positions, groups with generations and audits, transactions, the
//! clock, the narrative — is this snapshot. Committed offsets are not in it: they are rebuilt by
//! replaying `__consumer_offsets` from the log store, as a restarted group coordinator does.

use super::{FaultPlan, Lab, Topic};
use crate::audit::GroupAudit;
use crate::clock::{Clock, Millis};
use crate::consumer::Consumer;
use crate::error::LabError;
use crate::group::{Group, Handoff, Member, PendingRebalance};
use crate::log::{LogStore, TopicConfig};
use crate::narrative::Narrative;
use crate::offsets::OffsetStore;
use crate::record::{Offset, TopicPartition};
use crate::sink::{SinkFactory, SinkKind};
use crate::txn::{PartitionTxns, TransactionalProducer};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// Bumped whenever the snapshot's shape changes incompatibly.
pub const SNAPSHOT_VERSION: u32 = 1;

fn default_retention_check() -> Millis {
    super::DEFAULT_OFFSETS_RETENTION_CHECK_MS
}

#[derive(Debug, Serialize, Deserialize)]
pub struct LabSnapshot {
    pub version: u32,
    clock: Clock,
    topics: Vec<TopicSnapshot>,
    groups: Vec<GroupSnapshot>,
    consumers: BTreeMap<String, Consumer>,
    /// Empty in a snapshot taken without it ([`Lab::snapshot_without_narrative`]).
    #[serde(default)]
    narrative: Narrative,
    fault: Option<FaultPlan>,
    effects: BTreeMap<String, u64>,
    offsets_retention_ms: Millis,
    /// Kafka's default in a snapshot from before the lab knew the setting.
    #[serde(default = "default_retention_check")]
    offsets_retention_check_ms: Millis,
    producers: BTreeMap<String, TransactionalProducer>,
    next_producer_id: i64,
    /// The log end of `__consumer_offsets` the lab had acknowledged.
    offsets_log_end: Offset,
    /// Topics created so far (a snapshot of a lab before topic ids: the count of its topics).
    #[serde(default)]
    topics_created: Option<u64>,
    /// Share groups and share consumers (none in a snapshot from before them).
    #[serde(default, skip_serializing_if = "crate::share::ShareState::is_empty")]
    share: crate::share::ShareState,
}

#[derive(Debug, Serialize, Deserialize)]
struct TopicSnapshot {
    name: String,
    /// Its topic id; a snapshot from before topic ids derives one from the name.
    #[serde(default)]
    id: Option<[u8; 16]>,
    config: TopicConfig,
    orders_created: u64,
    events_per_key: HashMap<String, u64>,
    txns: Vec<PartitionTxns>,
    /// Per partition: the log end the lab had acknowledged when it saved this snapshot.
    log_end_offsets: Vec<Offset>,
}

#[derive(Debug, Serialize, Deserialize)]
struct GroupSnapshot {
    name: String,
    generation: i32,
    members: Vec<Member>,
    #[serde(with = "crate::serde_pairs")]
    owners: BTreeMap<TopicPartition, String>,
    #[serde(with = "crate::serde_pairs")]
    handoffs: BTreeMap<TopicPartition, Handoff>,
    rebalance: Option<PendingRebalance>,
    topics_read: Vec<String>,
    empty_since: Option<Millis>,
    sink_kind: SinkKind,
    audit: GroupAudit,
    #[serde(default)]
    external: Option<crate::group::ExternalMembership>,
    /// Removed by the coordinator, kept for the lab's consumers (older snapshots: never).
    #[serde(default)]
    dead: bool,
    /// Older snapshots opened every group's sink.
    #[serde(default = "opened")]
    sink_opened: bool,
    /// A consumer-protocol group's coordinator state (KIP-848; older snapshots: none).
    #[serde(default)]
    consumer: Option<crate::group::ConsumerGroup>,
}

fn opened() -> bool {
    true
}

impl LabSnapshot {
    /// How many events the lab had told when the snapshot was taken.
    pub fn narrative_len(&self) -> usize {
        self.narrative.len()
    }

    /// Puts back the narrative a snapshot was taken without.
    pub fn set_narrative(&mut self, narrative: Narrative) {
        self.narrative = narrative;
    }
}

impl Lab {
    /// The lab's state, without logs and sinks.
    pub fn snapshot(&self) -> LabSnapshot {
        self.snapshot_with(true)
    }

    /// The lab's state without its narrative (only how long it is): what a front end that
    /// writes the narrative down itself saves, at a cost that does not grow with it.
    pub fn snapshot_without_narrative(&self) -> LabSnapshot {
        self.snapshot_with(false)
    }

    fn snapshot_with(&self, with_narrative: bool) -> LabSnapshot {
        let mut snapshot = self.scalars(with_narrative);
        snapshot.topics = self.topics.values().map(topic_snapshot).collect();
        snapshot.groups = self.groups.values().map(group_snapshot).collect();
        snapshot.consumers = (*self.consumers).clone();
        snapshot.producers = (*self.producers).clone();
        snapshot
    }

    /// The snapshot's fields that are not one entry per topic, group, consumer or producer —
    /// small whatever the lab holds; those maps left empty.
    fn scalars(&self, with_narrative: bool) -> LabSnapshot {
        LabSnapshot {
            version: SNAPSHOT_VERSION,
            clock: self.clock,
            topics: Vec::new(),
            groups: Vec::new(),
            consumers: BTreeMap::new(),
            narrative: if with_narrative {
                self.narrative.clone()
            } else {
                Narrative::from_events(self.narrative.len(), Vec::new())
            },
            fault: self.fault.clone(),
            effects: self.effects.clone(),
            offsets_retention_ms: self.offsets_retention_ms,
            offsets_retention_check_ms: self.offsets_retention_check_ms,
            producers: BTreeMap::new(),
            next_producer_id: self.next_producer_id,
            topics_created: Some(self.topics_created),
            share: self.share.clone(),
            offsets_log_end: self.offsets.log().log_end_offset(),
        }
    }

    /// What changed since [`Lab::forget_changes`] (or since the lab was made or restored): the
    /// topics, groups, consumers and transactional producers an action touched, whole, and the
    /// rest of the snapshot (its small fields). Applied to the snapshot of that moment
    /// ([`LabSnapshot::apply`]) it gives [`Lab::snapshot_without_narrative`] — what a durable
    /// lab appends to its journal after each action, at a cost that does not grow with the lab.
    pub fn changes(&self) -> LabChanges {
        let mut lab = self.scalars(false);
        let mut removed = Removed::default();
        for name in self.topics.changed() {
            match self.topics.get(name) {
                Some(t) => lab.topics.push(topic_snapshot(t)),
                None => removed.topics.push(name.clone()),
            }
        }
        for name in self.groups.changed() {
            match self.groups.get(name) {
                Some(g) => lab.groups.push(group_snapshot(g)),
                None => removed.groups.push(name.clone()),
            }
        }
        for name in self.consumers.changed() {
            match self.consumers.get(name) {
                Some(c) => drop(lab.consumers.insert(name.clone(), c.clone())),
                None => removed.consumers.push(name.clone()),
            }
        }
        for name in self.producers.changed() {
            match self.producers.get(name) {
                Some(p) => drop(lab.producers.insert(name.clone(), p.clone())),
                None => removed.producers.push(name.clone()),
            }
        }
        LabChanges { lab, removed }
    }

    /// The changes so far are saved: [`Lab::changes`] starts again from here.
    pub fn forget_changes(&mut self) {
        self.topics.forget_changes();
        self.groups.forget_changes();
        self.consumers.forget_changes();
        self.producers.forget_changes();
    }

    /// A lab brought back from `snapshot`: its logs reopened from `store` (a durable store
    /// recovers them), its sinks reopened from `sinks` with their rows, and the coordinator's
    /// offsets view rebuilt by replaying `__consumer_offsets`.
    pub fn restore(
        snapshot: LabSnapshot,
        store: Box<dyn LogStore>,
        sinks: Box<dyn SinkFactory>,
    ) -> Result<Self, LabError> {
        Self::restore_reporting(snapshot, store, sinks).map(|(lab, _)| lab)
    }

    /// [`Lab::restore`], and the logs found shorter than the lab had acknowledged — a tail lost
    /// to a machine crash, cut by the store's recovery — each as the offsets it lost
    /// (`committed_past_end` left empty: [`Lab::truncate_log`] fills it in when the caller
    /// writes the loss down).
    pub fn restore_reporting(
        snapshot: LabSnapshot,
        store: Box<dyn LogStore>,
        sinks: Box<dyn SinkFactory>,
    ) -> Result<(Self, Vec<super::TailLoss>), LabError> {
        Self::restore_over(snapshot, store, sinks, HashMap::new())
    }

    /// [`Lab::restore_reporting`], taking a partition's log from `open` where it is there
    /// ([`Lab::go_back`]); the logs of `open` the snapshot does not name are closed.
    fn restore_over(
        snapshot: LabSnapshot,
        mut store: Box<dyn LogStore>,
        mut sinks: Box<dyn SinkFactory>,
        open: HashMap<(String, i32), Box<dyn crate::log::PartitionLog>>,
    ) -> Result<(Self, Vec<super::TailLoss>), LabError> {
        if snapshot.version != SNAPSHOT_VERSION {
            return Err(LabError::storage(format!(
                "lab snapshot version {} (this offsetlab reads {SNAPSHOT_VERSION})",
                snapshot.version
            )));
        }
        let mut notes = Vec::new();
        let mut losses = Vec::new();
        let now = snapshot.clock.now();
        let mut reconcile =
            |tp: TopicPartition, log: &mut dyn crate::log::PartitionLog, acknowledged: Offset| {
                let end = log.log_end_offset();
                if end < acknowledged {
                    losses.push(super::TailLoss {
                        topic: tp.topic.clone(),
                        partition: tp.partition,
                        from: end,
                        to: acknowledged,
                        committed_past_end: Vec::new(),
                    });
                }
                notes.extend(reconcile(&tp.to_string(), log, acknowledged, now));
            };
        let mut opener = OpenLogs {
            open,
            store: store.as_mut(),
        };
        let mut offsets_log = opener
            .open(
                crate::offsets::CONSUMER_OFFSETS_TOPIC,
                0,
                &OffsetStore::topic_config(),
            )
            .map_err(LabError::storage)?;
        reconcile(
            TopicPartition::new(crate::offsets::CONSUMER_OFFSETS_TOPIC, 0),
            offsets_log.as_mut(),
            snapshot.offsets_log_end,
        );
        let topics_created = snapshot.topics_created.unwrap_or(snapshot.topics.len() as u64);
        let topics = reopen_topics(snapshot.topics, &mut opener, &mut reconcile)?;
        drop(opener);
        let mut groups = BTreeMap::new();
        for g in snapshot.groups {
            groups.insert(g.name.clone(), reopen_group(g, sinks.as_mut())?);
        }
        let mut lab = Self {
            clock: snapshot.clock,
            store,
            sinks,
            topics: topics.into(),
            offsets: OffsetStore::new(offsets_log),
            groups: groups.into(),
            consumers: snapshot.consumers.into(),
            narrative: snapshot.narrative,
            fault: snapshot.fault,
            effects: snapshot.effects,
            offsets_retention_ms: snapshot.offsets_retention_ms,
            offsets_retention_check_ms: snapshot.offsets_retention_check_ms,
            producers: snapshot.producers.into(),
            next_producer_id: snapshot.next_producer_id,
            topics_created,
            share: snapshot.share,
            keep_delivery_logs: false,
            irreversible: 0,
        };
        lab.say(
            crate::narrative::EventKind::Setup,
            format!(
                "the lab restarted from its files: {}",
                if notes.is_empty() {
                    "every log ends where the lab left it".to_string()
                } else {
                    notes.join("; ")
                }
            ),
        );
        Ok((lab, losses))
    }
}

fn topic_snapshot(t: &Topic) -> TopicSnapshot {
    TopicSnapshot {
        name: t.name.clone(),
        id: Some(t.id),
        config: t.config.clone(),
        orders_created: t.orders_created,
        events_per_key: t.events_per_key.clone(),
        txns: t.txns.clone(),
        log_end_offsets: t.partitions.iter().map(|l| l.log_end_offset()).collect(),
    }
}

fn group_snapshot(g: &Group) -> GroupSnapshot {
    GroupSnapshot {
        name: g.name.clone(),
        generation: g.generation,
        members: g.members.clone(),
        owners: g.owners.clone(),
        handoffs: g.handoffs.clone(),
        rebalance: g.rebalance.clone(),
        topics_read: g.topics_read.clone(),
        empty_since: g.empty_since,
        sink_kind: g.sink_kind,
        audit: g.audit.clone(),
        external: g.external.clone(),
        dead: g.dead,
        sink_opened: g.sink_opened,
        consumer: g.consumer.clone(),
    }
}

/// What changed in a lab between two saves ([`Lab::changes`]): one entry of a durable lab's
/// journal.
#[derive(Debug, Serialize, Deserialize)]
pub struct LabChanges {
    /// The lab's small fields, and only the topics, groups, consumers and producers that
    /// changed (each whole).
    lab: LabSnapshot,
    #[serde(default)]
    removed: Removed,
}

/// The names of the entries an action removed.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Removed {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    topics: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    groups: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    consumers: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    producers: Vec<String>,
}

impl LabChanges {
    /// How many topics, groups, consumers and producers the changes hold or remove.
    pub fn entries(&self) -> usize {
        self.lab.topics.len()
            + self.lab.groups.len()
            + self.lab.consumers.len()
            + self.lab.producers.len()
            + self.removed.topics.len()
            + self.removed.groups.len()
            + self.removed.consumers.len()
            + self.removed.producers.len()
    }
}

impl LabSnapshot {
    /// The snapshot `changes` were taken after, brought forward by them: every changed entry
    /// replaces its namesake (or is added), every removed one goes, the small fields are the
    /// changes'. The narrative is left as it is (the journal's reader sets it from its file).
    pub fn apply(&mut self, changes: LabChanges) -> Result<(), String> {
        let LabChanges { lab, removed } = changes;
        if lab.version != self.version {
            return Err(format!(
                "changes of snapshot version {}, the snapshot is version {}",
                lab.version, self.version
            ));
        }
        merge_sorted(&mut self.topics, lab.topics, &removed.topics, |t| &t.name);
        merge_sorted(&mut self.groups, lab.groups, &removed.groups, |g| &g.name);
        for name in &removed.consumers {
            self.consumers.remove(name);
        }
        self.consumers.extend(lab.consumers);
        for name in &removed.producers {
            self.producers.remove(name);
        }
        self.producers.extend(lab.producers);
        self.clock = lab.clock;
        self.narrative = lab.narrative;
        self.fault = lab.fault;
        self.effects = lab.effects;
        self.offsets_retention_ms = lab.offsets_retention_ms;
        self.offsets_retention_check_ms = lab.offsets_retention_check_ms;
        self.next_producer_id = lab.next_producer_id;
        self.offsets_log_end = lab.offsets_log_end;
        self.topics_created = lab.topics_created;
        self.share = lab.share;
        Ok(())
    }
}

/// `entries`, sorted by name as a snapshot keeps them (a lab's maps are ordered), with
/// `changed` put in their place and `removed` taken out.
fn merge_sorted<T>(entries: &mut Vec<T>, changed: Vec<T>, removed: &[String], name: fn(&T) -> &String) {
    for r in removed {
        if let Ok(i) = entries.binary_search_by(|e| name(e).cmp(r)) {
            entries.remove(i);
        }
    }
    for c in changed {
        match entries.binary_search_by(|e| name(e).cmp(name(&c))) {
            Ok(i) => entries[i] = c,
            Err(i) => entries.insert(i, c),
        }
    }
}

/// A store that hands out logs already open — a lab's own, taken back by [`Lab::go_back`] —
/// before it opens any from `store`.
struct OpenLogs<'a> {
    open: HashMap<(String, i32), Box<dyn crate::log::PartitionLog>>,
    store: &'a mut dyn LogStore,
}

impl LogStore for OpenLogs<'_> {
    fn open(
        &mut self,
        topic: &str,
        partition: i32,
        config: &TopicConfig,
    ) -> Result<Box<dyn crate::log::PartitionLog>, String> {
        match self.open.remove(&(topic.to_string(), partition)) {
            Some(log) => Ok(log),
            None => self.store.open(topic, partition, config),
        }
    }

    fn remove(&mut self, topic: &str, partition: i32) -> Result<(), String> {
        self.store.remove(topic, partition)
    }
}

impl Lab {
    /// The lab `snapshot` — an earlier save of this very lab — brought back over this lab's own
    /// logs, as they are open: each cut back to the end the snapshot acknowledged, as
    /// [`Lab::restore`] cuts logs reopened from their files, without reading them again. What a
    /// failed batch is undone with when the save just before it can undo it: on a lab whose
    /// active segment holds a hundred megabytes, reopening its files meant scanning them.
    /// Sinks are reopened from `sinks`. Logs of topics the snapshot does not know (a topic the
    /// batch created) are closed; the caller removes their files.
    pub fn go_back(self, snapshot: LabSnapshot, sinks: Box<dyn SinkFactory>) -> Result<Self, LabError> {
        let Self {
            store,
            topics,
            offsets,
            ..
        } = self;
        let mut open = HashMap::new();
        for (name, topic) in topics.into_inner() {
            for (p, log) in topic.partitions.into_iter().enumerate() {
                open.insert((name.clone(), p as i32), log);
            }
        }
        open.insert(
            (crate::offsets::CONSUMER_OFFSETS_TOPIC.to_string(), 0),
            offsets.into_log(),
        );
        Self::restore_over(snapshot, store, sinks, open).map(|(lab, _)| lab)
    }
}

/// A log brought to what the lab acknowledged, and what the restart says about it. Records
/// past it (an action cut short by the crash) are cut off, as a Kafka broker truncates to its
/// high watermark: the logs then agree with the lab's state and with its history.
fn reconcile(
    name: &str,
    log: &mut dyn crate::log::PartitionLog,
    acknowledged: Offset,
    now: i64,
) -> Option<String> {
    let end = log.log_end_offset();
    if end > acknowledged {
        let n = log.truncate_to(acknowledged);
        Some(format!(
            "{name}: {n} record(s) past the last acknowledged state cut off (log end {end} → {acknowledged})"
        ))
    } else if end < acknowledged {
        // Appends must not fill the lost tail's place in a file whose bytes the lab's history
        // may still name.
        log.seal_active(now);
        Some(format!("{name}: the log ends at {end} but the lab had acknowledged up to {acknowledged}: records lost (a machine crash under --flush never)"))
    } else {
        None
    }
}

/// The topics' logs opened again from `store`, each reconciled with what the lab acknowledged.
fn reopen_topics(
    snapshots: Vec<TopicSnapshot>,
    store: &mut dyn LogStore,
    reconcile: &mut dyn FnMut(TopicPartition, &mut dyn crate::log::PartitionLog, Offset),
) -> Result<BTreeMap<String, Topic>, LabError> {
    let mut topics = BTreeMap::new();
    for t in snapshots {
        let mut partitions = (0..t.config.partitions)
            .map(|p| store.open(&t.name, p, &t.config))
            .collect::<Result<Vec<_>, String>>()
            .map_err(LabError::storage)?;
        for (p, log) in partitions.iter_mut().enumerate() {
            if let Some(&acknowledged) = t.log_end_offsets.get(p) {
                reconcile(TopicPartition::new(&t.name, p as i32), log.as_mut(), acknowledged);
            }
        }
        let mut txns = t.txns;
        txns.resize_with(partitions.len(), PartitionTxns::default);
        topics.insert(
            t.name.clone(),
            Topic {
                id: t.id.unwrap_or_else(|| super::topics::topic_id(&t.name, 0)),
                name: t.name,
                config: t.config,
                partitions,
                orders_created: t.orders_created,
                events_per_key: t.events_per_key,
                txns,
            },
        );
    }
    Ok(topics)
}

/// A group as its snapshot left it, its sink reopened with its rows (a group of real clients
/// that never had a lab consumer gets its in-memory stand-in again).
fn reopen_group(g: GroupSnapshot, sinks: &mut dyn SinkFactory) -> Result<Group, LabError> {
    let sink = if g.sink_opened {
        sinks.reopen(&g.name, g.sink_kind)?
    } else {
        crate::sink::SinkFactory::open(&mut crate::sink::MemorySinks, &g.name, g.sink_kind)?
    };
    let mut group = Group::new(&g.name, g.sink_kind, sink);
    group.generation = g.generation;
    group.members = g.members;
    group.owners = g.owners;
    group.handoffs = g.handoffs;
    group.rebalance = g.rebalance;
    group.topics_read = g.topics_read;
    group.empty_since = g.empty_since;
    group.audit = g.audit;
    group.external = g.external;
    group.dead = g.dead;
    group.sink_opened = g.sink_opened;
    group.consumer = g.consumer;
    Ok(group)
}

#[cfg(test)]
mod tests {
    use crate::log::MemoryStore;
    use crate::sink::MemorySinks;
    use crate::Lab;

    /// A snapshot round-trips through JSON and restores the same figures (over the same logs:
    /// here the in-memory store cannot keep them, so the test compares everything but records).
    #[test]
    fn a_snapshot_round_trips() {
        let mut lab = Lab::default();
        lab.create_topic("orders", crate::log::TopicConfig::default())
            .expect("topic");
        lab.add_consumer(crate::consumer::ConsumerConfig::new("c1", "g", "orders"))
            .expect("consumer");
        lab.tick(7_000).expect("tick");
        let json = serde_json::to_string(&lab.snapshot()).expect("serialize");
        let back: super::LabSnapshot = serde_json::from_str(&json).expect("deserialize");
        let restored = Lab::restore(back, Box::new(MemoryStore), Box::new(MemorySinks)).expect("restore");
        let view = |lab: &Lab| {
            let mut v = serde_json::to_value(lab.view().expect("view")).expect("json");
            // `__consumer_offsets` is a log too (here the group's metadata record).
            v.as_object_mut().map(|o| o.remove("consumer_offsets"));
            v
        };
        assert_eq!(view(&lab), view(&restored));
        let (before, after) = (lab.narrative().events(), restored.narrative().events());
        assert_eq!(before, &after[..before.len()]);
        assert!(
            after[before.len()].text.contains("restarted"),
            "{:?}",
            after.last()
        );
    }
}
