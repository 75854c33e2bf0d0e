//! The poll loop: poll, process, commit, seek — and the commits each strategy makes on its own.

use super::Lab;
use crate::audit::Delivery;
use crate::consumer::{ConsumerConfig, InFlight, PositionOrigin};
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::record::{Offset, TopicPartition};
use crate::sink::{SinkWrite, WriteOutcome};
use crate::strategy::{AutoOffsetReset, CommitCall, CommitWhen};

/// Where a seek goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeekTarget {
    Earliest,
    Latest,
    Offset(Offset),
    /// The earliest offset whose timestamp is ≥ this (epoch ms).
    Timestamp(i64),
}

/// Consecutive first deliveries of one partition being applied, narrated as one line when the
/// run ends: (partition, first offset, last offset, records).
type AppliedRun = Option<(TopicPartition, Offset, Offset, usize)>;

/// What one poll fetched.
#[derive(Default)]
struct Fetched {
    fetched: Vec<InFlight>,
    /// (partition, first offset, last offset) of what each partition handed over.
    per_tp: Vec<(TopicPartition, Offset, Offset)>,
    /// New fetch positions: past the last record handed over, and past any transaction marker
    /// (or, read_committed, aborted record) the fetch stepped over.
    moved: Vec<(TopicPartition, Offset)>,
}

impl Lab {
    /// `poll()`: hands up to `max.poll.records` records to the application.
    pub fn poll(&mut self, name: &str) -> Result<usize, LabError> {
        if self.is_share_consumer(name) {
            return Err(LabError::InvalidArgument(format!(
                "{name} is a share consumer: its poll acquires records (share-poll {name})"
            )));
        }
        self.running(name, "restart it before polling")?;
        let now = self.now();
        let c = self.consumer_mut(name)?;
        c.last_poll_at = now;
        c.last_poll.clear();
        if self.rejoin_if_needed(name)? {
            return Ok(0);
        }
        if self.reconcile_in_poll(name)? {
            return Ok(0);
        }
        let c = self.consumer(name)?;
        let cfg = c.config.clone();
        let member = c.member_id();
        let auto_commit_due = c.next_auto_commit;
        let now = self.now();
        if self.fetches_through_rebalance(&member, &cfg.group, name) {
            self.say(
                EventKind::Poll,
                format!("{member} polls while group {} rebalances: under the cooperative protocol (KIP-429) a member that rejoined keeps its partitions until the new assignment says which move, and goes on fetching them", cfg.group),
            );
        } else if self.still_rebalancing(&member, &cfg.group) {
            return Ok(0);
        }
        if let Some(error) = self.consumer(name)?.pending_error.clone() {
            self.fail(name, error);
            return Ok(0);
        }
        // Java auto-commit runs at the start of poll(), committing what earlier polls returned.
        let rules = cfg.strategy.rules();
        if rules.when == CommitWhen::InsidePoll && auto_commit_due.is_some_and(|d| now >= d) {
            if let Some(c) = self.consumers.get_mut(name) {
                c.next_auto_commit = Some(now + cfg.auto_commit_interval_ms);
            }
            if self.commit_from(name, rules.takes, "auto-commit inside poll()", true) {
                return Ok(0);
            }
        }
        let tps: Vec<TopicPartition> = self.consumer(name)?.assignment.keys().cloned().collect();
        if tps.is_empty() {
            self.say(
                EventKind::Poll,
                format!("{member} polled: no partitions assigned, nothing to fetch"),
            );
            return Ok(0);
        }
        let Some(Fetched {
            mut fetched,
            per_tp,
            moved,
        }) = self.fetch_for_poll(name, &cfg, &tps)?
        else {
            return Ok(0); // auto.offset.reset=none stopped the consumer
        };
        let n = fetched.len();
        if let Some(last) = fetched.last_mut() {
            last.last_of_batch = true;
        }
        let c = self.consumer_mut(name)?;
        c.poll_cursor = c.poll_cursor.wrapping_add(1);
        for (tp, next) in &moved {
            if let Some(fs) = c.assignment.get_mut(tp) {
                fs.position = *next;
            }
        }
        for (tp, _, last) in &per_tp {
            if let Some(fs) = c.assignment.get_mut(tp) {
                if rules.stores_on_poll {
                    // enable.auto.offset.store: stored the moment the record is handed over.
                    fs.stored = Some(last + 1);
                }
            }
        }
        let backlog = c.in_flight.len();
        c.last_poll = fetched.iter().map(|f| (f.tp.clone(), f.record.offset)).collect();
        c.in_flight.extend(fetched);
        self.say_polled(name, &cfg, &tps, &per_tp, n, backlog)?;
        if self.effect(name) {
            return Ok(n);
        }
        if rules.when == CommitWhen::AfterPoll && n > 0 && cfg.commits_to_kafka() {
            self.commit_from(name, rules.takes, "commit before processing", true);
        }
        Ok(n)
    }

