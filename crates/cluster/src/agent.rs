//! A consumer agent: one real Kafka consumer (librdkafka) in a process of its own, doing what
//! the runner's [`Request`]s say and telling it every record it hands to the application.
//!
//! It is a process so that a crash is one: `SIGKILL` ends it with no LeaveGroup, no final
//! commit, and the client's auto-commit timer dies with it — what happens to a consumer killed
//! in production, which no in-process simulation of a client can be trusted to reproduce.

use crate::protocol::{decode, encode, Delivered, PartitionOffset, Reply, Request};
use crate::settings::ConsumerSettings;
use offsetlab_records::RecordBytes;
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, RebalanceProtocol};
use rdkafka::error::KafkaResult;
use rdkafka::message::Message;
use rdkafka::producer::{BaseProducer, BaseRecord, Producer};
use rdkafka::types::RDKafkaRespErr;
use rdkafka::{Offset, TopicPartitionList};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, Write};
use std::time::{Duration, Instant};

/// Why an agent stopped before it was told to close.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("the consumer could not be created: {0}")]
    Client(#[from] rdkafka::error::KafkaError),
    #[error("the runner's pipe: {0}")]
    Io(#[from] std::io::Error),
}

/// Runs the agent until [`Request::Close`] or the end of `input` (the runner went away: the
/// consumer is closed as `close()` closes it).
pub fn run(
    settings: &ConsumerSettings,
    input: impl BufRead,
    mut output: impl Write,
) -> Result<(), AgentError> {
    let mut config = ClientConfig::new();
    for (k, v) in settings.properties() {
        config.set(k, v);
    }
    let starts = StartAt {
        offsets: std::sync::Mutex::new(
            settings
                .start_offsets
                .iter()
                .map(|&(p, o)| ((settings.topic.clone(), p), o))
                .collect(),
        ),
        holding: std::sync::atomic::AtomicBool::new(true),
    };
    let created = Instant::now();
    let consumer: BaseConsumer<StartAt> = config.create_with_context(starts)?;
    consumer.subscribe(&[settings.topic.as_str()])?;
    let producer = match &settings.transactional_id {
        None => None,
        Some(id) => {
            let mut config = ClientConfig::new();
            config
                .set("bootstrap.servers", &settings.bootstrap_servers)
                .set("transactional.id", id)
                .set("client.id", &settings.client_id);
            if let Some(t) = settings.transaction_timeout_ms {
                config.set("transaction.timeout.ms", t.to_string());
            }
            for (k, v) in &settings.extra {
                config.set(k, v);
            }
            let producer: BaseProducer = config.create()?;
            // Fences an earlier incarnation's producer and aborts what it left open.
            producer.init_transactions(TXN)?;
            Some(producer)
        }
    };
    let mut agent = Agent {
        topic: settings.topic.clone(),
        consumer,
        reached: BTreeMap::new(),
        early: Vec::new(),
        reset: settings.reset.clone(),
        settled: BTreeSet::new(),
        producer,
        open_txn: false,
    };
    if settings.joins_later {
        agent.serve(JOINING);
    } else {
        agent.join();
    }
    let stopped = agent.missing_offset();
    say(
        &mut output,
        &Reply::Ready {
            client_id: settings.client_id.clone(),
            created_ms_ago: u64::try_from(created.elapsed().as_millis()).unwrap_or(u64::MAX),
            stopped,
        },
    )?;
    for line in input.lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        let reply = match decode::<Request>(&line) {
            Ok(Request::Close) => {
                // Dropping a BaseConsumer is `close()`: the final auto-commit and LeaveGroup.
                drop(agent);
                return say(&mut output, &Reply::Closed);
            }
            Ok(request) => agent.handle(request),
            Err(e) => Reply::Failed {
                message: e.to_string(),
            },
        };
        say(&mut output, &reply)?;
    }
    Ok(())
}

