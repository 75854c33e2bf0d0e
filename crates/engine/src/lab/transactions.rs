//! Kafka transactions in a read-process-write consumer (`sink=kafka-tx`), and the fetch rules
//! of the two isolation levels.
//!
//! The application is the Java pattern: `initTransactions()` at start; for every processed
//! record a `send()` to the output topic inside the open transaction (the first send begins it
//! and adds the partition to it); at the strategy's commit point `sendOffsetsToTransaction()`
//! with the consumer's group metadata and `commitTransaction()`. The consumed offsets reach
//! `__consumer_offsets` only when the transaction commits, so output and progress commit or
//! abort together.
//!
//! A transaction ends in an abort when the application aborts it (`abort`), when the group
//! coordinator fences the consumer as a zombie (its offsets carry an old generation), when the
//! next incarnation calls `initTransactions()` with the same `transactional.id`, or when
//! `transaction.timeout.ms` passes and the transaction coordinator aborts it on its own.

use super::Lab;
use crate::audit::Delivery;
use crate::clock::{format_duration, format_instant, Millis};
use crate::consumer::{InFlight, PositionOrigin};
use crate::delivery::DeliveryReason;
use crate::error::LabError;
use crate::log::partitioner::partition_for_key;
use crate::narrative::EventKind;
use crate::offsets::OffsetKey;
use crate::record::{NewRecord, Offset, Record, TopicPartition};
use crate::sink::SinkWrite;
use crate::txn::{ControlType, IsolationLevel, OpenTxn, TransactionalProducer, TxnWrite};

/// What a fetch of one partition returned.
pub(crate) struct Fetched {
    pub records: Vec<Record>,
    /// The position after the fetch: past every record, marker or hidden record it visited.
    pub next_position: Offset,
}

impl Lab {
    /// A fetch of up to `max` records of `tp` from `position`, as a client with `isolation`
    /// sees it: control records are never handed over; `read_committed` stops at the last
    /// stable offset and drops records of aborted transactions.
    pub(crate) fn fetch(
        &self,
        tp: &TopicPartition,
        position: Offset,
        max: usize,
        isolation: IsolationLevel,
    ) -> Result<Fetched, LabError> {
        let log = self.partition_log(tp)?;
        let txns = self.partition_txns(tp)?;
        let upper = match isolation {
            IsolationLevel::ReadCommitted => txns.last_stable_offset(log.log_end_offset()),
            IsolationLevel::ReadUncommitted => log.log_end_offset(),
        };
        let mut records = Vec::new();
        let mut pos = position;
        while records.len() < max && pos < upper {
            let mut last = None;
            log.read(pos, max - records.len(), &mut |r| {
                if r.offset >= upper {
                    return;
                }
                last = Some(r.offset);
                let hidden =
                    r.control || (isolation == IsolationLevel::ReadCommitted && txns.is_aborted(r.offset));
                if !hidden {
                    records.push(r.to_owned());
                }
            });
            match last {
                Some(l) => pos = l + 1,
                None => break,
            }
        }
        Ok(Fetched {
            records,
            next_position: pos,
        })
    }

    /// Where "latest" is for a consumer reading with `isolation` (`seekToEnd`,
    /// `auto.offset.reset=latest`): the log end, or for `read_committed` the last stable offset.
    pub(crate) fn latest_offset(
        &self,
        tp: &TopicPartition,
        isolation: IsolationLevel,
    ) -> Result<Offset, LabError> {
        match isolation {
            IsolationLevel::ReadCommitted => self.last_stable_offset(tp),
            IsolationLevel::ReadUncommitted => Ok(self.partition_log(tp)?.log_end_offset()),
        }
    }

