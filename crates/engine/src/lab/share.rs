//! Share groups in the lab: share consumers joining, polling (acquiring), processing,
//! acknowledging, crashing and closing; the group configs. The rules themselves are in
//! `crate::share`; this file joins them to the lab's topics, clock and narrative. The timers
//! (lock expiry, session expiry) are in `share_timers.rs`.
//!
//! Nothing here writes to a partition log: a share group reads the log and keeps its state
//! beside it, so a consumer group on the same topic still reads every record.

use super::transactions::Fetched;
use super::Lab;
use crate::consumer::ConsumerState;
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::record::{Offset, TopicPartition};
use crate::share::partition::Transition;
use crate::share::{
    AcknowledgeType, AcknowledgementMode, AcquireMode, HeldRecord, ShareAutoOffsetReset, ShareConsumer,
    ShareConsumerConfig, ShareGroup, ShareGroupConfigChange, ShareMember, SharePartition, ShareState,
};
use crate::txn::IsolationLevel;

impl Lab {
    /// Every share group and share consumer.
    pub fn share(&self) -> &ShareState {
        &self.share
    }

    pub fn share_group(&self, name: &str) -> Result<&ShareGroup, LabError> {
        self.share
            .groups
            .get(name)
            .ok_or_else(|| LabError::UnknownGroup(name.to_string()))
    }

    pub fn share_consumer(&self, name: &str) -> Result<&ShareConsumer, LabError> {
        self.share
            .consumers
            .get(name)
            .ok_or_else(|| LabError::UnknownConsumer(name.to_string()))
    }

    /// Whether `name` is one of the lab's share consumers.
    pub fn is_share_consumer(&self, name: &str) -> bool {
        self.share.consumers.contains_key(name)
    }

    /// Refuses a consumer group's member in a share group's name, and the reverse: Kafka
    /// answers INCONSISTENT_GROUP_PROTOCOL, a group id having one type.
    pub(crate) fn check_group_type(&self, group: &str, share: bool) -> Result<(), LabError> {
        let clash = if share {
            self.groups.contains_key(group)
        } else {
            self.share.groups.contains_key(group)
        };
        if clash {
            let (is, not) = if share {
                ("a consumer group", "share")
            } else {
                ("a share group", "consumer")
            };
            return Err(LabError::InconsistentGroupProtocol(format!(
                "group '{group}' is {is}: a {not} consumer cannot join it"
            )));
        }
        Ok(())
    }

    /// `KafkaShareConsumer.subscribe()` and its first heartbeat: the consumer joins share
    /// group `group` (created with Kafka's default configs when it is new) and the share
    /// assignor runs.
    pub fn add_share_consumer(&mut self, config: ShareConsumerConfig) -> Result<(), LabError> {
        self.check_new_consumer(
            &config.name,
            &config.group,
            &config.topic,
            config.max_poll_records,
        )?;
        self.check_group_type(&config.group, true)?;
        let group = config.group.clone();
        let name = config.name.clone();
        self.share_group_entry(&group);
        self.say(
            EventKind::Setup,
            format!(
                "share consumer {name} starts in share group {group}, subscribed to {} (share.acknowledgement.mode={}, max.poll.records={}, share.acquire.mode={})",
                config.topic, config.acknowledgement_mode, config.max_poll_records, config.acquire_mode
            ),
        );
        self.share
            .consumers
            .insert(name.clone(), ShareConsumer::new(config));
        self.share_join(&name)
    }

    /// The consumer's current incarnation joins its group; every member's assignment is
    /// computed again.
    pub(crate) fn share_join(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.share_consumer(name)?;
        let member = ShareMember {
            id: c.member_id(),
            consumer: name.to_string(),
            topics: vec![c.config.topic.clone()],
            client: false,
            crashed_at: None,
            assignment: Default::default(),
        };
        let group = c.config.group.clone();
        let id = member.id.clone();
        self.share_group_entry(&group).members.push(member);
        self.share_reassign(&group)?;
        let assigned = self
            .share_group(&group)?
            .member(&id)
            .map(|m| m.assignment.clone())
            .unwrap_or_default();
        self.say(
            EventKind::Group,
            format!(
                "{id} joined share group {group}; the share assignor gives it {} (a partition may be shared by several members)",
                list(assigned.iter())
            ),
        );
        Ok(())
    }