    /// Whether this poll fetches although the group rebalances: a cooperative member that has
    /// rejoined owns its partitions until the rebalance completes (the moving ones are revoked
    /// only then), and Kafka's clients go on fetching them meanwhile — only an eager member, or
    /// one with nothing yet, waits.
    fn fetches_through_rebalance(&self, member: &str, group: &str, name: &str) -> bool {
        let Some(g) = self.groups.get(group) else {
            return false;
        };
        g.cooperative()
            && g.rebalance.as_ref().is_some_and(|r| r.rejoined.contains(member))
            && self.consumers.get(name).is_some_and(|c| !c.assignment.is_empty())
    }

    /// A poll while the group rebalances gets nothing: the narrative says whom it waits for.
    fn still_rebalancing(&mut self, member: &str, group: &str) -> bool {
        let Some(g) = self.groups.get(group).filter(|g| g.rebalance.is_some()) else {
            return false;
        };
        let waiting: Vec<String> = g
            .waiting_for()
            .iter()
            .map(|m| match m.expires_at {
                Some(t) => format!(
                    "{} (dead; its session expires at {})",
                    m.id,
                    crate::clock::format_instant(t)
                ),
                None => format!("{} (alive; rejoins at its next poll)", m.id),
            })
            .collect();
        let text = format!(
            "{member} polled: group {group} is still rebalancing and waits for {}; no records until it completes",
            waiting.join(", ")
        );
        self.say(EventKind::Poll, text);
        true
    }

    /// Up to `max.poll.records` records from the assigned partitions, taking turns from the
    /// poll cursor on; `None` when `auto.offset.reset=none` stopped the consumer.
    fn fetch_for_poll(
        &mut self,
        name: &str,
        cfg: &ConsumerConfig,
        tps: &[TopicPartition],
    ) -> Result<Option<Fetched>, LabError> {
        let cursor = self.consumer(name)?.poll_cursor % tps.len();
        let mut out = Fetched::default();
        for i in 0..tps.len() {
            let tp = &tps[(cursor + i) % tps.len()];
            let room = cfg.max_poll_records - out.fetched.len();
            if room == 0 {
                break;
            }
            let Some(position) = self.checked_position(name, tp)? else {
                return Ok(None);
            };
            let batch = self.fetch(tp, position, room, cfg.isolation)?;
            if batch.next_position != position {
                out.moved.push((tp.clone(), batch.next_position));
            }
            if let (Some(first), Some(last)) = (batch.records.first(), batch.records.last()) {
                out.per_tp.push((tp.clone(), first.offset, last.offset));
            }
            out.fetched
                .extend(batch.records.into_iter().map(|record| InFlight {
                    tp: tp.clone(),
                    record,
                    last_of_batch: false,
                }));
        }
        Ok(Some(out))
    }

    /// The narrative's line for a poll that handed over `n` records.
    fn say_polled(
        &mut self,
        name: &str,
        cfg: &ConsumerConfig,
        tps: &[TopicPartition],
        per_tp: &[(TopicPartition, Offset, Offset)],
        n: usize,
        backlog: usize,
    ) -> Result<(), LabError> {
        let c = self.consumer(name)?;
        let member = c.member_id();
        let at: Vec<String> = tps
            .iter()
            .filter_map(|tp| c.assignment.get(tp).map(|f| format!("{tp}@{}", f.position)))
            .collect();
        // read_committed: partitions held back by an open transaction.
        let held: Vec<String> = if cfg.isolation == crate::txn::IsolationLevel::ReadCommitted {
            self.held_back(tps)
                .into_iter()
                .map(|(tp, lso, end)| format!("{tp} stops at the last stable offset {lso} (log end {end})"))
                .collect()
        } else {
            Vec::new()
        };
        if n == 0 && held.is_empty() {
            self.say(
                EventKind::Poll,
                format!("{member} polled: no new records (caught up at {})", at.join(", ")),
            );
        } else if n == 0 {
            self.say(
                EventKind::Poll,
                format!("{member} polled nothing it may read: read_committed, and a transaction is still open — {}", held.join("; ")),
            );
        } else {
            let ranges: Vec<String> = per_tp
                .iter()
                .map(|(tp, a, b)| format!("{a}..{b} from {tp}"))
                .collect();
            let mut text = format!(
                "{member} polled offsets {} ({n} record(s) now in flight",
                ranges.join(" and ")
            );
            if backlog > 0 {
                text.push_str(&format!(", on top of {backlog} still unprocessed"));
            }
            text.push(')');
            if !held.is_empty() {
                text.push_str(&format!("; read_committed: {}", held.join("; ")));
            }
            self.say(EventKind::Poll, text);
        }
        Ok(())
    }

