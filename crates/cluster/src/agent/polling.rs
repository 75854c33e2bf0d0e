//! A poll on the real client, as the model's poll went: the group's assignment awaited with the
//! partitions paused (so nothing of another assignment is handed out), each partition's share of
//! the model's batch taken (a partition done paused while others are awaited), and what
//! was fetched too early kept for the next poll. The agent's other requests (commits,
//! transactions, seeks) are one client call each and stay in `mod.rs`; this is the part that
//! waits on the client's queue.

use super::{Agent, StartAt, LEADER_CHECK, WATERMARKS};
use crate::protocol::{Delivered, Reply};
use offsetlab_records::RecordBytes;
use rdkafka::consumer::BaseConsumer;
use rdkafka::consumer::Consumer;
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

impl Agent {
    /// Serves the client's events (a rebalance's callbacks) for `time`, its partitions paused.
    pub(super) fn serve(&mut self, time: Duration) {
        let until = Instant::now() + time;
        self.hold();
        while Instant::now() < until {
            if let Some(Ok(m)) = self.consumer.poll(STEP) {
                // Fetched before the pause took hold: the next poll's, if the partition is
                // still this consumer's then.
                self.early.extend(admitted(&mut self.sought, &self.consumer, &m));
            }
            self.hold();
        }
    }

    /// Pauses every assigned partition, and every partition assigned from now on, until
    /// [`Agent::release`].
    pub(super) fn hold(&mut self) {
        self.consumer
            .context()
            .holding
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Ok(assignment) = self.consumer.assignment() {
            self.consumer
                .context()
                .pauses
                .pause(&self.consumer, super::pauses::keys(&assignment));
        }
    }