    /// The share group `group`, created with Kafka's default configs when it is new, and back
    /// when it was deleted and kept for the lab's own consumers: what a join, a config or an
    /// offsets change does to a group id.
    pub(crate) fn share_group_entry(&mut self, group: &str) -> &mut ShareGroup {
        let g = self
            .share
            .groups
            .entry(group.to_string())
            .or_insert_with(|| ShareGroup::new(group, Default::default()));
        g.deleted = false;
        g
    }

    pub(crate) fn share_group_mut(&mut self, name: &str) -> Result<&mut ShareGroup, LabError> {
        self.share
            .groups
            .get_mut(name)
            .ok_or_else(|| LabError::UnknownGroup(name.to_string()))
    }

    /// Runs the share assignor over the group's members.
    pub(crate) fn share_reassign(&mut self, group: &str) -> Result<(), LabError> {
        let partitions: std::collections::BTreeMap<String, usize> = self
            .topics
            .iter()
            .map(|(n, t)| (n.clone(), t.partitions.len()))
            .collect();
        self.share_group_mut(group)?.reassign(|topic| {
            (0..partitions.get(topic).copied().unwrap_or(0))
                .map(|p| TopicPartition::new(topic, p as i32))
                .collect()
        });
        Ok(())
    }

    /// `ShareConsumer.poll()`. In implicit mode it first accepts every record the previous
    /// poll handed over. Then it acquires up to `max.poll.records` records from the member's
    /// partitions: Available records of each window first, then records past its end, as far
    /// as `share.partition.max.record.locks` allows.
    pub fn share_poll(&mut self, name: &str) -> Result<usize, LabError> {
        let c = self.running_share(name, "restart it before polling")?;
        let (mode, group, max, acquire) = (
            c.config.acknowledgement_mode,
            c.config.group.clone(),
            c.config.max_poll_records,
            c.config.acquire_mode,
        );
        let member = c.member_id();
        match mode {
            AcknowledgementMode::Implicit => self.implicit_accept(name, "poll()")?,
            AcknowledgementMode::Explicit => self.drop_lost_locks(name)?,
        }
        let assignment = self
            .share_group(&group)?
            .member(&member)
            .map(|m| m.assignment.clone())
            .unwrap_or_default();
        let mut handed = Vec::new();
        for tp in assignment {
            if handed.len() >= max {
                break;
            }
            handed.extend(self.acquire_from(&group, &member, &tp, max - handed.len(), acquire)?);
        }
        let c = self.share_consumer_mut(name)?;
        c.last_poll = handed.iter().map(|h| (h.tp.clone(), h.offset)).collect();
        c.held.extend(handed.iter().cloned());
        let again = handed.iter().filter(|h| h.delivery_count > 1).count();
        let text = if handed.is_empty() {
            format!("share poll: {member} acquired nothing")
        } else {
            format!(
                "share poll: {member} acquired {} record(s): {}{}",
                handed.len(),
                held_list(&handed),
                if again > 0 {
                    format!(" — {again} of them delivered before (a redelivery)")
                } else {
                    String::new()
                }
            )
        };
        self.say(EventKind::Poll, text);
        // The poll returned: an observable effect (the explorer may crash the consumer here).
        self.effect(name);
        Ok(handed.len())
    }