    /// The fetch position of `tp`, after `auto.offset.reset` if it is out of range. `None` when
    /// the reset policy is `none` and the consumer stopped.
    fn checked_position(&mut self, name: &str, tp: &TopicPartition) -> Result<Option<Offset>, LabError> {
        let c = self.consumer(name)?;
        let Some(fs) = c.assignment.get(tp) else {
            return Ok(None);
        };
        let position = fs.position;
        let policy = c.config.auto_offset_reset;
        let member = c.member_id();
        let log = self.partition_log(tp)?;
        let (start, end) = (log.log_start_offset(), log.log_end_offset());
        if (start..=end).contains(&position) {
            return Ok(Some(position));
        }
        let what = format!("{member}'s fetch position {position} is out of range for {tp} (log start {start}, log end {end})");
        let target = match policy {
            AutoOffsetReset::Earliest => start,
            AutoOffsetReset::Latest => self.latest_offset(tp, c.config.isolation)?,
            AutoOffsetReset::None => {
                self.fail(
                    name,
                    format!("{what} and auto.offset.reset=none: OffsetOutOfRangeException"),
                );
                return Ok(None);
            }
        };
        let skipped = if position < start {
            format!(
                " — records {position}..{} were deleted before this group read them",
                start - 1
            )
        } else {
            String::new()
        };
        self.say(
            EventKind::Warning,
            format!("{what}: auto.offset.reset={policy} → {target}{skipped}"),
        );
        if let Some(fs) = self.consumer_mut(name)?.assignment.get_mut(tp) {
            fs.position = target;
            fs.origin = PositionOrigin::OutOfRange;
        }
        // A seek past the log end skipped nothing beyond it: records produced later there will
        // be read. (What it jumped over inside the log stays skipped.)
        let group = self.consumer(name)?.config.group.clone();
        if let Some(g) = self.groups.get_mut(&group) {
            g.audit.clip_skipped(tp, target.max(end));
        }
        Ok(Some(target))
    }

    /// Processes `count` in-flight records (all of them with `None`), writing each to the
    /// group's sink (or, with Kafka transactions, producing its output inside the open
    /// transaction), and makes the commits the strategy makes after processing.
    pub fn process(&mut self, name: &str, count: Option<usize>) -> Result<usize, LabError> {
        if self.is_share_consumer(name) {
            return self.share_process(name, count);
        }
        let c = self.running(name, "restart it before processing")?;
        if c.in_flight.is_empty() {
            return Err(LabError::NothingInFlight(name.to_string()));
        }
        if count == Some(0) {
            return Err(LabError::InvalidArgument("count must be at least 1".into()));
        }
        let n = count.unwrap_or(usize::MAX).min(c.in_flight.len());
        let mut done = 0;
        let mut run: AppliedRun = None;
        while done < n {
            let c = self.consumer(name)?;
            let Some(item) = c.in_flight.front().cloned() else {
                break;
            };
            let cfg = c.config.clone();
            let member = c.member_id();
            let origin = c.assignment.get(&item.tp).map(|f| f.origin);
            // A zombie — removed from its group (max.poll.interval.ms, session.timeout.ms) and
            // still processing what it polled — repeats what the partition's new owner applied
            // because the partition moved in a rebalance, whatever gave it its own position.
            let zombie = !self.group(&cfg.group).is_ok_and(|g| g.is_member(&member));
            let repeat = match origin {
                Some(o) if !zombie => o.repeat_reason(),
                _ => crate::delivery::DeliveryReason::RebalanceRedelivery,
            };
            let tp = item.tp.clone();
            let offset = item.record.offset;
            // A repeat delivery worth its own narrative line (database sinks only: the output of
            // a transaction is classified when it commits).
            let mut again = None;
            if cfg.is_transactional_producer() {
                if !self.send_in_transaction(name, &item, repeat)? {
                    self.flush_run(&member, &mut run);
                    return Ok(done);
                }
            } else {
                match self.apply_to_sink(name, &item, repeat)? {
                    Ok(reason) => {
                        if reason.is_redelivery() || reason == crate::delivery::DeliveryReason::Replay {
                            again = Some(reason);
                        }
                    }
                    Err(refused) => {
                        // Refused by the transactional sink: nothing applied.
                        self.consumer_mut(name)?.in_flight.pop_front();
                        done += 1;
                        self.flush_run(&member, &mut run);
                        self.say(EventKind::Refused, refused);
                        if self.effect(name) {
                            return Ok(done);
                        }
                        continue;
                    }
                }
            }
            let c = self.consumer_mut(name)?;
            c.in_flight.pop_front();
            if let Some(fs) = c.assignment.get_mut(&tp) {
                fs.processed = Some(offset + 1);
            }
            done += 1;
            self.narrate_applied(&member, &cfg, &item, again, &mut run);
            // Narrate the write before a planned crash right after it can be narrated.
            let crashes_now = self.fault.as_ref().is_some_and(|f| {
                f.consumer == name && self.effects.get(name).copied().unwrap_or(0) + 1 == f.after
            });
            if crashes_now {
                self.flush_run(&member, &mut run);
            }
            if self.effect(name) {
                return Ok(done);
            }
            let crashed = self.commit_after_record(name, &cfg, &item, &member, &mut run);
            if crashed || !self.consumer(name)?.is_running() {
                return Ok(done);
            }
        }
        let member = self.consumer(name)?.member_id();
        self.flush_run(&member, &mut run);
        Ok(done)
    }