fn say(output: &mut impl Write, reply: &Reply) -> Result<(), AgentError> {
    writeln!(output, "{}", encode(reply))?;
    output.flush()?;
    Ok(())
}

/// Where a partition starts when the group gives it to this consumer: the offsets a
/// transactional sink holds (empty otherwise: the committed offset, or `auto.offset.reset`).
/// They are set in the assignment itself, so nothing is fetched from anywhere else first.
struct StartAt {
    /// A poll brings them up to date (the sink moves as the group's members process).
    offsets: std::sync::Mutex<BTreeMap<(String, i32), i64>>,
    /// Until the scenario's first poll, an assignment is paused where it starts: the join
    /// happens when the consumer starts (a broker's `group.initial.rebalance.delay.ms` is
    /// waited out there, not inside the scenario's first poll), and nothing is fetched — or
    /// stored for an auto-commit — before the scenario polls.
    holding: std::sync::atomic::AtomicBool,
}

impl StartAt {
    fn starts(&self) -> BTreeMap<(String, i32), i64> {
        self.offsets
            .lock()
            .map(|o| o.clone())
            .unwrap_or_else(|e| e.into_inner().clone())
    }
}

impl ClientContext for StartAt {}

impl ConsumerContext for StartAt {
    fn rebalance(&self, consumer: &BaseConsumer<Self>, err: RDKafkaRespErr, tpl: &mut TopicPartitionList) {
        let cooperative = matches!(consumer.rebalance_protocol(), RebalanceProtocol::Cooperative);
        let done: KafkaResult<()> = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                let partitions: Vec<(String, i32)> = tpl
                    .elements()
                    .iter()
                    .map(|e| (e.topic().to_string(), e.partition()))
                    .collect();
                let starts = self.starts();
                for (topic, p) in partitions {
                    if let Some(&o) = starts.get(&(topic.clone(), p)) {
                        // The partition is in the list: setting its offset cannot fail.
                        let _ = tpl.set_partition_offset(&topic, p, Offset::Offset(o));
                    }
                }
                let assigned = if cooperative {
                    consumer.incremental_assign(tpl)
                } else {
                    consumer.assign(tpl)
                };
                if self.holding.load(std::sync::atomic::Ordering::SeqCst) {
                    assigned.and_then(|()| consumer.pause(tpl))
                } else {
                    assigned
                }
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                if cooperative {
                    consumer.incremental_unassign(tpl)
                } else {
                    consumer.unassign()
                }
            }
            _ => Ok(()),
        };
        // A failed (un)assign surfaces as the next poll's error or as no records.
        let _ = done;
    }
}

struct Agent {
    /// The topic it subscribes to, on the cluster.
    topic: String,
    consumer: BaseConsumer<StartAt>,
    /// Per partition, the offset after the last record this process handed out.
    reached: BTreeMap<(String, i32), i64>,
    /// Records the client returned while joining (before its pause took hold): the first
    /// poll's.
    early: Vec<Delivered>,
    /// `auto.offset.reset`, as the scenario says it (`earliest`, `latest`, `none`).
    reset: String,
    /// Partitions whose start by `auto.offset.reset=latest` was waited for.
    settled: BTreeSet<(String, i32)>,
    /// A read-process-write application's transactional producer, and whether it has a
    /// transaction open.
    producer: Option<BaseProducer>,
    open_txn: bool,
}

/// How long a transaction call (init, offsets, commit) may take.
const TXN: Duration = Duration::from_secs(30);

/// How long a starting consumer waits to be given its partitions.
const JOIN: Duration = Duration::from_secs(30);

/// How long a consumer the model's group gives nothing at its start serves its client before
/// it says it is ready: its JoinGroup is on its way.
const JOINING: Duration = Duration::from_millis(200);