    /// Acquires up to `max` records of one share partition for `member`: Available records of
    /// the window first, one by one, then records past its end — in `batch-optimized` mode
    /// (Kafka's default) to the end of the producer batch the last of them is in, past `max`.
    pub(crate) fn acquire_from(
        &mut self,
        group: &str,
        member: &str,
        tp: &TopicPartition,
        max: usize,
        mode: AcquireMode,
    ) -> Result<Vec<HeldRecord>, LabError> {
        self.init_share_partition(group, tp)?;
        self.follow_log_start_of(group, tp)?;
        let g = self.share_group(group)?;
        let (limit_locks, lock_ms) = (
            g.config.partition_max_record_locks,
            g.config.record_lock_duration_ms,
        );
        let Some(p) = g.partitions.get(tp) else {
            return Ok(Vec::new());
        };
        let (again, isolated) = self.redeliverable(tp, p, g.config.delivery_count_limit, max)?;
        let fresh_max = if isolated {
            0
        } else {
            (max - again.len()).min(p.room(limit_locks))
        };
        let mut fetched = if fresh_max > 0 {
            Some(self.fetch(tp, p.end_offset, fresh_max, IsolationLevel::ReadUncommitted)?)
        } else {
            None
        };
        if let (Some(f), AcquireMode::BatchOptimized) = (fetched.as_mut(), mode) {
            self.finish_batch(tp, f)?;
        }
        let until = self.now().saturating_add(lock_ms);
        let g = self.share_group_mut(group)?;
        let mut out = Vec::new();
        let mut acquire = |g: &mut ShareGroup, offset: Offset, next_end: Offset| {
            let count = g
                .partitions
                .get_mut(tp)
                .map_or(0, |p| p.acquire(offset, member, until, next_end));
            g.audit.entry(tp.clone()).or_default().acquisitions += 1;
            out.push(HeldRecord {
                tp: tp.clone(),
                offset,
                delivery_count: count,
                processed: false,
            });
        };
        for o in again {
            acquire(g, o, o + 1);
        }
        if let Some(f) = fetched {
            let last = f.records.len().saturating_sub(1);
            for (i, r) in f.records.iter().enumerate() {
                // The SPEO moves past what the fetch stepped over (markers) with its last record.
                acquire(
                    g,
                    r.offset,
                    if i == last { f.next_position } else { r.offset + 1 },
                );
            }
        }
        Ok(out)
    }

    /// The Available records of `p`'s window a fetch acquires again, in offset order, up to
    /// `max` — and whether the fetch stops there, acquiring nothing new. Kafka throttles
    /// records that keep coming back (KAFKA-17541, Kafka 4.2+), so that a poison record cannot
    /// take good ones down with it. It judges an in-flight batch (here: the producer batch the
    /// records came in) by the most deliveries among its available records: from
    /// `max(2, ⌈limit / 2⌉)` on, the batch is handed out only at the head of a fetch, at most its
    /// size halved for each delivery past that threshold (at least one record, counted from its
    /// first record that reached the threshold), and nothing after it; a record on its last
    /// delivery goes alone. Measured on Apache Kafka 4.4 (limit 3): a record released twice came
    /// back alone, the new records behind it in the next poll. (Kafka hands an unthrottled
    /// released batch back whole; the lab one record at a time, up to `max`.)
    fn redeliverable(
        &self,
        tp: &TopicPartition,
        p: &SharePartition,
        limit: u16,
        max: usize,
    ) -> Result<(Vec<Offset>, bool), LabError> {
        let throttle_at = (limit.div_ceil(2)).max(2);
        let count = |o: Offset| p.record(o).map_or(0, |r| r.delivery_count);
        // No record near the limit: one record at a time, and no log read at all.
        if p.available().all(|o| count(o) < throttle_at) {
            return Ok((p.available().take(max).collect(), false));
        }
        let log = self.partition_log(tp)?;
        let available: Vec<(Offset, u16, Offset)> =
            p.available().map(|o| (o, count(o), log.batch_end(o))).collect();
        let mut again = Vec::new();
        // The batch being taken: its end, whether it is throttled, what it took and may take.
        let mut batch: Option<(Offset, bool, usize, Option<usize>)> = None;
        for &(o, d, end) in &available {
            if again.len() >= max {
                break;
            }
            if batch.is_none_or(|(e, ..)| e != end) {
                if batch.is_some_and(|(_, throttled, ..)| throttled) {
                    return Ok((again, true));
                }
                let most = available
                    .iter()
                    .filter(|(_, _, e)| *e == end)
                    .map(|(_, d, _)| *d)
                    .max()
                    .unwrap_or(0);
                let throttled = most >= throttle_at;
                if throttled && !again.is_empty() {
                    // Isolated: it heads the next fetch.
                    return Ok((again, true));
                }
                batch = Some((end, throttled, 0, None));
            }
            let Some((_, _, taken, room)) = batch.as_mut() else {
                continue;
            };
            if limit > 2 && d + 1 == limit && *taken > 0 {
                return Ok((again, true));
            }
            if d >= throttle_at && room.is_none() {
                // Kafka halves the in-flight batch: every record of it the window holds.
                let size = p.records().filter(|(r, _)| log.batch_end(*r) == end).count();
                let shift = u32::from(d - throttle_at + 1);
                *room = Some(size.checked_shr(shift).unwrap_or(0).max(1));
            }
            again.push(o);
            *taken += 1;
            if limit > 2 && d + 1 == limit {
                return Ok((again, true));
            }
            if room.is_some_and(|m| *taken >= m) {
                return Ok((again, true));
            }
        }
        let throttled = batch.is_some_and(|(_, throttled, taken, _)| throttled && taken > 0);
        Ok((again, throttled))
    }