    /// Narrates an applied record: runs of consecutive first deliveries as one line (kept in
    /// `run` until it ends), a repeat on a line of its own.
    fn narrate_applied(
        &mut self,
        member: &str,
        cfg: &ConsumerConfig,
        item: &InFlight,
        again: Option<crate::delivery::DeliveryReason>,
        run: &mut AppliedRun,
    ) {
        let (tp, offset) = (&item.tp, item.record.offset);
        if let Some(reason) = again {
            self.flush_run(member, run);
            let text = format!(
                "{member} applied {tp}@{offset} ({}) AGAIN: {} ({})",
                item.record.key_text(),
                reason.label(),
                match cfg.sink {
                    crate::sink::SinkKind::Upsert => "the upsert rewrites the same row",
                    _ => "one more row in the ledger",
                }
            );
            self.say(EventKind::Warning, text);
            return;
        }
        match run {
            Some((rtp, _, last, k)) if rtp == tp && *last + 1 == offset => {
                *last = offset;
                *k += 1;
            }
            _ => {
                self.flush_run(member, run);
                *run = Some((tp.clone(), offset, offset, 1));
            }
        }
    }

    /// The commit a strategy makes once a record is processed (per record; or at a batch's
    /// last record); whether the consumer crashed on the way.
    fn commit_after_record(
        &mut self,
        name: &str,
        cfg: &ConsumerConfig,
        item: &InFlight,
        member: &str,
        run: &mut AppliedRun,
    ) -> bool {
        let rules = cfg.strategy.rules();
        if !rules.commits_after_record(item.last_of_batch) {
            return false;
        }
        let each = rules.when == CommitWhen::AfterEachRecord;
        if cfg.is_transactional_producer() {
            let why = if each {
                "commitTransaction after the record"
            } else {
                "commitTransaction after the batch"
            };
            self.flush_run(member, run);
            return self.commit_transaction(name, why);
        }
        if !cfg.commits_to_kafka() {
            return false;
        }
        self.flush_run(member, run);
        match rules.call {
            CommitCall::Sync if each => {
                let next = vec![(item.tp.clone(), item.record.offset + 1)];
                self.commit_offsets(name, next, "commitSync after the record", false, false)
            }
            CommitCall::Sync => self.commit_from(name, rules.takes, "commitSync after the batch", false),
            CommitCall::Async => self.send_async(name),
        }
    }

