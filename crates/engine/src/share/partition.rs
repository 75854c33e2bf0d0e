//! [`SharePartition`]: one partition as one share group sees it — its start offset (SPSO), the
//! end of its in-flight window (SPEO), and the delivery state of every record in between.
//!
//! Kafka keeps this on the partition's leader (`kafka.server.share.SharePartition`), not in the
//! log: the log is read, never written, by a share group. Every rule here is Kafka's as its
//! `SharePartition` applies it; where the lab simplifies, the doc comment says so.

use crate::clock::Millis;
use crate::error::LabError;
use crate::record::Offset;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A record's delivery state in a share partition (Kafka's `RecordState`).
///
/// The only transitions are Available → Acquired and Acquired → Available / Acknowledged /
/// Archived: Acknowledged and Archived are terminal, and a record never goes from Available to
/// a terminal state on a member's word — only the log start moving past it archives it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryState {
    Available,
    Acquired,
    Acknowledged,
    Archived,
}

spelled!(DeliveryState, "delivery state", {
    Available => "available",
    Acquired => "acquired",
    Acknowledged => "acknowledged",
    Archived => "archived",
});

impl DeliveryState {
    /// Acknowledged and Archived: the record's delivery is complete, whatever happened to it.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Acknowledged | Self::Archived)
    }
}

/// Why a record was archived: the audit tells a record rejected on purpose from one the
/// group gave up on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ArchiveReason {
    /// A member rejected it (`AcknowledgeType.REJECT`): unprocessable, on purpose.
    Rejected,
    /// Released or timed out with its delivery count at `share.delivery.count.limit`: a
    /// poison record the group stops handing out.
    DeliveryLimit,
    /// The log start moved past it (retention, DeleteRecords) before its delivery completed.
    LogStart,
}

/// How a record's delivery ended, as the audit keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", tag = "how")]
pub enum Completion {
    Accepted,
    Archived {
        reason: ArchiveReason,
    },
    /// An administrator moved the start offset past it (AlterShareGroupOffsets, or the first
    /// read after DeleteShareGroupOffsets) before its delivery completed: skipped on purpose.
    Skipped,
}

/// An acquisition lock: which member holds the record, and until when. Kafka times it on the
/// partition leader (`AcquisitionLockTimerTask`); the lab on its logical clock.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AcquisitionLock {
    pub member: String,
    pub expires_at: Millis,
}

/// One record in the in-flight window (Kafka's `InFlightState`, kept per offset: Kafka keeps
/// whole fetched batches and splits them into offsets only when their states diverge).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InFlightRecord {
    pub state: DeliveryState,
    /// How many times it was acquired. Kafka counts the acquisition, not the processing: a
    /// record handed out and never looked at still used up a delivery.
    pub delivery_count: u16,
    /// Set while Acquired.
    pub lock: Option<AcquisitionLock>,
}

/// A record that changed state, for the audit and the narrative.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transition {
    pub offset: Offset,
    pub to: DeliveryState,
    pub delivery_count: u16,
    /// Set when the transition completed the record's delivery.
    pub completion: Option<Completion>,
}

/// What a member asks for a record it holds (Kafka's `AcknowledgeType`; GAP is the client's
/// word for an offset with no record, which the lab never hands out).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AcknowledgeType {
    Accept,
    Release,
    Reject,
}

spelled!(AcknowledgeType, "acknowledge type", {
    Accept => "accept",
    Release => "release",
    Reject => "reject",
});