    /// Kafka's `batch_optimized` acquisition: a share fetch hands out whole batches, so the
    /// batch its last record is in is fetched to its end.
    fn finish_batch(&self, tp: &TopicPartition, f: &mut Fetched) -> Result<(), LabError> {
        let Some(last) = f.records.last().map(|r| r.offset) else {
            return Ok(());
        };
        let end = self.partition_log(tp)?.batch_end(last);
        if end <= last + 1 {
            return Ok(());
        }
        let rest = usize::try_from(end - last - 1).unwrap_or(usize::MAX);
        let more = self.fetch(tp, last + 1, rest, IsolationLevel::ReadUncommitted)?;
        let before = f.records.len();
        f.records
            .extend(more.records.into_iter().filter(|r| r.offset < end));
        if f.records.len() > before {
            f.next_position = f.next_position.max(f.records[f.records.len() - 1].offset + 1);
        }
        Ok(())
    }

    /// Creates the share partition the first time the group reads it: the SPSO starts where
    /// `share.auto.offset.reset` says — resolved at this first fetch, as Kafka's partition
    /// leader resolves it when it first loads the partition, not when the member joined.
    fn init_share_partition(&mut self, group: &str, tp: &TopicPartition) -> Result<(), LabError> {
        if self.share_group(group)?.partitions.contains_key(tp) {
            return Ok(());
        }
        let log = self.partition_log(tp)?;
        let reset = self.share_group(group)?.config.auto_offset_reset;
        let start = match reset {
            ShareAutoOffsetReset::Latest => log.log_end_offset(),
            ShareAutoOffsetReset::Earliest => log.log_start_offset(),
        };
        let g = self.share_group_mut(group)?;
        g.partitions.insert(tp.clone(), SharePartition::new(start));
        g.unstarted.remove(tp);
        let audit = g.audit.entry(tp.clone()).or_default();
        // Read again after DeleteShareGroupOffsets: the reset starts somewhere else.
        if let Some(pending) = audit.forgotten.take() {
            audit.start_moved(&pending, start);
        }
        self.say(
            EventKind::Group,
            format!("share group {group} starts reading {tp} at offset {start} (share.auto.offset.reset={reset}): that is its share-partition start offset (SPSO)"),
        );
        Ok(())
    }