    /// `initTransactions()`: registers the `transactional.id` (the consumer's name) with the
    /// transaction coordinator, or bumps its epoch — which fences the previous incarnation and
    /// aborts the transaction it left open.
    pub(crate) fn init_transactions(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.consumer(name)?;
        let member = c.member_id();
        let timeout = c.config.transaction_timeout_ms;
        if !self.producers.contains_key(name) {
            let pid = self.next_producer_id;
            self.next_producer_id += 1;
            self.producers
                .insert(name.to_string(), TransactionalProducer::new(name, pid, timeout));
            self.say(
                EventKind::Setup,
                format!("{member} calls initTransactions(): transactional.id={name} gets producer id {pid}, epoch 0; transaction.timeout.ms = {}", format_duration(timeout)),
            );
            return Ok(());
        }
        if self.producers.get(name).is_some_and(|p| p.ongoing.is_some()) {
            self.end_transaction(name, ControlType::Abort);
            // Kafka bumps the epoch once to fence the old producer while it aborts, and once more
            // for the new one.
            if let Some(p) = self.producers.get_mut(name) {
                p.epoch = p.epoch.saturating_add(1);
            }
            self.say(
                EventKind::Warning,
                format!("{member} calls initTransactions(): the coordinator aborts the transaction the previous incarnation left open — ABORT markers are written and its output stays invisible to read_committed readers"),
            );
        }
        if let Some(p) = self.producers.get_mut(name) {
            p.epoch = p.epoch.saturating_add(1);
            p.fenced = None;
            p.timeout_ms = timeout;
            let (pid, epoch) = (p.producer_id, p.epoch);
            self.say(
                EventKind::Setup,
                format!("{member}: transactional.id={name} keeps producer id {pid} with epoch {epoch}; any older instance is fenced"),
            );
        }
        Ok(())
    }

    /// `send()` of the output for one input record, inside the open transaction (begun by the
    /// first send). Returns `Ok(false)` when the producer turned out to be fenced and the
    /// application stopped.
    pub(crate) fn send_in_transaction(
        &mut self,
        name: &str,
        item: &InFlight,
        repeat: DeliveryReason,
    ) -> Result<bool, LabError> {
        if self.recover_if_fenced(name) {
            return Ok(false);
        }
        let c = self.consumer(name)?;
        let incarnation = c.incarnation;
        let output = c
            .config
            .output
            .clone()
            .ok_or_else(|| LabError::InvalidArgument(format!("consumer '{name}' has no output topic")))?;
        let now = self.now();
        let key = item.record.key.as_deref().unwrap_or_default().into();
        let value = item.record.value.as_deref().unwrap_or_default().into();
        let p = self
            .producers
            .get(name)
            .ok_or_else(|| LabError::InvalidArgument(format!("'{name}' has no transactional producer")))?;
        let pid = p.producer_id;
        let begins = p.ongoing.is_none();
        let t = self
            .topics
            .get_mut(&output)
            .ok_or_else(|| LabError::UnknownTopic(output.clone()))?;
        // The output copies the input's key and value, nulls included.
        let (in_key, in_value) = (item.record.key.as_deref(), item.record.value.as_deref());
        let partition = partition_for_key(in_key.unwrap_or_default(), t.partitions.len() as i32);
        let index = partition as usize;
        let offset = t.partitions[index].append(NewRecord::new(now, in_key, in_value), now);
        t.txns[index].record_open(pid, offset);
        let lso = t.txns[index].last_stable_offset(t.partitions[index].log_end_offset());
        let out = TopicPartition::new(output, partition);
        let Some(p) = self.producers.get_mut(name) else {
            return Ok(false);
        };
        let txn = p.ongoing.get_or_insert_with(|| OpenTxn {
            started_at: now,
            writes: Vec::new(),
            offsets: Vec::new(),
            offset_details: Vec::new(),
        });
        let adds_partition = !txn.writes.iter().any(|w| w.output == out);
        txn.writes.push(TxnWrite {
            output: out.clone(),
            output_offset: offset,
            source: item.tp.clone(),
            source_offset: item.record.offset,
            key,
            value,
            incarnation,
            reason: repeat,
        });
        if begins {
            let expires = now.saturating_add(p.timeout_ms);
            self.say(
                EventKind::Process,
                format!("{name} begins a transaction (producer id {pid}) with {out}@{offset}: until it ends, read_committed readers of {out} stop at the last stable offset, now {lso}; the coordinator aborts it at {} if it is still open", format_instant(expires)),
            );
        } else if adds_partition {
            self.say(
                EventKind::Process,
                format!("{name} adds {out} to its open transaction (AddPartitionsToTxn)"),
            );
        }
        Ok(true)
    }