/// One share partition of one share group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SharePartition {
    /// The share-partition start offset (SPSO): every record below it is delivery-complete.
    /// It replaces a consumer group's committed offset, and is what
    /// `kafka-share-groups.sh --describe` shows and `--reset-offsets` moves.
    pub start_offset: Offset,
    /// The share-partition end offset, exclusive: the next offset never yet acquired. Kafka's
    /// `SharePartition.endOffset` is the *last* offset fetched while records are in flight
    /// (and equals the SPSO when none are); the lab shows the exclusive end so that the window
    /// is `[SPSO, SPEO)` and its size is SPEO − SPSO, which is what the in-flight limit counts.
    pub end_offset: Offset,
    /// The records of the window that are not yet behind the SPSO, by offset. Offsets of the
    /// window with no entry hold no record a consumer is handed (a transaction marker, a
    /// record compaction removed): they count as delivery-complete.
    #[serde(with = "crate::serde_pairs")]
    records: BTreeMap<Offset, InFlightRecord>,
}

impl SharePartition {
    /// A share partition initialised at `start` (from `share.auto.offset.reset`), nothing in
    /// flight.
    pub fn new(start: Offset) -> Self {
        Self {
            start_offset: start,
            end_offset: start,
            records: BTreeMap::new(),
        }
    }

    /// The record at `offset` while it is in the window.
    pub fn record(&self, offset: Offset) -> Option<&InFlightRecord> {
        self.records.get(&offset)
    }

    /// Every record in the window, by offset.
    pub fn records(&self) -> impl Iterator<Item = (Offset, &InFlightRecord)> {
        self.records.iter().map(|(o, r)| (*o, r))
    }

    /// The records of the window whose delivery has not completed (Available or Acquired).
    pub fn pending(&self) -> Vec<Offset> {
        self.records
            .iter()
            .filter(|(_, r)| !r.state.is_terminal())
            .map(|(o, _)| *o)
            .collect()
    }

    /// How many records of the window are in `state`.
    pub fn count(&self, state: DeliveryState) -> usize {
        self.records.values().filter(|r| r.state == state).count()
    }

    /// The window's size, SPEO − SPSO: what `share.partition.max.record.locks` limits.
    pub fn in_flight(&self) -> u64 {
        u64::try_from(self.end_offset - self.start_offset).unwrap_or(0)
    }