    /// The SPSO follows the log start of one partition (retention, DeleteRecords).
    pub(crate) fn follow_log_start_of(&mut self, group: &str, tp: &TopicPartition) -> Result<(), LabError> {
        let Ok(log) = self.partition_log(tp) else {
            return Ok(());
        };
        let start = log.log_start_offset();
        let g = self.share_group_mut(group)?;
        let Some(p) = g.partitions.get_mut(tp) else {
            return Ok(());
        };
        let done = p.follow_log_start(start);
        if !done.is_empty() {
            let n = done.len();
            g.record_completions(tp, &done);
            self.say(
                EventKind::Warning,
                format!("{n} available record(s) of {tp} were deleted from the log before share group {group} delivered them: archived, lost to it"),
            );
        }
        Ok(())
    }

    /// `process` for a share consumer: the application applies the next `count` records it
    /// holds and has not processed yet (all of them with `None`).
    pub(crate) fn share_process(&mut self, name: &str, count: Option<usize>) -> Result<usize, LabError> {
        let c = self.running_share(name, "restart it before processing")?;
        if count == Some(0) {
            return Err(LabError::InvalidArgument("count must be at least 1".into()));
        }
        let todo: Vec<usize> = c
            .held
            .iter()
            .enumerate()
            .filter(|(_, h)| !h.processed)
            .map(|(i, _)| i)
            .take(count.unwrap_or(usize::MAX))
            .collect();
        if todo.is_empty() {
            return Err(LabError::NothingInFlight(name.to_string()));
        }
        let (group, member) = (c.config.group.clone(), c.member_id());
        let mut records: Vec<HeldRecord> = Vec::new();
        let mut twice = 0;
        // One record at a time: each write is an observable effect, and the explorer may crash
        // the consumer right after any of them.
        for &i in &todo {
            let c = self.share_consumer_mut(name)?;
            let Some(h) = c.held.get_mut(i) else {
                continue;
            };
            h.processed = true;
            let h = h.clone();
            let audit = self
                .share_group_mut(&group)?
                .audit
                .entry(h.tp.clone())
                .or_default();
            if audit.applied.contains_key(&h.offset) {
                twice += 1;
            }
            audit.applied_once_more(h.offset);
            records.push(h);
            if self.effect(name) {
                break;
            }
        }
        self.say(
            EventKind::Process,
            format!("{member} processed {}", held_list(&records)),
        );
        if twice > 0 {
            self.say(
                EventKind::Warning,
                format!("{twice} of them had been applied before: duplicates (an earlier delivery was processed and never acknowledged)"),
            );
        }
        Ok(records.len())
    }

