//! Groups of real Kafka clients, as the lab's Kafka listener reports them.
//!
//! A real consumer's membership runs on wall time — heartbeats every few seconds, a session that
//! expires when they stop — in the listener's group coordinator, outside this deterministic
//! engine. What it changes in the lab arrives here as lines: each completed rebalance (the new
//! generation, its members and what each was assigned) and each offset commit a member makes.
//! The engine checks a commit against the membership it was told of — an unknown member or an
//! old generation is refused, as Kafka's coordinator refuses it — writes it to
//! `__consumer_offsets` like any commit, and narrates both; the group's committed offsets and lag
//! then show like every other group's, and an exported session replays them exactly.

use super::Lab;
use crate::error::LabError;
use crate::group::{check_commit, EpochFenced, ExternalMember, ExternalMembership, Fenced, Group};
use crate::narrative::EventKind;
use crate::record::{Offset, TopicPartition};
use crate::sink::SinkKind;

impl Lab {
    /// Records a completed rebalance of a group of real clients: `generation` and its members
    /// (none: the group is now Empty). Refused for a group of the lab's own consumers, and for a
    /// generation that does not move forward.
    pub fn external_rebalance(
        &mut self,
        group: &str,
        generation: i32,
        protocol: &str,
        members: Vec<ExternalMember>,
    ) -> Result<(), LabError> {
        self.external_rebalance_of(group, generation, "consumer", protocol, members)
    }

    /// [`Lab::external_rebalance`] of a group whose protocol type is `protocol_type` (`consumer`,
    /// or another client's: Kafka Connect's `connect`, …).
    pub fn external_rebalance_of(
        &mut self,
        group: &str,
        generation: i32,
        protocol_type: &str,
        protocol: &str,
        mut members: Vec<ExternalMember>,
    ) -> Result<(), LabError> {
        crate::names::check_group_id(group)?;
        // The member ids before a static member's replacement (empty: no replacement).
        let mut replaced: Vec<String> = Vec::new();
        if let Some(g) = self.groups.get(group) {
            if !g.members.is_empty() {
                return Err(LabError::InvalidArgument(format!(
                    "group {group} has the lab's own consumers: real clients cannot join it"
                )));
            }
            if g.consumer.as_ref().is_some_and(|c| !c.members.is_empty()) {
                return Err(LabError::InconsistentGroupProtocol(format!(
                    "group {group} is a consumer-protocol group with members: classic members cannot join it"
                )));
            }
            // The same generation: a static member's new process in its place (KIP-345) —
            // Kafka writes the group's metadata again, with the new member id, and no rebalance.
            let replacement = generation == g.generation
                && g.external
                    .as_ref()
                    .is_some_and(|e| static_replacement(&e.members, &members));
            if replacement {
                replaced = g
                    .external
                    .iter()
                    .flat_map(|e| e.members.iter().map(|m| m.id.clone()))
                    .collect();
            }
            if generation < g.generation || (generation == g.generation && !replacement) {
                return Err(LabError::InvalidArgument(format!(
                    "group {group} is at generation {}: a rebalance moves it forward (got {generation})",
                    g.generation
                )));
            }
        }
        // Kafka's coordinator does not check what the leader assigned: a leader with stale
        // metadata may hand out partitions of a topic deleted since. They are dropped here, so
        // the rebalance — and every commit of its generation — still lands.
        let mut unknown = Vec::new();
        for m in &mut members {
            m.partitions.retain(|tp| {
                let known = self.partition_log(tp).is_ok();
                if !known {
                    unknown.push(format!("{}-{}", tp.topic, tp.partition));
                }
                known
            });
        }
        if !unknown.is_empty() {
            self.say(
                EventKind::Warning,
                format!(
                    "group {group}'s leader assigned partitions the lab does not have ({}): left out",
                    unknown.join(", ")
                ),
            );
        }
        if !self.groups.contains_key(group) {
            self.groups.insert(group.to_string(), stand_in(group)?);
        }
        let now = self.clock.now();
        let g = self
            .groups
            .get_mut(group)
            .ok_or_else(|| LabError::UnknownGroup(group.to_string()))?;
        g.generation = generation;
        g.owners = members
            .iter()
            .flat_map(|m| m.partitions.iter().map(move |tp| (tp.clone(), m.id.clone())))
            .collect();
        for m in &members {
            for tp in &m.partitions {
                if !g.topics_read.contains(&tp.topic) {
                    g.topics_read.push(tp.topic.clone());
                }
            }
        }
        g.empty_since = members.is_empty().then_some(now);
        g.dead = false;
        // An empty consumer-protocol group becomes a classic one, as Kafka converts it.
        g.consumer = None;
        let text = if !replaced.is_empty() {
            let new: Vec<String> = members
                .iter()
                .filter(|m| !replaced.contains(&m.id))
                .map(|m| {
                    format!(
                        "{} (group.instance.id {})",
                        m.id,
                        m.instance_id.as_deref().unwrap_or_default()
                    )
                })
                .collect();
            format!(
                "group {group} (real Kafka clients): a static member's new process takes its old member's place and partitions (KIP-345) — {}; generation {generation} unchanged, no rebalance",
                new.join(", ")
            )
        } else if members.is_empty() {
            format!("group {group} (real Kafka clients) is now Empty (generation {generation}); its committed offsets stay")
        } else {
            let who: Vec<String> = members
                .iter()
                .map(|m| {
                    let parts: Vec<String> = m.partitions.iter().map(ToString::to_string).collect();
                    format!(
                        "{} ({}) ← {}",
                        m.id,
                        m.client_id,
                        if parts.is_empty() {
                            "nothing".to_string()
                        } else {
                            parts.join(", ")
                        }
                    )
                })
                .collect();
            format!(
                "group {group} (real Kafka clients) rebalanced: generation {generation}, {protocol} assignment — {}",
                who.join("; ")
            )
        };
        g.external = Some(ExternalMembership {
            protocol: protocol.to_string(),
            protocol_type: protocol_type.to_string(),
            members,
        });
        self.say(EventKind::Group, text);
        self.record_group_metadata(group);
        Ok(())
    }