    /// Writes one processed record to the group's database sink and records the delivery.
    /// Returns its delivery reason, or the narrative line when the transactional sink refused it.
    fn apply_to_sink(
        &mut self,
        name: &str,
        item: &InFlight,
        repeat: crate::delivery::DeliveryReason,
    ) -> Result<Result<crate::delivery::DeliveryReason, String>, LabError> {
        let c = self.consumer(name)?;
        let (group, incarnation, generation, member) =
            (c.config.group.clone(), c.incarnation, c.generation, c.member_id());
        let now = self.now();
        let (tp, offset) = (&item.tp, item.record.offset);
        let key = item.record.key.as_deref().unwrap_or_default();
        let value = item.record.value.as_deref().unwrap_or_default();
        let keep_log = self.keep_delivery_logs;
        self.irreversible += 1;
        let g = self
            .groups
            .get_mut(&group)
            .ok_or_else(|| LabError::UnknownGroup(group.clone()))?;
        let reason = g.audit.classify(tp, offset, repeat);
        let outcome = g.sink.apply(&SinkWrite {
            tp,
            offset,
            key,
            value,
            consumer: name,
            incarnation,
            generation,
            reason,
            at: now,
        })?;
        if let WriteOutcome::Fenced {
            next_offset,
            generation: newer,
        } = outcome
        {
            return Ok(Err(format!("the transactional sink refused {tp}@{offset} from {member} (generation {generation}): it already holds progress to {next_offset} written by generation {newer}; nothing was applied")));
        }
        g.audit.keep_log(keep_log);
        g.audit.record(Delivery {
            at: now,
            tp: tp.clone(),
            offset,
            key: item.record.key_text(),
            consumer: name.to_string(),
            incarnation,
            reason,
        });
        Ok(Ok(reason))
    }

    fn flush_run(&mut self, member: &str, run: &mut AppliedRun) {
        if let Some((tp, a, b, _)) = run.take() {
            let transactional = member
                .split('#')
                .next()
                .and_then(|n| self.consumers.get(n))
                .is_some_and(|c| c.config.is_transactional_producer());
            let into = if transactional {
                "and produced its output inside the open transaction"
            } else {
                "into the sink"
            };
            let range = if a == b {
                format!("{a}")
            } else {
                format!("{a}..{b}")
            };
            self.say(
                EventKind::Process,
                format!("{member} processed {tp}@{range} {into}"),
            );
        }
    }

    /// `seek()`: moves the fetch position of one or all assigned partitions. Nothing is
    /// committed.
    pub fn seek(&mut self, name: &str, target: SeekTarget, partition: Option<i32>) -> Result<(), LabError> {
        let c = self.running(name, "restart it before seeking")?;
        let member = c.member_id();
        let group = c.config.group.clone();
        let tps: Vec<TopicPartition> = match partition {
            Some(p) => {
                let tp = TopicPartition::new(c.config.topic.clone(), p);
                if !c.assignment.contains_key(&tp) {
                    return Err(LabError::NotAssigned {
                        consumer: name.to_string(),
                        partition: p,
                    });
                }
                vec![tp]
            }
            None => c.assignment.keys().cloned().collect(),
        };
        if tps.is_empty() {
            return Err(LabError::InvalidArgument(format!(
                "consumer '{name}' has no partitions assigned to seek"
            )));
        }
        let mut moves = Vec::new();
        for tp in &tps {
            let log = self.partition_log(tp)?;
            let new = match target {
                SeekTarget::Earliest => log.log_start_offset(),
                SeekTarget::Latest => self.latest_offset(tp, self.consumer(name)?.config.isolation)?,
                SeekTarget::Offset(o) => o,
                SeekTarget::Timestamp(ts) => log.offset_for_timestamp(ts).unwrap_or(log.log_end_offset()),
            };
            let old = self
                .consumer(name)?
                .assignment
                .get(tp)
                .map_or(new, |f| f.position);
            moves.push((tp.clone(), old, new));
        }
        let lost_before = self.lost_now(&group, &tps)?;
        for (tp, old, new) in &moves {
            let log = self.partition_log(tp)?;
            let (start, end) = (log.log_start_offset(), log.log_end_offset());
            if let Some(fs) = self.consumer_mut(name)?.assignment.get_mut(tp) {
                fs.position = *new;
                fs.origin = PositionOrigin::Seek;
            }
            // Jumping forward skips [old, new) on purpose (a target past the log end is fixed by
            // auto.offset.reset at the next poll, which clips the range).
            let (skip_from, skip_to) = ((*old).max(start), *new);
            if let Some(g) = self.groups.get_mut(&group) {
                g.audit.mark_skipped(tp, skip_from, skip_to);
            }
            let what = match new.cmp(old) {
                std::cmp::Ordering::Less => format!("the next polls go back over {} offset(s)", old - new),
                std::cmp::Ordering::Greater if *new > end => {
                    format!("that is past the log end ({end}): the next poll meets OffsetOutOfRange and auto.offset.reset decides")
                }
                std::cmp::Ordering::Greater => {
                    format!("{} record(s) are skipped on purpose", skip_to - skip_from)
                }
                std::cmp::Ordering::Equal => "no change".to_string(),
            };
            self.say(
                EventKind::Seek,
                format!(
                    "{member} seeks {tp} from {old} to {new}: {what}; nothing is committed until a commit"
                ),
            );
        }
        self.note_rewound(&group, lost_before)
    }
}
