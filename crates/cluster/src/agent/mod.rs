//! A consumer agent: one real Kafka consumer (librdkafka) in a process of its own, doing what
//! the runner's [`Request`]s say and telling it every record it hands to the application.
//!
//! It is a process so that a crash is one: `SIGKILL` ends it with no LeaveGroup, no final
//! commit, and the client's auto-commit timer dies with it — what happens to a consumer killed
//! in production, which no in-process simulation of a client can be trusted to reproduce.

mod pauses;
mod polling;

use crate::protocol::{decode, encode, Delivered, PartitionOffset, Reply, Request};
use crate::settings::ConsumerSettings;
use offsetlab_records::RecordBytes;
use polling::{admitted, STEP};
use rdkafka::client::ClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer, ConsumerContext, RebalanceProtocol};
use rdkafka::error::KafkaResult;
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
        rebalanced: std::sync::atomic::AtomicU64::new(0),
        revoked_unfinished: std::sync::atomic::AtomicBool::new(false),
        pauses: pauses::Pauses::default(),
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
        sought: BTreeMap::new(),
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
    /// How many assignments and revocations the client has called back with.
    rebalanced: std::sync::atomic::AtomicU64,
    /// An incremental revocation was called back and the assignment that follows it (of no
    /// partitions, often) not yet: librdkafka finishes the rebalance — and under the consumer
    /// protocol acknowledges the revocation to the coordinator — only once the application has
    /// been called back with both.
    revoked_unfinished: std::sync::atomic::AtomicBool,
    /// The partitions paused, each asked of librdkafka once ([`pauses`] says why).
    pauses: pauses::Pauses,
}

impl StartAt {
    fn rebalances(&self) -> u64 {
        self.rebalanced.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Whether an incremental revocation's rebalance still waits for its assignment callback.
    fn revocation_unfinished(&self) -> bool {
        self.revoked_unfinished.load(std::sync::atomic::Ordering::SeqCst)
    }

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
        self.rebalanced.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let done: KafkaResult<()> = match err {
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS => {
                self.revoked_unfinished
                    .store(false, std::sync::atomic::Ordering::SeqCst);
                let partitions = pauses::keys(tpl);
                let starts = self.starts();
                for (topic, p) in &partitions {
                    if let Some(&o) = starts.get(&(topic.clone(), *p)) {
                        // The partition is in the list: setting its offset cannot fail.
                        let _ = tpl.set_partition_offset(topic, *p, Offset::Offset(o));
                    }
                }
                // Held: paused before the assignment, so that the fetcher's start comes after
                // the pause — save a partition librdkafka does not know until it is assigned,
                // paused right after.
                let holding = self.holding.load(std::sync::atomic::Ordering::SeqCst);
                let unknown = if holding {
                    self.pauses.pause(consumer, partitions)
                } else {
                    Vec::new()
                };
                let assigned = if cooperative {
                    consumer.incremental_assign(tpl)
                } else {
                    consumer.assign(tpl)
                };
                if !unknown.is_empty() {
                    self.pauses.pause(consumer, unknown);
                }
                assigned
            }
            RDKafkaRespErr::RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS => {
                if cooperative {
                    // A lost assignment (fenced, the session or poll interval run out) is
                    // followed by a rejoin, not by an assignment callback.
                    self.revoked_unfinished
                        .store(!consumer.assignment_lost(), std::sync::atomic::Ordering::SeqCst);
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
    /// The partitions a seek moved since the last rebalance ([`polling::admitted`]).
    sought: BTreeMap<(String, i32), polling::Sought>,
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
            Request::SharePoll { .. } | Request::ShareAck { .. } => {
                return Reply::Failed {
                    message: "a consumer agent is no share consumer: share consumers run in the share agent"
                        .into(),
                }
            }
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
                self.early.extend(admitted(&mut self.sought, &self.consumer, &m));
            }
        }
    }

    /// Moves each partition's fetch position: what was fetched of it and not handed out yet is
    /// dropped, and its position is where the next record comes from.
    fn seek(&mut self, wanted: &[PartitionOffset]) -> rdkafka::error::KafkaResult<Reply> {
        for o in wanted {
            self.seek_once_started(o)?;
            self.early
                .retain(|r| !(r.topic == o.topic && r.partition == o.partition));
            self.reached.insert((o.topic.clone(), o.partition), o.offset);
            let rebalances = self.consumer.context().rebalances();
            self.sought.insert(
                (o.topic.clone(), o.partition),
                polling::Sought {
                    next: o.offset,
                    rebalances,
                },
            );
        }
        Ok(Reply::Sought {
            offsets: wanted.to_vec(),
        })
    }

    /// librdkafka refuses a seek ("Erroneous state") on a partition it has not started
    /// fetching: right after the assignment, while it still looks the committed offset up. Tried
    /// again, the client's events served meanwhile (its partitions paused), for up to [`SEEK`].
    fn seek_once_started(&mut self, o: &PartitionOffset) -> rdkafka::error::KafkaResult<()> {
        let deadline = Instant::now() + SEEK;
        loop {
            match self
                .consumer
                .seek(&o.topic, o.partition, Offset::Offset(o.offset), SEEK)
            {
                Err(rdkafka::error::KafkaError::Seek(m))
                    if m.contains("Erroneous state") && Instant::now() < deadline =>
                {
                    self.serve(STEP);
                }
                done => return done,
            }
        }
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
}

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