impl Agent {
    fn handle(&mut self, request: Request) -> Reply {
        let result = match request {
            Request::Poll {
                max,
                timeout_ms,
                assigned,
                starts,
                shares,
            } => {
                if !starts.is_empty() {
                    let mut offsets = match self.consumer.context().offsets.lock() {
                        Ok(o) => o,
                        Err(e) => e.into_inner(),
                    };
                    for (p, o) in starts {
                        offsets.insert((self.topic.clone(), p), o);
                    }
                }
                self.poll(
                    max,
                    Duration::from_millis(timeout_ms),
                    assigned.as_deref(),
                    shares.as_deref(),
                )
            }
            // The positions poll reached, as the Java client's `commitSync()` commits them
            // (librdkafka's own "commit the consumer's state" commits *stored* offsets, which
            // only auto-timer stores).
            Request::Commit => self.positions().and_then(|tpl| {
                self.commit_sync(&tpl).map(|()| Reply::Committed {
                    offsets: offsets(&tpl),
                })
            }),
            Request::CommitOffsets { offsets: wanted } => {
                match partition_list(&wanted).and_then(|tpl| self.commit_sync(&tpl)) {
                    Ok(()) => Ok(Reply::Committed { offsets: wanted }),
                    Err(e) if fenced(&e) => Ok(Reply::CommitRefused {
                        message: e.to_string(),
                    }),
                    Err(e) => Err(e),
                }
            }
            Request::CommitOffsetsAsync { offsets: wanted } => partition_list(&wanted)
                .and_then(|tpl| self.consumer.commit(&tpl, CommitMode::Async))
                .map(|()| Reply::CommitSent),
            Request::CommitAsync => self
                .positions()
                .and_then(|tpl| self.consumer.commit(&tpl, CommitMode::Async))
                .map(|()| Reply::CommitSent),
            Request::Committed { timeout_ms } => self
                .consumer
                .committed(Duration::from_millis(timeout_ms))
                .map(|tpl| Reply::Committed {
                    offsets: offsets(&tpl),
                }),
            Request::Seek { offsets: wanted } => self.seek(&wanted),
            Request::TxnSend { topic, key, value } => self.txn_send(&topic, key, value),
            Request::TxnCommit { offsets: wanted } => self.txn_commit(wanted),
            Request::Close => Ok(Reply::Closed),
        };
        result.unwrap_or_else(|e| Reply::Failed {
            message: e.to_string(),
        })
    }

    /// One `poll()` of the scenario: the first record waited for up to `timeout`, then records
    /// until `max` or until the consumer caught up with what the partitions hold (as far as its
    /// last fetch told it). With nothing to read, it answers once the consumer has held its
    /// partitions for [`SETTLE`] and nothing came — long enough for the client's own offset
    /// lookup (`auto.offset.reset`) to be done, so what is produced afterwards is read.
    fn txn_send(
        &mut self,
        topic: &str,
        key: Option<RecordBytes>,
        value: Option<RecordBytes>,
    ) -> rdkafka::error::KafkaResult<Reply> {
        let Some(producer) = &self.producer else {
            return Err(rdkafka::error::KafkaError::Global(
                rdkafka::types::RDKafkaErrorCode::State,
            ));
        };
        if !self.open_txn {
            producer.begin_transaction()?;
            self.open_txn = true;
        }
        let mut record: BaseRecord<'_, [u8], [u8]> = BaseRecord::to(topic);
        if let Some(k) = &key {
            record = record.key(k.as_bytes());
        }
        if let Some(v) = &value {
            record = record.payload(v.as_bytes());
        }
        producer.send(record).map_err(|(e, _)| e)?;
        producer.poll(Duration::ZERO);
        Ok(Reply::Sent)
    }

    fn txn_commit(&mut self, wanted: Vec<PartitionOffset>) -> rdkafka::error::KafkaResult<Reply> {
        let Some(producer) = &self.producer else {
            return Ok(Reply::Committed { offsets: Vec::new() });
        };
        if !self.open_txn {
            return Ok(Reply::Committed { offsets: Vec::new() });
        }
        let tpl = partition_list(&wanted)?;
        let metadata = self
            .consumer
            .group_metadata()
            .ok_or(rdkafka::error::KafkaError::Global(
                rdkafka::types::RDKafkaErrorCode::State,
            ))?;
        producer.send_offsets_to_transaction(&tpl, &metadata, TXN)?;
        producer.commit_transaction(TXN)?;
        self.open_txn = false;
        Ok(Reply::Committed { offsets: wanted })
    }