    /// The Available records of the window a fetch would hand out again, in offset order.
    /// Kafka's `nextFetchOffset` goes back to the first of them before reading past the SPEO.
    pub fn available(&self) -> impl Iterator<Item = Offset> + '_ {
        self.records
            .iter()
            .filter(|(_, r)| r.state == DeliveryState::Available)
            .map(|(o, _)| *o)
    }

    /// How many records past the SPEO may still be acquired under `max_locks`. Kafka checks
    /// the limit on the window, not on the records acquired: acknowledged records stuck behind
    /// one slow record still hold the window open, so one unacknowledged record at the start
    /// can stop the whole group's progress once the window is full.
    pub fn room(&self, max_locks: u32) -> usize {
        usize::try_from(u64::from(max_locks).saturating_sub(self.in_flight())).unwrap_or(0)
    }

    /// Acquires `offset` for `member` until `expires_at`: an Available record of the window,
    /// or a new record at or past the SPEO (the SPEO moves past it: `next_end` is where the
    /// fetch that found it stopped, past any marker after it). Each acquisition counts one
    /// delivery. Returns the record's delivery count.
    pub fn acquire(&mut self, offset: Offset, member: &str, expires_at: Millis, next_end: Offset) -> u16 {
        let lock = Some(AcquisitionLock {
            member: member.to_string(),
            expires_at,
        });
        let r = self.records.entry(offset).or_insert(InFlightRecord {
            state: DeliveryState::Available,
            delivery_count: 0,
            lock: None,
        });
        r.state = DeliveryState::Acquired;
        r.delivery_count = r.delivery_count.saturating_add(1);
        r.lock = lock;
        let count = r.delivery_count;
        self.end_offset = self.end_offset.max(next_end).max(offset + 1);
        count
    }

    /// Checks that `member` holds every one of `offsets` — Acquired, under its lock — without
    /// changing anything. Kafka answers INVALID_RECORD_STATE otherwise, and applies none of the
    /// acknowledgements of the partition: they are atomic per partition.
    pub fn check_held(&self, member: &str, offsets: &[Offset]) -> Result<(), LabError> {
        for &o in offsets {
            match self.records.get(&o) {
                Some(r)
                    if r.state == DeliveryState::Acquired
                        && r.lock.as_ref().is_some_and(|l| l.member == member) => {}
                Some(r) => {
                    let holder = r
                        .lock
                        .as_ref()
                        .map_or(String::new(), |l| format!(" by {}", l.member));
                    return Err(LabError::InvalidRecordState(format!(
                        "offset {o} is {}{holder}, not acquired by {member}",
                        r.state
                    )));
                }
                None => {
                    return Err(LabError::InvalidRecordState(format!(
                        "offset {o} is not in the share partition's in-flight window [{}, {})",
                        self.start_offset, self.end_offset
                    )))
                }
            }
        }
        Ok(())
    }

    /// Acknowledges `offsets`, which `member` holds ([`SharePartition::check_held`] first):
    /// accept → Acknowledged, reject → Archived, release → Available again — or Archived when
    /// the record has used up its `limit` deliveries. Then the SPSO moves up.
    pub fn acknowledge(
        &mut self,
        member: &str,
        offsets: &[Offset],
        ack: AcknowledgeType,
        limit: u16,
    ) -> Result<Vec<Transition>, LabError> {
        self.check_held(member, offsets)?;
        let mut out = Vec::new();
        for &o in offsets {
            let completion = match ack {
                AcknowledgeType::Accept => Some(Completion::Accepted),
                AcknowledgeType::Reject => Some(Completion::Archived {
                    reason: ArchiveReason::Rejected,
                }),
                AcknowledgeType::Release => None,
            };
            out.extend(self.end_acquisition(o, completion, limit));
        }
        self.advance_start();
        Ok(out)
    }

    /// Releases every record `member` holds, as Kafka does when a share session closes
    /// (`releaseAcquiredRecords`): each becomes Available again, or Archived at the limit.
    pub fn release_member(&mut self, member: &str, limit: u16) -> Vec<Transition> {
        let held: Vec<Offset> = self
            .records
            .iter()
            .filter(|(_, r)| r.lock.as_ref().is_some_and(|l| l.member == member))
            .map(|(o, _)| *o)
            .collect();
        let out = held
            .into_iter()
            .filter_map(|o| self.end_acquisition(o, None, limit))
            .collect();
        self.advance_start();
        out
    }

    /// The earliest acquisition lock to expire.
    pub fn next_lock_expiry(&self) -> Option<Millis> {
        self.records
            .values()
            .filter_map(|r| r.lock.as_ref().map(|l| l.expires_at))
            .min()
    }

    /// Lock timeouts due at `now`: each record whose lock expired is Available again — or
    /// Archived, having used up its deliveries. Returns them with the member that held them.
    /// This is what brings a crashed member's records back: nothing else does before its
    /// session times out, and even then Kafka waits for the lock.
    pub fn expire_locks(&mut self, now: Millis, limit: u16) -> Vec<(String, Transition)> {
        let due: Vec<(Offset, String)> = self
            .records
            .iter()
            .filter_map(|(o, r)| {
                let l = r.lock.as_ref()?;
                (l.expires_at <= now).then(|| (*o, l.member.clone()))
            })
            .collect();
        let out = due
            .into_iter()
            .filter_map(|(o, m)| self.end_acquisition(o, None, limit).map(|t| (m, t)))
            .collect();
        self.advance_start();
        out
    }

    /// The log start moved to `log_start` (retention, DeleteRecords): the SPSO follows it.
    /// Available records below it are archived; acquired ones stay with their member and are
    /// archived when released or timed out (Kafka's `updateCacheAndOffsets`).
    pub fn follow_log_start(&mut self, log_start: Offset) -> Vec<Transition> {
        if log_start <= self.start_offset {
            return Vec::new();
        }
        let mut out = Vec::new();
        for (&o, r) in self.records.range_mut(..log_start) {
            if r.state == DeliveryState::Available {
                r.state = DeliveryState::Archived;
                out.push(Transition {
                    offset: o,
                    to: DeliveryState::Archived,
                    delivery_count: r.delivery_count,
                    completion: Some(Completion::Archived {
                        reason: ArchiveReason::LogStart,
                    }),
                });
            }
        }
        self.start_offset = log_start;
        self.end_offset = self.end_offset.max(log_start);
        self.advance_start();
        out
    }

    /// Ends the acquisition of the record at `offset`: with `completion` (accept, reject), or
    /// back to Available — unless its delivery count reached `limit` (then Archived: Kafka
    /// checks the limit when a delivery attempt ends, not when it starts), or it is below the
    /// SPSO (the log start passed it).
    fn end_acquisition(
        &mut self,
        offset: Offset,
        completion: Option<Completion>,
        limit: u16,
    ) -> Option<Transition> {
        let below_start = offset < self.start_offset;
        let r = self.records.get_mut(&offset)?;
        if r.state != DeliveryState::Acquired {
            return None;
        }
        let fallback = if below_start {
            Some(Completion::Archived {
                reason: ArchiveReason::LogStart,
            })
        } else if r.delivery_count >= limit {
            Some(Completion::Archived {
                reason: ArchiveReason::DeliveryLimit,
            })
        } else {
            None
        };
        let completion = completion.or(fallback);
        r.state = match completion {
            Some(Completion::Accepted) => DeliveryState::Acknowledged,
            // Skipped is the audit's word for an administrator's move, never a member's.
            Some(Completion::Archived { .. } | Completion::Skipped) => DeliveryState::Archived,
            None => DeliveryState::Available,
        };
        r.lock = None;
        Some(Transition {
            offset,
            to: r.state,
            delivery_count: r.delivery_count,
            completion,
        })
    }

    /// Moves the SPSO past every delivery-complete record at the start of the window (and
    /// offsets with no record), and forgets them: Kafka's `maybeUpdateCachedStateAndOffsets`.
    /// A record still Available or Acquired stops it, however many records after it are done.
    fn advance_start(&mut self) {
        // Terminal records the log start left behind.
        let behind: Vec<Offset> = self
            .records
            .range(..self.start_offset)
            .filter(|(_, r)| r.state.is_terminal())
            .map(|(o, _)| *o)
            .collect();
        for o in behind {
            self.records.remove(&o);
        }
        while self.start_offset < self.end_offset {
            match self.records.get(&self.start_offset) {
                Some(r) if !r.state.is_terminal() => break,
                Some(_) => {
                    self.records.remove(&self.start_offset);
                    self.start_offset += 1;
                }
                None => self.start_offset += 1,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquired(p: &mut SharePartition, member: &str, offsets: std::ops::Range<Offset>, until: Millis) {
        for o in offsets {
            p.acquire(o, member, until, o + 1);
        }
    }

    #[test]
    fn acquisition_moves_the_end_and_counts_a_delivery() {
        let mut p = SharePartition::new(0);
        assert_eq!(p.acquire(0, "s1#1", 30_000, 1), 1);
        assert_eq!((p.start_offset, p.end_offset, p.in_flight()), (0, 1, 1));
        assert_eq!(p.record(0).map(|r| r.state), Some(DeliveryState::Acquired));
    }

    #[test]
    fn accept_at_the_start_moves_the_spso_but_a_gap_before_it_holds_it() {
        let mut p = SharePartition::new(0);
        acquired(&mut p, "a", 0..4, 30_000);
        p.acknowledge("a", &[1, 2], AcknowledgeType::Accept, 5)
            .expect("held");
        assert_eq!(p.start_offset, 0, "offset 0 is still acquired");
        p.acknowledge("a", &[0], AcknowledgeType::Accept, 5)
            .expect("held");
        assert_eq!((p.start_offset, p.end_offset), (3, 4));
        assert!(p.record(1).is_none(), "behind the SPSO nothing is kept");
    }

    #[test]
    fn reject_archives_and_moves_the_spso_like_accept() {
        let mut p = SharePartition::new(5);
        acquired(&mut p, "a", 5..6, 30_000);
        let t = p
            .acknowledge("a", &[5], AcknowledgeType::Reject, 5)
            .expect("held");
        assert_eq!(t[0].to, DeliveryState::Archived);
        assert_eq!(p.start_offset, 6);
    }

    #[test]
    fn release_makes_a_record_available_until_the_limit_archives_it() {
        let mut p = SharePartition::new(0);
        for n in 1..=3u16 {
            assert_eq!(p.acquire(0, "a", 1_000, 1), n);
            let t = p
                .acknowledge("a", &[0], AcknowledgeType::Release, 3)
                .expect("held");
            let want = if n < 3 {
                DeliveryState::Available
            } else {
                DeliveryState::Archived
            };
            assert_eq!(t[0].to, want, "delivery {n}");
        }
        assert_eq!(
            p.start_offset, 1,
            "the archived poison record no longer holds the SPSO"
        );
    }

    #[test]
    fn only_the_holder_may_acknowledge_and_a_refusal_changes_nothing() {
        let mut p = SharePartition::new(0);
        acquired(&mut p, "a", 0..2, 30_000);
        let before = p.clone();
        let err = p
            .acknowledge("b", &[0], AcknowledgeType::Accept, 5)
            .expect_err("not b's");
        assert_eq!(err.kafka_error(), Some("INVALID_RECORD_STATE"));
        let err = p
            .acknowledge("a", &[1, 7], AcknowledgeType::Accept, 5)
            .expect_err("7 is not held");
        assert!(err.to_string().contains("offset 7"), "{err}");
        assert_eq!(
            p, before,
            "atomic per partition: offset 1 was not accepted either"
        );
    }

    #[test]
    fn an_expired_lock_returns_the_record_and_counts_against_the_limit() {
        let mut p = SharePartition::new(0);
        acquired(&mut p, "a", 0..2, 30_000);
        assert_eq!(p.next_lock_expiry(), Some(30_000));
        assert!(p.expire_locks(29_999, 5).is_empty());
        let back = p.expire_locks(30_000, 5);
        assert_eq!(back.len(), 2);
        assert!(back
            .iter()
            .all(|(m, t)| m == "a" && t.to == DeliveryState::Available));
        assert_eq!(p.available().collect::<Vec<_>>(), vec![0, 1]);
        assert_eq!(p.acquire(0, "b", 60_000, 2), 2, "the second delivery");
    }

    #[test]
    fn the_window_limits_new_records_even_when_most_are_done() {
        let mut p = SharePartition::new(0);
        acquired(&mut p, "a", 0..100, 30_000);
        p.acknowledge("a", &(1..100).collect::<Vec<_>>(), AcknowledgeType::Accept, 5)
            .expect("held");
        assert_eq!(
            (p.in_flight(), p.room(100)),
            (100, 0),
            "offset 0 holds the window open"
        );
    }

    #[test]
    fn the_log_start_archives_available_records_and_pulls_the_spso() {
        let mut p = SharePartition::new(0);
        acquired(&mut p, "a", 0..3, 30_000);
        p.acknowledge("a", &[0], AcknowledgeType::Release, 5)
            .expect("held");
        let t = p.follow_log_start(2);
        assert_eq!(t.len(), 1, "offset 0 was available; offset 1 is still acquired");
        assert_eq!(p.start_offset, 2);
        let t = p.release_member("a", 5);
        assert!(t.iter().any(|t| t.offset == 1 && t.to == DeliveryState::Archived));
        assert!(t
            .iter()
            .any(|t| t.offset == 2 && t.to == DeliveryState::Available));
    }
}