    /// An offset commit that names a member id and a generation — a real client's member, or,
    /// in a group of the lab's own consumers, anyone who sends one (`member` is then a member id,
    /// `c1#2`, or a consumer's name for its current incarnation's) — checked against the group's
    /// membership as Kafka's coordinator checks it: a member the group does not have is refused
    /// with UNKNOWN_MEMBER_ID, another generation than the group's with ILLEGAL_GENERATION, a
    /// commit while the group waits for its assignment with REBALANCE_IN_PROGRESS; nothing is
    /// written then.
    pub fn external_commit(
        &mut self,
        group: &str,
        member: &str,
        generation: i32,
        offsets: &[(TopicPartition, Offset)],
        metadata: &std::collections::BTreeMap<TopicPartition, String>,
        leader_epochs: &std::collections::BTreeMap<TopicPartition, i32>,
    ) -> Result<(), LabError> {
        let g = self
            .groups
            .get(group)
            .ok_or_else(|| LabError::UnknownGroup(group.to_string()))?;
        let (member, is_member) = match g.external.as_ref() {
            Some(external) => (
                member.to_string(),
                external.members.iter().any(|m| m.id == member),
            ),
            None => {
                // The lab's own consumers: by member id, or by name for the incarnation running.
                let id = self
                    .consumers
                    .get(member)
                    .filter(|c| c.config.group == group)
                    .map_or_else(|| member.to_string(), |c| c.member_id());
                let is_member = g.is_member(&id);
                (id, is_member)
            }
        };
        let member = member.as_str();
        if let Some(cg) = &g.consumer {
            // A consumer-protocol group: fenced by the member's own epoch, partition by
            // partition (a classic member of a mixed group: by its generation).
            let fenced = if cg.members.contains_key(member) {
                offsets
                    .iter()
                    .try_for_each(|(tp, _)| cg.check_commit_partition(member, generation, tp))
            } else {
                Err(EpochFenced::UnknownMember)
            };
            match fenced {
                Ok(()) => {}
                Err(EpochFenced::StaleMemberEpoch { current }) => {
                    return Err(LabError::StaleMemberEpoch {
                        group: group.to_string(),
                        member: member.to_string(),
                        epoch: generation,
                        current,
                    })
                }
                Err(EpochFenced::IllegalGeneration { current }) => {
                    return Err(LabError::IllegalGeneration {
                        group: group.to_string(),
                        member: member.to_string(),
                        generation,
                        current,
                    })
                }
                Err(EpochFenced::UnknownMember) => {
                    return Err(LabError::UnknownMember {
                        group: group.to_string(),
                        member: member.to_string(),
                    })
                }
            }
        } else {
            match check_commit(g.state(), is_member, generation, g.generation) {
                Ok(()) => {}
                Err(Fenced::UnknownMember) => {
                    return Err(LabError::UnknownMember {
                        group: group.to_string(),
                        member: member.to_string(),
                    })
                }
                Err(Fenced::IllegalGeneration { current }) => {
                    return Err(LabError::IllegalGeneration {
                        group: group.to_string(),
                        member: member.to_string(),
                        generation,
                        current,
                    })
                }
                Err(Fenced::RebalanceInProgress) => {
                    return Err(LabError::RebalanceInProgress {
                        group: group.to_string(),
                    })
                }
            }
        }
        if offsets.is_empty() {
            return Err(LabError::InvalidArgument(
                "a commit names at least one partition".into(),
            ));
        }
        // Stored as given, as Kafka's coordinator stores a member's commit: the next fetch from
        // an offset outside the log meets OFFSET_OUT_OF_RANGE.
        for (tp, _) in offsets {
            self.partition_log(tp)?;
        }
        for (tp, m) in metadata {
            crate::offsets::check_metadata(tp, m)?;
        }
        let now = self.clock.now();
        for (tp, offset) in offsets {
            let metadata = metadata.get(tp).cloned().unwrap_or_default();
            let epoch = leader_epochs.get(tp).copied().unwrap_or(-1);
            self.offsets
                .commit_offset_with(group, tp, *offset, epoch, metadata, now);
        }
        let what: Vec<String> = offsets.iter().map(|(tp, o)| format!("{tp} → {o}")).collect();
        let epoch = match self.groups.get(group) {
            Some(g) if g.consumer.is_some() => "member epoch",
            _ => "generation",
        };
        self.say(
            EventKind::Commit,
            format!(
                "{member} (group {group}, {epoch} {generation}) committed {}",
                what.join(", ")
            ),
        );
        Ok(())
    }
}