    /// `sendOffsetsToTransaction(processed offsets, groupMetadata)` then `commitTransaction()`.
    /// Returns whether the consumer crashed (explorer) right after.
    pub(crate) fn commit_transaction(&mut self, name: &str, why: &str) -> bool {
        if self.recover_if_fenced(name) {
            return false;
        }
        let Some(txn) = self.producers.get(name).and_then(|p| p.ongoing.clone()) else {
            if why == "commitTransaction" {
                let member = self.member_of(name);
                self.say(
                    EventKind::Commit,
                    format!("{member}: no transaction is open, nothing to commit"),
                );
            }
            return false;
        };
        let Some(c) = self.consumers.get(name) else {
            return false;
        };
        let member = c.member_id();
        let group = c.config.group.clone();
        let generation = c.generation;
        let offsets: Vec<(TopicPartition, Offset)> = c
            .assignment
            .iter()
            .filter_map(|(tp, f)| f.processed.map(|o| (tp.clone(), o)))
            .collect();
        // KIP-447: the group coordinator checks the offsets' member and generation, so a zombie
        // cannot commit a transaction for partitions that moved on.
        if !self.accepts_commit(name, generation) {
            self.end_transaction(name, ControlType::Abort);
            self.say(
                EventKind::Refused,
                format!("sendOffsetsToTransaction failed for {member}: its transaction is aborted, so none of its output becomes visible to read_committed readers and its offsets are not committed"),
            );
            self.rewind_to_committed(name);
            return false;
        }
        let markers = self.end_transaction(name, ControlType::Commit);
        let outputs = txn.writes.len();
        let partitions = txn.partitions();
        let held: Vec<String> = self
            .held_back(&partitions)
            .into_iter()
            .map(|(tp, lso, _)| format!("{tp} LSO {lso}"))
            .collect();
        self.say(
            EventKind::Commit,
            format!(
                "{member} commits its transaction: COMMIT marker(s) at {}; its {outputs} output record(s) are committed{}",
                markers.join(", "),
                if held.is_empty() {
                    " and visible to read_committed readers".to_string()
                } else {
                    format!(", but read_committed readers still wait behind an older open transaction ({})", held.join(", "))
                }
            ),
        );
        self.write_commit(name, &offsets, why, false);
        self.record_committed_output(name, &group, &txn);
        self.effect(name)
    }

    /// The committed output enters the group's audit and its kafka-tx sink: this is the output
    /// as a `read_committed` reader sees it.
    fn record_committed_output(&mut self, name: &str, group: &str, txn: &OpenTxn) {
        let now = self.now();
        let generation = self.consumers.get(name).map_or(0, |c| c.generation);
        let keep_log = self.keep_delivery_logs;
        let Some(g) = self.groups.get_mut(group) else {
            return;
        };
        self.irreversible += txn.writes.len() as u64;
        for w in &txn.writes {
            let reason = g.audit.classify(&w.source, w.source_offset, w.reason);
            // The output sink appends every committed record; it never refuses one.
            let _ = g.sink.apply(&SinkWrite {
                tp: &w.source,
                offset: w.source_offset,
                key: &w.key,
                value: &w.value,
                consumer: name,
                incarnation: w.incarnation,
                generation,
                reason,
                at: now,
            });
            g.audit.keep_log(keep_log);
            g.audit.record(Delivery {
                at: now,
                tp: w.source.clone(),
                offset: w.source_offset,
                key: w.key.to_string(),
                consumer: name.to_string(),
                incarnation: w.incarnation,
                reason,
            });
        }
    }