    /// The partitions of its topic the group has given this consumer.
    pub(super) fn held(&self) -> BTreeSet<i32> {
        self.consumer
            .assignment()
            .map(|a| {
                a.elements()
                    .iter()
                    .filter(|e| e.topic() == self.topic)
                    .map(|e| e.partition())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits (until `deadline`) for the group to give this consumer exactly `want`, its
    /// partitions paused meanwhile so that nothing of another assignment is handed out — and,
    /// after an incremental revocation, for the rebalance to finish (the assignment callback
    /// that follows it), so that the client acknowledges the revocation inside this poll, as the
    /// model's does. An empty `want` — the model's group is still rebalancing — is not waited
    /// for: whatever the cluster gave stays paused.
    pub(super) fn await_assignment(&mut self, want: &[i32], deadline: Instant) -> Result<(), String> {
        let want: BTreeSet<i32> = want.iter().copied().collect();
        if want.is_empty() && !self.consumer.context().revocation_unfinished() {
            self.serve(Duration::ZERO);
            return Ok(());
        }
        loop {
            let held = self.held();
            if (held == want || want.is_empty()) && !self.consumer.context().revocation_unfinished() {
                return Ok(());
            }
            self.hold();
            if Instant::now() >= deadline {
                if held == want || want.is_empty() {
                    return Err(
                        "the client did not finish its rebalance within the poll: the assignment callback that follows a revocation never came"
                            .into(),
                    );
                }
                return Err(format!(
                    "the group gave this consumer partitions {held:?} of {} where the model's gave {want:?}",
                    self.topic
                ));
            }
            if let Some(Ok(m)) = self.consumer.poll(STEP) {
                self.early.extend(admitted(&mut self.sought, &self.consumer, &m));
            }
        }
    }

    /// Lets the partitions go: the poll fetches from every partition the group gave this
    /// consumer (and [`StartAt`] no longer pauses what it is given).
    pub(super) fn release(&mut self) {
        self.consumer
            .context()
            .holding
            .store(false, std::sync::atomic::Ordering::SeqCst);
        if let Ok(assignment) = self.consumer.assignment() {
            self.consumer
                .context()
                .pauses
                .resume(&self.consumer, super::pauses::keys(&assignment));
        }
    }

    pub(super) fn poll(
        &mut self,
        max: usize,
        timeout: Duration,
        assigned: Option<&[i32]>,
        shares: Option<&[(i32, usize)]>,
    ) -> rdkafka::error::KafkaResult<Reply> {
        let deadline = Instant::now() + timeout;
        if let Some(want) = assigned {
            if let Err(message) = self.await_assignment(want, deadline) {
                return Ok(Reply::Failed { message });
            }
            if let Some(message) = self.missing_offset() {
                return Ok(Reply::Stopped { message });
            }
            // Records fetched for a partition that is not this consumer's now are not its, and
            // one given back later is read afresh.
            let held = self.held();
            let topic = self.topic.clone();
            let ours = |t: &String, p: &i32| t == &topic && held.contains(p);
            self.early.retain(|r| ours(&r.topic, &r.partition));
            self.reached.retain(|(t, p), _| ours(t, p));
            self.sought.retain(|(t, p), _| ours(t, p));
            self.settled.retain(|(t, p)| ours(t, p));
            if want.is_empty() {
                return Ok(Reply::Records { records: Vec::new() });
            }
        } else if let Some(message) = self.missing_offset() {
            // The model's consumer stopped inside this poll (no offset to start from).
            return Ok(Reply::Stopped { message });
        }
        self.release();
        if let Some(shares) = shares {
            return Ok(match self.take_shares(shares, deadline) {
                Ok(records) => Reply::Records { records },
                Err(message) => Reply::Failed { message },
            });
        }
        let mut assigned_since: Option<Instant> = None;
        let take = self.early.len().min(max);
        let mut records: Vec<Delivered> = self.early.drain(..take).collect();
        for r in &records {
            self.reached.insert((r.topic.clone(), r.partition), r.offset + 1);
        }
        while records.len() < max {
            let wait = if records.is_empty() {
                deadline.saturating_duration_since(Instant::now()).min(STEP)
            } else {
                STEP
            };
            match self.consumer.poll(wait) {
                Some(Ok(m)) => {
                    let Some(d) = admitted(&mut self.sought, &self.consumer, &m) else {
                        continue;
                    };
                    self.reached.insert((d.topic.clone(), d.partition), d.offset + 1);
                    records.push(d);
                }
                // Nothing fetched in this step, an end-of-partition event or a transient error:
                // not a record.
                Some(Err(_)) | None => {
                    if !records.is_empty() {
                        if self.caught_up() {
                            break;
                        }
                        continue;
                    }
                    if Instant::now() >= deadline {
                        break;
                    }
                    let holds = self.consumer.assignment().is_ok_and(|a| a.count() > 0);
                    match (holds, assigned_since) {
                        (false, _) => assigned_since = None,
                        (true, None) => assigned_since = Some(Instant::now()),
                        (true, Some(since)) if since.elapsed() >= SETTLE && self.caught_up() => break,
                        (true, Some(_)) => {}
                    }
                }
            }
            if !records.is_empty() && Instant::now() >= deadline {
                break;
            }
        }
        Ok(Reply::Records { records })
    }

    /// The records of one poll as the model's poll made its batch: `shares` of each partition
    /// (Java's client fills a batch partition by partition, librdkafka hands out in fetch
    /// order — the cluster decides what each partition holds, never which one a batch favours).
    /// A partition that has no share, or whose share is taken while others are still awaited,
    /// is paused at once, so that nothing more of it comes out of the client's queue — with
    /// auto-timer, every record poll returns is stored for the next commit. Waits until
    /// `deadline` for what is not there yet.
    pub(super) fn take_shares(
        &mut self,
        shares: &[(i32, usize)],
        deadline: Instant,
    ) -> Result<Vec<Delivered>, String> {
        let mut left: BTreeMap<i32, usize> = shares.iter().copied().filter(|&(_, n)| n > 0).collect();
        let mut records = Vec::new();
        for r in std::mem::take(&mut self.early) {
            match left.get_mut(&r.partition) {
                Some(n) if *n > 0 && r.topic == self.topic => {
                    *n -= 1;
                    self.reached.insert((r.topic.clone(), r.partition), r.offset + 1);
                    records.push(r);
                }
                _ => self.early.push(r),
            }
        }
        left.retain(|_, n| *n > 0);
        self.pause_all_but(&left);
        // Nothing coming for a while: a partition whose leader is gone (its only broker
        // killed) never delivers; said once two checks a second apart agree, rather than at the
        // poll's deadline.
        let mut quiet_since = Instant::now();
        let mut next_check = Instant::now() + LEADER_CHECK;
        let mut lost_once = false;
        while !left.is_empty() && Instant::now() < deadline {
            let Some(Ok(m)) = self.consumer.poll(STEP) else {
                if quiet_since.elapsed() >= LEADER_CHECK && Instant::now() >= next_check {
                    next_check = Instant::now() + LEADER_CHECK;
                    let waiting: BTreeSet<i32> = left.keys().copied().collect();
                    match self.leaderless(&waiting) {
                        Some(why) if lost_once => return Err(why),
                        Some(_) => lost_once = true,
                        None => lost_once = false,
                    }
                }
                continue;
            };
            quiet_since = Instant::now();
            let Some(d) = admitted(&mut self.sought, &self.consumer, &m) else {
                continue;
            };
            match left.get_mut(&d.partition) {
                Some(n) if d.topic == self.topic => {
                    *n -= 1;
                    if *n == 0 {
                        left.remove(&d.partition);
                        // Done with it; while other shares are awaited, nothing more of it
                        // may come out of the queue. (When none are, the loop ends here and
                        // what the client fetched beyond stays queued, unread, for the next
                        // poll: no pause, no fetch again.)
                        if !left.is_empty() {
                            self.pause_all_but(&left);
                        }
                    }
                    self.reached.insert((d.topic.clone(), d.partition), d.offset + 1);
                    records.push(d);
                }
                // Already in the client's queue as its partition paused: a later poll's.
                _ => self.early.push(d),
            }
        }
        self.settle_unread();
        Ok(records)
    }

    /// With `auto.offset.reset=latest`, a partition this process has not read from, and that
    /// has no committed offset (or sink offset) to start at, starts at the log end as the
    /// client's own offset lookup finds it — when that lookup answers. The model's position is
    /// set as the partition is given; so that a record produced after this poll is read, as
    /// the model reads it, the first poll holding such a partition waits [`SETTLE`] for the
    /// lookup (the partition paused: nothing is fetched meanwhile).
    pub(super) fn settle_unread(&mut self) {
        if self.reset != "latest" {
            return;
        }
        let Ok(assignment) = self.consumer.assignment() else {
            return;
        };
        let starts = self.consumer.context().starts();
        let mut unread: Vec<(String, i32)> = assignment
            .elements()
            .iter()
            .map(|e| (e.topic().to_string(), e.partition()))
            .filter(|k| !self.reached.contains_key(k) && !self.settled.contains(k) && !starts.contains_key(k))
            .collect();
        if unread.is_empty() {
            return;
        }
        if let Ok(committed) = self.consumer.committed_offsets(assignment, WATERMARKS) {
            unread.retain(|(t, p)| {
                !committed
                    .find_partition(t, *p)
                    .is_some_and(|c| matches!(c.offset(), Offset::Offset(o) if o >= 0))
            });
        }
        if unread.is_empty() {
            return;
        }
        let until = Instant::now() + SETTLE;
        while Instant::now() < until {
            if let Some(Ok(m)) = self.consumer.poll(STEP) {
                self.early.extend(admitted(&mut self.sought, &self.consumer, &m));
            }
        }
        self.settled.extend(unread);
    }

    /// Pauses every assigned partition but those in `open` (resumed).
    pub(super) fn pause_all_but(&self, open: &BTreeMap<i32, usize>) {
        let Ok(assignment) = self.consumer.assignment() else {
            return;
        };
        let (resume, pause): (Vec<_>, Vec<_>) = super::pauses::keys(&assignment)
            .into_iter()
            .partition(|(topic, p)| *topic == self.topic && open.contains_key(p));
        let pauses = &self.consumer.context().pauses;
        pauses.pause(&self.consumer, pause);
        pauses.resume(&self.consumer, resume);
    }

    /// Whether this process has read every assigned partition up to its high watermark (asked
    /// of the partition's leader). A partition it has not read from yet starts where the sink
    /// says, at the group's committed offset, or by `auto.offset.reset` — caught up only when
    /// that start is the partition's end.
    pub(super) fn caught_up(&self) -> bool {
        let Ok(assignment) = self.consumer.assignment() else {
            return false;
        };
        let mut committed: Option<TopicPartitionList> = None;
        assignment.elements().iter().all(|e| {
            let Ok((low, high)) = self
                .consumer
                .fetch_watermarks(e.topic(), e.partition(), WATERMARKS)
            else {
                return false;
            };
            let key = (e.topic().to_string(), e.partition());
            if let Some(&reached) = self.reached.get(&key) {
                return reached >= high;
            }
            if let Some(&start) = self.consumer.context().starts().get(&key) {
                return start >= high;
            }
            if committed.is_none() {
                committed = self
                    .consumer
                    .committed_offsets(assignment.clone(), WATERMARKS)
                    .ok();
            }
            let stored = committed
                .as_ref()
                .and_then(|c| c.find_partition(e.topic(), e.partition()))
                .and_then(|c| match c.offset() {
                    Offset::Offset(o) if o >= 0 => Some(o),
                    _ => None,
                });
            match (stored, self.reset.as_str()) {
                (Some(o), _) => o >= high,
                (None, "earliest") => low >= high,
                // latest: nothing before the end; none: the client stops.
                (None, _) => true,
            }
        })
    }
}

/// How long one step of a poll waits for the client's queue.
pub(super) const STEP: Duration = Duration::from_millis(50);

/// How long a consumer that holds its partitions and found nothing waits before saying so.
pub(super) const SETTLE: Duration = Duration::from_millis(1000);

/// The record the client handed out, unless a seek since the last rebalance put its partition
/// past it. librdkafka looks a newly assigned partition's committed offset up asynchronously
/// and starts fetching from it (or from `auto.offset.reset`) when the answer comes — after a
/// seek made meanwhile, which it then overrides: `seek c1 to=@1s` right after the consumer
/// joined, then records from offset 0 (one oracle run in a few). So after a seek, a record
/// before the partition's next offset (the seek's, then one past each record handed out) is
/// such a late start's, or a repeat of one, and is dropped; what the late start fetches from
/// the seek's offset on is what the seek would have fetched. A rebalance ends the watch: the
/// partition then starts afresh from its committed offset.
pub(super) fn admitted(
    sought: &mut BTreeMap<(String, i32), Sought>,
    consumer: &BaseConsumer<StartAt>,
    m: &rdkafka::message::BorrowedMessage<'_>,
) -> Option<Delivered> {
    let key = (m.topic().to_string(), m.partition());
    let rebalances = consumer.context().rebalances();
    if let Some(s) = sought.get_mut(&key) {
        if s.rebalances != rebalances {
            sought.remove(&key);
        } else if m.offset() < s.next {
            return None;
        } else {
            s.next = m.offset() + 1;
        }
    }
    Some(delivered(m))
}

/// A partition a seek moved: the offset the next record it hands out must be at least, and the
/// client's rebalance count when the seek was made.
#[derive(Debug, Clone, Copy)]
pub(super) struct Sought {
    pub(super) next: i64,
    pub(super) rebalances: u64,
}

pub(super) fn delivered(m: &rdkafka::message::BorrowedMessage<'_>) -> Delivered {
    Delivered {
        topic: m.topic().to_string(),
        partition: m.partition(),
        offset: m.offset(),
        key: m.key().map(|k| RecordBytes::new(k.to_vec())),
        value: m.payload().map(|v| RecordBytes::new(v.to_vec())),
    }
}