/// Whether `after` is `before` with static members' ids changed and nothing else: the same
/// members (by member id, or by `group.instance.id` for static ones) with the same partitions.
fn static_replacement(before: &[ExternalMember], after: &[ExternalMember]) -> bool {
    before.len() == after.len()
        && after.iter().any(|m| !before.iter().any(|b| b.id == m.id))
        && after.iter().all(|m| {
            before.iter().any(|b| {
                let same_member = b.id == m.id || (b.instance_id.is_some() && b.instance_id == m.instance_id);
                same_member && b.partitions == m.partitions
            })
        })
}

/// A group the lab's consumers have not joined: an empty in-memory stand-in sink (real clients
/// never write to a lab sink; a client that makes a thousand groups must not hold a thousand
/// databases open). The first lab consumer opens the real one, of its own kind.
pub(super) fn stand_in(group: &str) -> Result<Group, LabError> {
    let sink = crate::sink::SinkFactory::open(&mut crate::sink::MemorySinks, group, SinkKind::Append)?;
    let mut g = Group::new(group, SinkKind::Append, sink);
    g.sink_opened = false;
    Ok(g)
}

impl Lab {
    /// The group as the coordinator knows it once it holds offsets: a group only an admin or a
    /// transaction committed for has no member, and Kafka lists and describes it as Empty with
    /// its offsets — so does the lab. `topic` joins the topics its figures show.
    pub(crate) fn offsets_only_group(&mut self, group: &str, topic: &str) -> Result<(), LabError> {
        if !self.groups.contains_key(group) {
            self.groups.insert(group.to_string(), stand_in(group)?);
        }
        if let Some(g) = self.groups.get_mut(group) {
            if !g.topics_read.iter().any(|t| t == topic) {
                g.topics_read.push(topic.to_string());
            }
            // An offset committed for a group the coordinator removed creates it again.
            g.dead = false;
        }
        Ok(())
    }
}