    /// `abortTransaction()` by the application, then a seek back to the committed offsets (the
    /// aborted records must be processed again). Fails when no transaction is open.
    pub fn abort_transaction(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.running(name, "only a running consumer can abort its transaction")?;
        if !c.config.is_transactional_producer() {
            return Err(LabError::InvalidArgument(format!(
                "consumer '{name}' does not use Kafka transactions (sink=kafka-tx)"
            )));
        }
        let member = c.member_id();
        if self.recover_if_fenced(name) {
            return Ok(());
        }
        if self.producers.get(name).is_none_or(|p| p.ongoing.is_none()) {
            return Err(LabError::NoOpenTransaction(name.to_string()));
        }

        let markers = self.end_transaction(name, ControlType::Abort);
        self.say(
            EventKind::Warning,
            format!("{member} aborts its transaction: ABORT marker(s) at {}; read_committed readers skip its records, read_uncommitted readers have seen (or will see) them", markers.join(", ")),
        );
        self.rewind_to_committed(name);
        Ok(())
    }

    /// After an abort the application must process the aborted input again: it drops what it
    /// holds and seeks each partition back to the group's committed offset (or the log start).
    fn rewind_to_committed(&mut self, name: &str) {
        let Some(c) = self.consumers.get(name) else {
            return;
        };
        let group = c.config.group.clone();
        let member = c.member_id();
        // With nothing committed yet, back to the beginning of the log, as Kafka's
        // exactly-once demo does (`seekToBeginning`): auto.offset.reset=latest would skip.
        let targets: Vec<(TopicPartition, Offset)> = c
            .assignment
            .keys()
            .filter_map(|tp| {
                let committed = self.offsets.fetch(&OffsetKey::new(&group, tp)).map(|v| v.offset);
                let start = self.partition_log(tp).ok().map(|l| l.log_start_offset());
                committed.or(start).map(|o| (tp.clone(), o))
            })
            .collect();
        let Some(c) = self.consumers.get_mut(name) else {
            return;
        };
        c.in_flight.clear();
        let mut moves = Vec::new();
        for (tp, o) in targets {
            if let Some(f) = c.assignment.get_mut(&tp) {
                if f.position != o {
                    moves.push(format!("{tp} {} → {o}", f.position));
                }
                f.position = o;
                f.processed = None;
                f.origin = PositionOrigin::Assigned(DeliveryReason::RestartRedelivery);
            }
        }
        if !moves.is_empty() {
            self.say(
                EventKind::Seek,
                format!(
                    "{member} seeks back to the committed offsets to process the aborted input again: {}",
                    moves.join(", ")
                ),
            );
        }
    }

    /// Writes a COMMIT or ABORT marker to every partition of `name`'s open transaction and
    /// closes it. Returns where the markers went.
    pub(crate) fn end_transaction(&mut self, name: &str, control: ControlType) -> Vec<String> {
        let now = self.now();
        let Some(p) = self.producers.get_mut(name) else {
            return Vec::new();
        };
        let Some(txn) = p.ongoing.take() else {
            return Vec::new();
        };
        match control {
            ControlType::Commit => p.committed += 1,
            ControlType::Abort => p.aborted += 1,
        }
        let pid = p.producer_id;
        let key = control.key();
        let mut at = Vec::new();
        for tp in txn.partitions() {
            let Some(t) = self.topics.get_mut(&tp.topic) else {
                continue;
            };
            let index = tp.partition as usize;
            let (Some(log), Some(txns)) = (t.partitions.get_mut(index), t.txns.get_mut(index)) else {
                continue;
            };
            // The marker's value: version 0 and the coordinator epoch (always 0 here).
            let offset = log.append(
                NewRecord {
                    timestamp: now,
                    key: Some(&key),
                    value: Some(&[0, 0, 0, 0, 0, 0]),
                    control: true,
                    headers: &[],
                },
                now,
            );
            txns.end(pid, control, offset);
            at.push(format!("{tp}@{offset}"));
        }
        at
    }