    /// `commitSync()`: asked again while the group's coordinator is being found — as the Java
    /// client's `commitSync()` retries until its timeout — for up to [`COORDINATOR_WAIT`].
    /// (A coordinator's broker that fails moves the group to another: Kafka elects a new
    /// leader of its `__consumer_offsets` partition once the controller has fenced the old
    /// broker, `broker.session.timeout.ms` after its last heartbeat, 9 s by default.)
    fn commit_sync(&self, tpl: &TopicPartitionList) -> KafkaResult<()> {
        let deadline = Instant::now() + COORDINATOR_WAIT;
        loop {
            match self.consumer.commit(tpl, CommitMode::Sync) {
                Err(e) if coordinator_moving(&e) && Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(200));
                }
                done => return done,
            }
        }
    }

    /// The partitions of its topic among `partitions` that have no leader on the cluster now
    /// (every replica out of the cluster or out of sync: a partition whose only broker is gone),
    /// said in a sentence; `None` when each has one or the cluster did not answer.
    fn leaderless(&self, partitions: &BTreeSet<i32>) -> Option<String> {
        let metadata = self.consumer.fetch_metadata(Some(&self.topic), WATERMARKS).ok()?;
        let topic = metadata.topics().iter().find(|t| t.name() == self.topic)?;
        let lost: Vec<String> = topic
            .partitions()
            .iter()
            .filter(|p| partitions.contains(&p.id()) && p.leader() < 0)
            .map(|p| {
                format!(
                    "{}-{} (replicas on broker(s) {:?})",
                    self.topic,
                    p.id(),
                    p.replicas()
                )
            })
            .collect();
        (!lost.is_empty()).then(|| {
            format!(
                "no leader on the cluster for {}: no broker that holds it is in the cluster and in sync, so nothing can be fetched from it",
                lost.join(", ")
            )
        })
    }

    /// Joins the group before the scenario's clock starts for this consumer: polls until the
    /// group gives it partitions (paused by [`StartAt`]) or [`JOIN`] passes.
    fn join(&mut self) {
        let deadline = Instant::now() + JOIN;
        while Instant::now() < deadline && !self.consumer.assignment().is_ok_and(|a| a.count() > 0) {
            if let Some(Ok(m)) = self.consumer.poll(STEP) {
                self.early.push(delivered(&m));
            }
        }
    }

    /// Moves each partition's fetch position: what was fetched of it and not handed out yet is
    /// dropped, and its position is where the next record comes from.
    fn seek(&mut self, wanted: &[PartitionOffset]) -> rdkafka::error::KafkaResult<Reply> {
        for o in wanted {
            self.consumer
                .seek(&o.topic, o.partition, Offset::Offset(o.offset), SEEK)?;
            self.early
                .retain(|r| !(r.topic == o.topic && r.partition == o.partition));
            self.reached.insert((o.topic.clone(), o.partition), o.offset);
        }
        Ok(Reply::Sought {
            offsets: wanted.to_vec(),
        })
    }

    /// With `auto.offset.reset=none`, the first partition of its assignment that has no
    /// position to start from: no offset in the sink, none (or a negative one) committed. The
    /// client's own OffsetFetch decides, before anything is fetched — where the Java client's
    /// poll throws `NoOffsetForPartitionException` and librdkafka's emits
    /// `auto.offset.reset=error`'s error.
    fn missing_offset(&self) -> Option<String> {
        if self.reset != "none" {
            return None;
        }
        let assignment = self.consumer.assignment().ok()?;
        let starts = self.consumer.context().starts();
        let committed = self.consumer.committed_offsets(assignment.clone(), WATERMARKS);
        assignment.elements().iter().find_map(|e| {
            let key = (e.topic().to_string(), e.partition());
            if starts.contains_key(&key) || self.reached.contains_key(&key) {
                return None;
            }
            let stored = committed
                .as_ref()
                .ok()
                .and_then(|c| c.find_partition(e.topic(), e.partition()))
                .map(|c| c.offset());
            match stored {
                Some(Offset::Offset(o)) if o >= 0 => None,
                _ => Some(format!(
                    "no committed offset for {}-{} and auto.offset.reset=none: the consumer stops (NoOffsetForPartitionException)",
                    e.topic(),
                    e.partition()
                )),
            }
        })
    }

    /// Serves the client's events (a rebalance's callbacks) for `time`, its partitions paused.
    fn serve(&mut self, time: Duration) {
        let until = Instant::now() + time;
        self.hold();
        while Instant::now() < until {
            if let Some(Ok(m)) = self.consumer.poll(STEP) {
                // Fetched before the pause took hold: the next poll's, if the partition is
                // still this consumer's then.
                self.early.push(delivered(&m));
            }
            self.hold();
        }
    }

    /// Pauses every assigned partition, and every partition assigned from now on, until
    /// [`Agent::release`].
    fn hold(&mut self) {
        self.consumer
            .context()
            .holding
            .store(true, std::sync::atomic::Ordering::SeqCst);
        if let Ok(assignment) = self.consumer.assignment() {
            let _ = self.consumer.pause(&assignment);
        }
    }

    /// The partitions of its topic the group has given this consumer.
    fn held(&self) -> BTreeSet<i32> {
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
    /// partitions paused meanwhile so that nothing of another assignment is handed out. An
    /// empty `want` — the model's group is still rebalancing — is not waited for: whatever the
    /// cluster gave stays paused.
    fn await_assignment(&mut self, want: &[i32], deadline: Instant) -> Result<(), String> {
        let want: BTreeSet<i32> = want.iter().copied().collect();
        if want.is_empty() {
            self.serve(Duration::ZERO);
            return Ok(());
        }
        loop {
            let held = self.held();
            if held == want {
                return Ok(());
            }
            self.hold();
            if Instant::now() >= deadline {
                return Err(format!(
                    "the group gave this consumer partitions {held:?} of {} where the model's gave {want:?}",
                    self.topic
                ));
            }
            if let Some(Ok(m)) = self.consumer.poll(STEP) {
                self.early.push(delivered(&m));
            }
        }
    }

    /// Lets the partitions go: the poll fetches from every partition the group gave this
    /// consumer (and [`StartAt`] no longer pauses what it is given).
    fn release(&mut self) {
        self.consumer
            .context()
            .holding
            .store(false, std::sync::atomic::Ordering::SeqCst);
        if let Ok(assignment) = self.consumer.assignment() {
            let _ = self.consumer.resume(&assignment);
        }
    }

    fn poll(
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
                    self.reached
                        .insert((m.topic().to_string(), m.partition()), m.offset() + 1);
                    records.push(delivered(&m));
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
    fn take_shares(&mut self, shares: &[(i32, usize)], deadline: Instant) -> Result<Vec<Delivered>, String> {
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
            let d = delivered(&m);
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
    fn settle_unread(&mut self) {
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
                self.early.push(delivered(&m));
            }
        }
        self.settled.extend(unread);
    }

    /// Pauses every assigned partition but those in `open` (resumed).
    fn pause_all_but(&self, open: &BTreeMap<i32, usize>) {
        let Ok(assignment) = self.consumer.assignment() else {
            return;
        };
        let (mut pause, mut resume) = (TopicPartitionList::new(), TopicPartitionList::new());
        for e in assignment.elements() {
            let list = if e.topic() == self.topic && open.contains_key(&e.partition()) {
                &mut resume
            } else {
                &mut pause
            };
            list.add_partition(e.topic(), e.partition());
        }
        let _ = self.consumer.pause(&pause);
        let _ = self.consumer.resume(&resume);
    }

    /// Whether this process has read every assigned partition up to its high watermark (asked
    /// of the partition's leader). A partition it has not read from yet starts where the sink
    /// says, at the group's committed offset, or by `auto.offset.reset` — caught up only when
    /// that start is the partition's end.
    fn caught_up(&self) -> bool {
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
const STEP: Duration = Duration::from_millis(50);
/// How long a consumer that holds its partitions and found nothing waits before saying so.
const SETTLE: Duration = Duration::from_millis(1000);
/// How long a seek may take.
const SEEK: Duration = Duration::from_secs(10);
/// How long asking for a partition's watermarks may take.
const WATERMARKS: Duration = Duration::from_secs(2);
/// How long a commit waits for the group's coordinator to be found again.
const COORDINATOR_WAIT: Duration = Duration::from_secs(20);
/// How long a poll waits with nothing coming before it asks whether its partitions still have
/// leaders, and the time between two such checks.
const LEADER_CHECK: Duration = Duration::from_secs(1);

impl Agent {
    /// The partitions poll has reached a position in, at those positions (a partition not read
    /// from yet has none, and is not committed).
    fn positions(&self) -> rdkafka::error::KafkaResult<TopicPartitionList> {
        let reached = self.consumer.position()?;
        let mut tpl = TopicPartitionList::new();
        for e in reached.elements() {
            if let Offset::Offset(o) = e.offset() {
                tpl.add_partition_offset(e.topic(), e.partition(), Offset::Offset(o))?;
            }
        }
        if tpl.count() == 0 {
            return Err(rdkafka::error::KafkaError::ConsumerCommit(
                rdkafka::types::RDKafkaErrorCode::NoOffset,
            ));
        }
        Ok(tpl)
    }
}

fn delivered(m: &rdkafka::message::BorrowedMessage<'_>) -> Delivered {
    Delivered {
        topic: m.topic().to_string(),
        partition: m.partition(),
        offset: m.offset(),
        key: m.key().map(|k| RecordBytes::new(k.to_vec())),
        value: m.payload().map(|v| RecordBytes::new(v.to_vec())),
    }
}

/// Whether a request to the group's coordinator failed because the coordinator is being found
/// or loaded again (librdkafka's own "waiting for coordinator" included): to be asked again.
fn coordinator_moving(e: &rdkafka::error::KafkaError) -> bool {
    e.rdkafka_error_code().is_some_and(|code| {
        code == rdkafka::types::RDKafkaErrorCode::WaitingForCoordinator
            || crate::admin::coordinator_moving(code)
    })
}

/// Whether a commit failed because the coordinator fenced the consumer (or librdkafka knew it
/// would: it has left the group after `max.poll.interval.ms`), not because the cluster could
/// not be reached.
fn fenced(e: &rdkafka::error::KafkaError) -> bool {
    use rdkafka::types::RDKafkaErrorCode as Code;
    matches!(
        e.rdkafka_error_code(),
        Some(
            Code::UnknownMemberId
                | Code::IllegalGeneration
                | Code::RebalanceInProgress
                | Code::FencedInstanceId
                | Code::PollExceeded
                | Code::AssignmentLost
                | Code::State
        )
    )
}

fn partition_list(offsets: &[PartitionOffset]) -> rdkafka::error::KafkaResult<TopicPartitionList> {
    let mut tpl = TopicPartitionList::new();
    for o in offsets {
        tpl.add_partition_offset(&o.topic, o.partition, Offset::Offset(o.offset))?;
    }
    Ok(tpl)
}

fn offsets(tpl: &TopicPartitionList) -> Vec<PartitionOffset> {
    tpl.elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) => Some(PartitionOffset {
                topic: e.topic().to_string(),
                partition: e.partition(),
                offset: o,
            }),
            _ => None,
        })
        .collect()
}