/// Transactions of real Kafka clients: a transactional producer's `initTransactions()`, its
/// sends inside the open transaction, `sendOffsetsToTransaction()` and `commitTransaction()` /
/// `abortTransaction()` — as the listener's transaction coordinator reports them. They share the
/// lab's transaction coordinator with the `kafka-tx` consumers: the same producer ids, epochs,
/// markers, last stable offset and read_committed rules.
impl Lab {
    fn external_producer(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Result<&mut crate::txn::TransactionalProducer, LabError> {
        let p = self
            .producers
            .get_mut(txn_id)
            .filter(|p| p.external)
            .ok_or_else(|| {
                LabError::InvalidArgument(format!(
                    "transactional.id {txn_id} has not called initTransactions()"
                ))
            })?;
        if p.producer_id != producer_id || p.epoch != epoch {
            return Err(LabError::InvalidArgument(format!(
                "PRODUCER_FENCED: transactional.id {txn_id} is producer {} epoch {}, not {producer_id} epoch {epoch}",
                p.producer_id, p.epoch
            )));
        }
        Ok(p)
    }

    /// `initTransactions()` of a real client: a producer id for a new `transactional.id`, or
    /// the next epoch for a known one — aborting the transaction a previous instance left open
    /// and fencing it. Returns (producer id, epoch).
    pub fn external_init_transactions(
        &mut self,
        txn_id: &str,
        timeout_ms: i64,
    ) -> Result<(i64, i16), LabError> {
        crate::names::check_transactional_id(txn_id)?;
        if timeout_ms <= 0 {
            return Err(LabError::InvalidArgument(
                "initTransactions needs a positive transaction.timeout.ms".into(),
            ));
        }
        if self.producers.get(txn_id).is_some_and(|p| !p.external) || self.consumers.contains_key(txn_id) {
            return Err(LabError::InvalidArgument(format!(
                "transactional.id {txn_id} belongs to one of the lab's own consumers"
            )));
        }
        if !self.producers.contains_key(txn_id) {
            let pid = self.next_producer_id;
            self.next_producer_id += 1;
            let mut p = crate::txn::TransactionalProducer::new(txn_id, pid, timeout_ms);
            p.external = true;
            self.producers.insert(txn_id.to_string(), p);
            self.say(
                EventKind::Setup,
                format!("a real client calls initTransactions(): transactional.id={txn_id} gets producer id {pid}, epoch 0"),
            );
            return Ok((pid, 0));
        }
        if self.producers.get(txn_id).is_some_and(|p| p.ongoing.is_some()) {
            let markers = self.end_transaction(txn_id, crate::txn::ControlType::Abort);
            if let Some(p) = self.producers.get_mut(txn_id) {
                p.epoch = p.epoch.saturating_add(1);
            }
            self.say(
                EventKind::Warning,
                format!("initTransactions() again for transactional.id={txn_id}: the coordinator aborts the transaction the previous instance left open (ABORT marker(s) at {})", markers.join(", ")),
            );
        }
        let p = self
            .producers
            .get_mut(txn_id)
            .ok_or_else(|| LabError::InvalidArgument(format!("no producer {txn_id}")))?;
        p.epoch = p.epoch.saturating_add(1);
        p.fenced = None;
        p.timeout_ms = timeout_ms;
        let (pid, epoch) = (p.producer_id, p.epoch);
        self.say(
            EventKind::Setup,
            format!("transactional.id={txn_id} keeps producer id {pid} with epoch {epoch}; any older instance is fenced"),
        );
        Ok((pid, epoch))
    }

    /// Records a real transactional producer wrote inside its open transaction (which the first
    /// write, or offsets, begins): in the log at once, invisible to read_committed readers until
    /// the COMMIT marker.
    pub fn external_txn_send(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        tp: &TopicPartition,
        records: &[super::SentRecord],
    ) -> Result<(Offset, Offset), LabError> {
        self.external_producer(txn_id, producer_id, epoch)?;
        if crate::names::is_internal_topic(&tp.topic) || records.is_empty() {
            return Err(LabError::InvalidArgument(format!(
                "a transaction writes at least one record, never to an internal topic ({tp})"
            )));
        }
        self.partition_log(tp)?;
        let now = self.clock.now();
        let t = self
            .topics
            .get_mut(&tp.topic)
            .ok_or_else(|| LabError::UnknownTopic(tp.topic.clone()))?;
        let index = tp.partition as usize;
        // The producer's timestamps on a CreateTime topic; the lab's time on a LogAppendTime one.
        let log_append = t.config.message_timestamp_type == crate::log::TimestampType::LogAppendTime;
        let headers: Vec<Vec<u8>> = records.iter().map(super::SentRecord::encoded_headers).collect();
        let batch: Vec<crate::record::NewRecord<'_>> = records
            .iter()
            .zip(&headers)
            .map(|(r, headers)| crate::record::NewRecord {
                timestamp: if log_append {
                    now
                } else {
                    r.timestamp.unwrap_or(now)
                },
                key: r.key.as_deref(),
                value: r.value.as_deref(),
                control: false,
                headers,
            })
            .collect();
        let first = t.partitions[index].append_batch(&batch, now);
        let offsets: Vec<(Offset, &super::SentRecord)> = records
            .iter()
            .enumerate()
            .map(|(i, r)| (first + i as Offset, r))
            .collect();
        for (offset, _) in &offsets {
            t.txns[index].record_open(producer_id, *offset);
        }
        let lso = t.txns[index].last_stable_offset(t.partitions[index].log_end_offset());
        let p = self.external_producer(txn_id, producer_id, epoch)?;
        let begins = p.ongoing.is_none();
        let txn = p.ongoing.get_or_insert_with(|| crate::txn::OpenTxn {
            started_at: now,
            writes: Vec::new(),
            offsets: Vec::new(),
            offset_details: Vec::new(),
        });
        for (offset, r) in &offsets {
            txn.writes.push(crate::txn::TxnWrite {
                output: tp.clone(),
                output_offset: *offset,
                source: tp.clone(),
                source_offset: *offset,
                key: r.key.clone().unwrap_or_default(),
                value: r.value.clone().unwrap_or_default(),
                incarnation: 0,
                reason: crate::delivery::DeliveryReason::First,
            });
        }
        let (first, last) = (offsets[0].0, offsets[offsets.len() - 1].0);
        self.say(
            EventKind::Produce,
            format!(
                "transactional.id={txn_id} (a real client) {} writing {} record(s) to {tp} @{first}..{last}: read_committed readers stop at the last stable offset, now {lso}",
                if begins { "begins a transaction," } else { "goes on" },
                offsets.len()
            ),
        );
        Ok((first, last))
    }

    /// `sendOffsetsToTransaction()`: offsets a group commits if, and only if, the transaction
    /// commits — with the metadata and leader epochs sent along, as an OffsetCommit keeps them.
    #[allow(clippy::too_many_arguments)]
    pub fn external_txn_offsets(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        group: &str,
        offsets: &[(TopicPartition, Offset)],
        metadata: &std::collections::BTreeMap<TopicPartition, String>,
        leader_epochs: &std::collections::BTreeMap<TopicPartition, i32>,
    ) -> Result<(), LabError> {
        crate::names::check_group_id(group)?;
        for (tp, m) in metadata {
            crate::offsets::check_metadata(tp, m)?;
        }
        for (tp, o) in offsets {
            self.partition_log(tp)?;
            // A committed offset is a position in the log (as in `external_commit`).
            if *o < 0 {
                return Err(LabError::InvalidArgument(format!(
                    "{tp}: a committed offset is a position in the log, not {o}"
                )));
            }
        }
        let now = self.clock.now();
        let p = self.external_producer(txn_id, producer_id, epoch)?;
        let txn = p.ongoing.get_or_insert_with(|| crate::txn::OpenTxn {
            started_at: now,
            writes: Vec::new(),
            offsets: Vec::new(),
            offset_details: Vec::new(),
        });
        for (tp, o) in offsets {
            txn.offsets.retain(|(g, t, _)| !(g == group && t == tp));
            txn.offsets.push((group.to_string(), tp.clone(), *o));
            txn.offset_details.retain(|(g, t, _, _)| !(g == group && t == tp));
            let (m, e) = (metadata.get(tp), leader_epochs.get(tp));
            if m.is_some() || e.is_some() {
                let details = (
                    group.to_string(),
                    tp.clone(),
                    e.copied().unwrap_or(-1),
                    m.cloned().unwrap_or_default(),
                );
                txn.offset_details.push(details);
            }
        }
        let what: Vec<String> = offsets.iter().map(|(tp, o)| format!("{tp} → {o}")).collect();
        self.say(
            EventKind::Commit,
            format!("transactional.id={txn_id} adds group {group}'s offsets to its transaction ({}): they commit only if it commits", what.join(", ")),
        );
        Ok(())
    }

    /// `commitTransaction()` / `abortTransaction()` of a real client: COMMIT or ABORT markers on
    /// every partition it wrote; on commit, the offsets it carried reach `__consumer_offsets`.
    pub fn external_end_transaction(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
        commit: bool,
    ) -> Result<(), LabError> {
        let p = self.external_producer(txn_id, producer_id, epoch)?;
        let Some(txn) = p.ongoing.clone() else {
            self.say(
                EventKind::Commit,
                format!("transactional.id={txn_id} ends a transaction with nothing in it"),
            );
            return Ok(());
        };
        let control = if commit {
            crate::txn::ControlType::Commit
        } else {
            crate::txn::ControlType::Abort
        };
        let markers = self.end_transaction(txn_id, control);
        let now = self.clock.now();
        if commit {
            for (group, tp, offset) in &txn.offsets {
                self.offsets_only_group(group, &tp.topic)?;
                let (epoch, metadata) = txn
                    .offset_details
                    .iter()
                    .find(|(g, t, _, _)| g == group && t == tp)
                    .map_or((-1, String::new()), |(_, _, e, m)| (*e, m.clone()));
                self.offsets
                    .commit_offset_with(group, tp, *offset, epoch, metadata, now);
            }
        }
        self.say(
            if commit {
                EventKind::Commit
            } else {
                EventKind::Warning
            },
            format!(
                "transactional.id={txn_id} {} its transaction: {} marker(s) at {}; {} record(s){}",
                if commit { "commits" } else { "aborts" },
                if commit { "COMMIT" } else { "ABORT" },
                if markers.is_empty() {
                    "no partition".to_string()
                } else {
                    markers.join(", ")
                },
                txn.writes.len(),
                if commit {
                    format!(
                        " now visible to read_committed readers, {} group offset(s) committed",
                        txn.offsets.len()
                    )
                } else {
                    " stay in the log, skipped by read_committed readers; its offsets are dropped".to_string()
                }
            ),
        );
        Ok(())
    }
}