    /// Partitions among `tps` whose last stable offset is still below their log end: each with
    /// its LSO and log end offset.
    pub(crate) fn held_back<'t>(
        &self,
        tps: &'t [TopicPartition],
    ) -> Vec<(&'t TopicPartition, Offset, Offset)> {
        tps.iter()
            .filter_map(|tp| {
                let end = self.partition_log(tp).ok()?.log_end_offset();
                let lso = self.last_stable_offset(tp).ok()?;
                (lso < end).then_some((tp, lso, end))
            })
            .collect()
    }

    /// After the coordinator aborted a transaction on timeout, the producer's next call fails
    /// with `InvalidProducerEpochException` — recoverable since KIP-588 (Kafka 2.7): the
    /// application aborts (already done by the coordinator), seeks back to its committed offsets
    /// and carries on. Returns whether that happened (the current step stops there).
    fn recover_if_fenced(&mut self, name: &str) -> bool {
        let Some(reason) = self.producers.get(name).and_then(|p| p.fenced.clone()) else {
            return false;
        };
        if let Some(p) = self.producers.get_mut(name) {
            p.fenced = None;
        }
        let member = self.member_of(name);
        self.say(
            EventKind::Refused,
            format!("{member}'s producer call failed with InvalidProducerEpochException: {reason}. The application calls abortTransaction() (KIP-588: the producer recovers) and processes the aborted input again"),
        );
        self.rewind_to_committed(name);
        true
    }

    /// The earliest `transaction.timeout.ms` deadline of an open transaction.
    /// Only the lab's own producers: a real client's `transaction.timeout.ms` runs on wall time
    /// in the listener's coordinator (`txn-timeout` lines), whether the lab's clock is live or
    /// paused — a paused lab going live must not abort every real transaction open across the jump.
    pub(crate) fn next_transaction_timeout(&self) -> Option<Millis> {
        self.producers
            .values()
            .filter(|p| !p.external)
            .filter_map(TransactionalProducer::expires_at)
            .min()
    }

    /// The transaction coordinator aborts transactions open longer than their timeout and bumps
    /// the producer's epoch: the instance that opened it is fenced.
    pub(crate) fn expire_transactions(&mut self, now: Millis) {
        let due: Vec<String> = self
            .producers
            .iter()
            .filter(|(_, p)| !p.external && p.expires_at().is_some_and(|t| t <= now))
            .map(|(id, _)| id.clone())
            .collect();
        for id in due {
            self.abort_timed_out(&id, "");
        }
    }

    /// The coordinator's abort of `id`'s open transaction once its timeout passed: ABORT
    /// markers, and the epoch bumped so the instance that opened it is fenced. `clock` says whose
    /// time ran out (empty: the lab's).
    fn abort_timed_out(&mut self, id: &str, clock: &str) {
        let timeout = self.producers.get(id).map_or(0, |p| p.timeout_ms);
        let markers = self.end_transaction(id, ControlType::Abort);
        if let Some(p) = self.producers.get_mut(id) {
            p.epoch = p.epoch.saturating_add(1);
            p.fenced = Some(format!(
                "the coordinator aborted its transaction after transaction.timeout.ms ({}) and bumped the epoch",
                format_duration(timeout)
            ));
        }
        self.say(
            EventKind::Warning,
            format!("transaction.timeout.ms ({}{clock}) passed: the transaction coordinator aborts {id}'s open transaction (ABORT marker(s) at {}) and bumps its epoch, so the producer that opened it is fenced", format_duration(timeout), markers.join(", ")),
        );
    }

    /// A real client's transaction that stayed open past its `transaction.timeout.ms` of wall
    /// time — its producer was killed, or hangs — aborted by the listener's transaction
    /// coordinator, which keeps wall time for real clients as it does for their sessions. Refused
    /// unless (`producer_id`, `epoch`) is the id's current producer with a transaction open.
    pub fn external_txn_timeout(
        &mut self,
        txn_id: &str,
        producer_id: i64,
        epoch: i16,
    ) -> Result<(), LabError> {
        let open = self.producers.get(txn_id).is_some_and(|p| {
            p.external && p.producer_id == producer_id && p.epoch == epoch && p.ongoing.is_some()
        });
        if !open {
            return Err(LabError::InvalidArgument(format!(
                "transactional.id {txn_id} has no open transaction at producer id {producer_id}, epoch {epoch}"
            )));
        }
        self.abort_timed_out(txn_id, " of wall time");
        Ok(())
    }
}