    /// `acknowledge(record, type)` for each named record, then `commitSync()`: the share
    /// partition applies them at once. Only in explicit mode; the records must be held by this
    /// consumer and still acquired by its member — else INVALID_RECORD_STATE, and nothing of
    /// the line is applied.
    pub fn share_acknowledge(
        &mut self,
        name: &str,
        records: Option<&[(TopicPartition, Offset)]>,
        ack: AcknowledgeType,
    ) -> Result<usize, LabError> {
        let c = self.running_share(name, "a dead consumer acknowledges nothing")?;
        if c.config.acknowledgement_mode == AcknowledgementMode::Implicit {
            return Err(LabError::InvalidArgument(format!(
                "{name} acknowledges implicitly (share.acknowledgement.mode=implicit): its next poll or commit accepts what it holds; start it with ack=explicit to acknowledge records one by one"
            )));
        }
        let picked: Vec<(TopicPartition, Offset)> = match records {
            None => c.held.iter().map(|h| (h.tp.clone(), h.offset)).collect(),
            Some(r) => r.to_vec(),
        };
        if picked.is_empty() {
            return Err(LabError::NothingInFlight(name.to_string()));
        }
        if let Some((tp, o)) = picked
            .iter()
            .find(|(tp, o)| !c.held.iter().any(|h| &h.tp == tp && h.offset == *o))
        {
            return Err(LabError::InvalidRecordState(format!(
                "{name} does not hold offset {o} of {tp} (it holds {})",
                held_list(&c.held)
            )));
        }
        let (group, member) = (c.config.group.clone(), c.member_id());
        let by_tp = by_partition(&picked);
        let g = self.share_group(&group)?;
        for (tp, offsets) in &by_tp {
            let p = g.partitions.get(tp).ok_or_else(|| {
                LabError::InvalidRecordState(format!("share group {group} has no in-flight records of {tp}"))
            })?;
            p.check_held(&member, offsets)?;
        }
        let g = self.share_group_mut(&group)?;
        let limit = g.config.delivery_count_limit;
        let mut done = Vec::new();
        for (tp, offsets) in &by_tp {
            if let Some(p) = g.partitions.get_mut(tp) {
                let t = p.acknowledge(&member, offsets, ack, limit)?;
                g.record_completions(tp, &t);
                done.extend(t.into_iter().map(|t| (tp.clone(), t)));
            }
        }
        let c = self.share_consumer_mut(name)?;
        c.held
            .retain(|h| !picked.iter().any(|(tp, o)| &h.tp == tp && h.offset == *o));
        self.say(
            EventKind::Commit,
            format!(
                "{member} acknowledged {} — {ack}: {}",
                list(picked.iter().map(|(tp, o)| format!("{tp}@{o}"))),
                outcome(&done)
            ),
        );
        // The acknowledgement landed: an observable effect.
        self.effect(name);
        Ok(picked.len())
    }

    /// Implicit acknowledgement (at `poll()`, `commitSync()`): every record the consumer holds
    /// is accepted, processed or not. Acknowledgements are atomic per partition: when one
    /// record of a partition is no longer this member's (its lock expired), none of that
    /// partition's is applied, and the ones still held wait for their own locks to expire.
    pub(crate) fn implicit_accept(&mut self, name: &str, how: &str) -> Result<(), LabError> {
        let c = self.share_consumer(name)?;
        if c.held.is_empty() {
            return Ok(());
        }
        let (group, member) = (c.config.group.clone(), c.member_id());
        let picked: Vec<(TopicPartition, Offset)> = c.held.iter().map(|h| (h.tp.clone(), h.offset)).collect();
        let unprocessed = c.held.iter().filter(|h| !h.processed).count();
        self.share_consumer_mut(name)?.held.clear();
        let g = self.share_group_mut(&group)?;
        let limit = g.config.delivery_count_limit;
        let mut notes = Vec::new();
        for (tp, offsets) in by_partition(&picked) {
            let Some(p) = g.partitions.get_mut(&tp) else {
                continue;
            };
            match p.acknowledge(&member, &offsets, AcknowledgeType::Accept, limit) {
                Ok(t) => {
                    g.record_completions(&tp, &t);
                    notes.push((EventKind::Commit, format!("{how} of {member} implicitly accepted {} record(s) of {tp}", t.len())));
                }
                Err(e) => notes.push((
                    EventKind::Warning,
                    format!("{how} of {member}: the implicit acknowledgement of {tp} failed ({e}); none of its records there was accepted — they come back when their locks expire"),
                )),
            }
        }
        if unprocessed > 0 {
            notes.push((EventKind::Warning, format!("{unprocessed} of the accepted record(s) were never processed by {name}: accepted unprocessed, they are lost to the group")));
        }
        for (kind, text) in notes {
            self.say(kind, text);
        }
        Ok(())
    }

    /// In explicit mode a poll forgets records the member no longer holds (their lock
    /// expired): the broker would refuse their acknowledgement.
    fn drop_lost_locks(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.share_consumer(name)?;
        let (group, member) = (c.config.group.clone(), c.member_id());
        let g = self.share_group(&group)?;
        let still: Vec<bool> = c
            .held
            .iter()
            .map(|h| {
                g.partitions
                    .get(&h.tp)
                    .is_some_and(|p| p.check_held(&member, &[h.offset]).is_ok())
            })
            .collect();
        let mut keep = still.into_iter();
        self.share_consumer_mut(name)?
            .held
            .retain(|_| keep.next().unwrap_or(false));
        Ok(())
    }

    /// `alter-share-group`: Kafka's group configs of a share group (IncrementalAlterConfigs on
    /// a GROUP resource). A group that does not exist yet gets them for its first member. A
    /// new `share.auto.offset.reset` applies only to partitions the group has not started
    /// reading: an SPSO, once set, moves only with the records.
    pub fn alter_share_group(
        &mut self,
        group: &str,
        change: &ShareGroupConfigChange,
    ) -> Result<(), LabError> {
        crate::names::check_group_id(group)?;
        if change.is_empty() {
            return Err(LabError::InvalidArgument(
                "alter-share-group: nothing to change".into(),
            ));
        }
        change.validate()?;
        self.check_group_type(group, true)?;
        let g = self.share_group_entry(group);
        g.config = change.applied_to(&g.config);
        let c = g.config.clone();
        self.say(
            EventKind::Setup,
            format!(
                "share group {group}: share.auto.offset.reset={}, share.record.lock.duration.ms={}, share.delivery.count.limit={}, share.partition.max.record.locks={}, share.session.timeout.ms={}",
                c.auto_offset_reset,
                crate::clock::format_duration(c.record_lock_duration_ms),
                c.delivery_count_limit,
                c.partition_max_record_locks,
                crate::clock::format_duration(c.session_timeout_ms)
            ),
        );
        Ok(())
    }

    pub(crate) fn share_consumer_mut(&mut self, name: &str) -> Result<&mut ShareConsumer, LabError> {
        self.share
            .consumers
            .get_mut(name)
            .ok_or_else(|| LabError::UnknownConsumer(name.to_string()))
    }

    pub(crate) fn running_share(&self, name: &str, hint: &'static str) -> Result<&ShareConsumer, LabError> {
        let c = self.share_consumer(name)?;
        if c.state == ConsumerState::Running {
            Ok(c)
        } else {
            Err(LabError::WrongState {
                name: name.to_string(),
                state: c.state.label().to_string(),
                hint,
            })
        }
    }
}

/// Offsets grouped by partition, in order.
fn by_partition(
    records: &[(TopicPartition, Offset)],
) -> std::collections::BTreeMap<TopicPartition, Vec<Offset>> {
    let mut out: std::collections::BTreeMap<TopicPartition, Vec<Offset>> = Default::default();
    for (tp, o) in records {
        out.entry(tp.clone()).or_default().push(*o);
    }
    out
}

/// `orders-0@3 (delivery 2)`, …
pub(crate) fn held_list(records: &[HeldRecord]) -> String {
    list(records.iter().map(|h| {
        if h.delivery_count > 1 {
            format!("{}@{} (delivery {})", h.tp, h.offset, h.delivery_count)
        } else {
            format!("{}@{}", h.tp, h.offset)
        }
    }))
}

/// What became of acknowledged records.
pub(crate) fn outcome(done: &[(TopicPartition, Transition)]) -> String {
    list(done.iter().map(|(tp, t)| {
        let why = match t.completion {
            Some(crate::share::partition::Completion::Archived {
                reason: crate::share::partition::ArchiveReason::DeliveryLimit,
            }) => format!(
                " (delivery {} reached share.delivery.count.limit)",
                t.delivery_count
            ),
            _ => String::new(),
        };
        format!("{tp}@{} {}{why}", t.offset, t.to)
    }))
}

pub(crate) fn list<T: std::fmt::Display>(items: impl Iterator<Item = T>) -> String {
    let v: Vec<String> = items.map(|i| i.to_string()).collect();
    if v.is_empty() {
        "nothing".to_string()
    } else {
        v.join(", ")
    }
}
