//! One type per command of the scenario language, each with `parse` (from the words of a
//! line) and `apply` (to a [`Lab`]), and a `Display` that writes the canonical line back — so a
//! lab session can be exported as a script that parses to the same commands.

/// A command of one name: `KEYWORD NAME`, e.g. `poll c1` or `compact orders`. The type holds
/// the name in `$field`; `$what` names it in a parse error; `$apply` runs it on the lab.
macro_rules! one_name_command {
    ($(#[$doc:meta])* $ty:ident, $keyword:literal, $field:ident: $what:literal, |$lab:ident, $name:ident| $apply:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq)]
        pub struct $ty {
            pub $field: String,
        }

        impl $ty {
            pub fn parse(args: &mut $crate::token::Args) -> Result<Self, $crate::error::ParseError> {
                Ok(Self {
                    $field: args.word($what)?,
                })
            }

            pub fn apply(&self, $lab: &mut offsetlab_engine::Lab) -> Result<(), offsetlab_engine::LabError> {
                let $name = self.$field.as_str();
                $apply.map(|_| ())
            }
        }

        impl std::fmt::Display for $ty {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                write!(f, concat!($keyword, " {}"), $crate::token::Quoted(&self.$field))
            }
        }
    };
}

mod abort;
mod add_partitions;
mod alter_offsets;
mod alter_topic;
mod broker;
mod clock;
mod commit;
mod compact;
mod consumer;
mod consumer_group_state;
mod delete;
mod delete_records;
mod expect;
mod expect_epochs;
mod expect_error;
mod expect_share;
mod external;
mod external_txn;
mod fault;
mod lifecycle;
mod poll;
mod process;
mod produce;
mod reset_offsets;
mod restart_coordinator;
mod seek;
mod send;
mod send_stored;
mod share;
mod share_client;
mod share_offsets;
mod tick;
mod topic;
mod truncate_log;

pub use abort::Abort;
pub use add_partitions::AddPartitions;
pub use alter_offsets::AlterOffsets;
pub use alter_topic::AlterTopic;
pub use broker::Broker;
pub use clock::Clock;
pub use commit::Commit;
pub use compact::Compact;
pub use consumer::StartConsumer;
pub use consumer_group_state::ConsumerGroupState;
pub use delete::{DeleteGroup, DeleteOffsets, DeleteTopic};
pub use delete_records::DeleteRecords;
pub use expect::{offset_ranges, Expect, ExpectKey};
pub use expect_error::ExpectError;
pub use expect_share::share_figure;
pub use external::{CommitOffsets, Rebalance};
pub use external_txn::{EndTxn, InitTxn, TxnOffsets, TxnSend, TxnTimeout};
pub use fault::Fault;
pub use lifecycle::{Close, Crash, Restart};
pub use poll::Poll;
pub use process::Process;
pub use produce::Produce;
pub use reset_offsets::ResetOffsets;
pub use restart_coordinator::RestartCoordinator;
pub use seek::{Seek, SeekTo};
pub use send::Send;
pub use send_stored::SendStored;
pub use share::{AlterShareGroup, ShareAck, SharePoll, StartShareConsumer};
pub use share_client::{ShareAcknowledge, ShareFetch, ShareJoin, ShareLeave, ShareRelease};
pub use share_offsets::{AlterShareOffsets, DeleteShareOffsets};
pub use tick::Tick;
pub use topic::{max_message_bytes as topic_max_message_bytes, CreateTopic};
pub use truncate_log::TruncateLog;

use crate::error::ParseError;
use crate::token::{tokenize, Args};
use offsetlab_engine::lab::ResetPlan;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    Topic(CreateTopic),
    Produce(Produce),
    Send(Send),
    /// A `send` whose batches a durable lab keeps beside its history.
    SendStored(SendStored),
    Rebalance(Rebalance),
    /// A consumer-protocol group of real clients, as the listener's coordinator left it.
    ConsumerGroupState(ConsumerGroupState),
    CommitOffsets(CommitOffsets),
    InitTxn(InitTxn),
    TxnSend(TxnSend),
    TxnOffsets(TxnOffsets),
    EndTxn(EndTxn),
    TxnTimeout(TxnTimeout),
    Consumer(StartConsumer),
    Poll(Poll),
    Process(Process),
    Commit(Commit),
    Abort(Abort),
    Tick(Tick),
    Clock(Clock),
    Crash(Crash),
    Restart(Restart),
    Close(Close),
    Seek(Seek),
    ResetOffsets(ResetOffsets),
    Compact(Compact),
    AddPartitions(AddPartitions),
    AlterOffsets(AlterOffsets),
    AlterTopic(AlterTopic),
    DeleteRecords(DeleteRecords),
    /// A log's tail lost (a restart's recovery cut it).
    TruncateLog(TruncateLog),
    DeleteTopic(DeleteTopic),
    DeleteGroup(DeleteGroup),
    DeleteOffsets(DeleteOffsets),
    Broker(Broker),
    RestartCoordinator(RestartCoordinator),
    Fault(Fault),
    /// Share groups (KIP-932).
    ShareConsumer(StartShareConsumer),
    SharePoll(SharePoll),
    ShareAck(ShareAck),
    AlterShareGroup(AlterShareGroup),
    /// Real clients' share consumers, as the Kafka listener writes them.
    ShareJoin(ShareJoin),
    ShareLeave(ShareLeave),
    ShareRelease(ShareRelease),
    ShareFetch(ShareFetch),
    ShareAcknowledge(ShareAcknowledge),
    AlterShareOffsets(AlterShareOffsets),
    DeleteShareOffsets(DeleteShareOffsets),
    Expect(Expect),
    /// `expect-error CODE LINE`: the line is refused with Kafka's error CODE.
    ExpectError(ExpectError),
}

/// What applying a command produced, beyond the narrative.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Done,
    /// A reset plan (dry run or executed): the blast radius.
    Reset(ResetPlan),
}

/// Why a command did not apply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ApplyError {
    #[error(transparent)]
    Lab(#[from] LabError),
    #[error("{0}")]
    Expectation(String),
}

/// The command names, in the order `docs/SCENARIOS.md` documents them.
pub const COMMANDS: [&str; 47] = [
    "topic",
    "produce",
    "send",
    "consumer",
    "poll",
    "process",
    "commit",
    "abort",
    "tick",
    "clock",
    "crash",
    "restart",
    "close",
    "seek",
    "reset-offsets",
    "alter-offsets",
    "compact",
    "delete-records",
    "truncate-log",
    "add-partitions",
    "alter-topic",
    "delete-topic",
    "delete-group",
    "delete-offsets",
    "broker",
    "restart-coordinator",
    "rebalance",
    "commit-offsets",
    "init-txn",
    "txn-send",
    "txn-offsets",
    "end-txn",
    "txn-timeout",
    "fault",
    "share-consumer",
    "share-poll",
    "share-ack",
    "alter-share-group",
    "alter-share-offsets",
    "delete-share-offsets",
    "share-join",
    "share-leave",
    "share-release",
    "share-fetch",
    "share-acknowledge",
    "expect",
    "expect-error",
];

impl Command {
    /// Parses one line. Blank lines and comments give `None`.
    pub fn parse(line: &str) -> Result<Option<Command>, ParseError> {
        let mut tokens = tokenize(line)?.into_iter();
        let Some(name) = tokens.next() else {
            return Ok(None);
        };
        if name == "expect-error" {
            let code = tokens
                .next()
                .ok_or_else(|| ParseError::new("expect-error: missing the error code, then the line"))?;
            let Some(inner) = tokens.next() else {
                return Err(ParseError::new(format!(
                    "expect-error {code}: missing the line expected to be refused"
                )));
            };
            let command = Self::parse_words(&inner, tokens)?;
            return Ok(Some(Command::ExpectError(ExpectError::new(&code, command)?)));
        }
        Self::parse_words(&name, tokens).map(Some)
    }

    /// A command from its name and the rest of its line's tokens.
    fn parse_words(name: &str, tokens: std::vec::IntoIter<String>) -> Result<Command, ParseError> {
        let mut args = Args::new(name, tokens)?;
        let cmd = match name {
            "topic" => Command::Topic(CreateTopic::parse(&mut args)?),
            "produce" => Command::Produce(Produce::parse(&mut args)?),
            "send" => Send::parse_line(&mut args)?,
            "rebalance" => Command::Rebalance(Rebalance::parse(&mut args)?),
            "consumer-group" => Command::ConsumerGroupState(ConsumerGroupState::parse(&mut args)?),
            "commit-offsets" => Command::CommitOffsets(CommitOffsets::parse(&mut args)?),
            "init-txn" => Command::InitTxn(InitTxn::parse(&mut args)?),
            "txn-send" => Command::TxnSend(TxnSend::parse(&mut args)?),
            "txn-offsets" => Command::TxnOffsets(TxnOffsets::parse(&mut args)?),
            "end-txn" => Command::EndTxn(EndTxn::parse(&mut args)?),
            "txn-timeout" => Command::TxnTimeout(TxnTimeout::parse(&mut args)?),
            "consumer" => Command::Consumer(StartConsumer::parse(&mut args)?),
            "poll" => Command::Poll(Poll::parse(&mut args)?),
            "process" => Command::Process(Process::parse(&mut args)?),
            "commit" => Command::Commit(Commit::parse(&mut args)?),
            "abort" => Command::Abort(Abort::parse(&mut args)?),
            "tick" => Command::Tick(Tick::parse(&mut args)?),
            "clock" => Command::Clock(Clock::parse(&mut args)?),
            "crash" => Command::Crash(Crash::parse(&mut args)?),
            "restart" => Command::Restart(Restart::parse(&mut args)?),
            "close" => Command::Close(Close::parse(&mut args)?),
            "seek" => Command::Seek(Seek::parse(&mut args)?),
            "reset-offsets" => Command::ResetOffsets(ResetOffsets::parse(&mut args)?),
            "compact" => Command::Compact(Compact::parse(&mut args)?),
            "delete-records" => Command::DeleteRecords(DeleteRecords::parse(&mut args)?),
            "truncate-log" => Command::TruncateLog(TruncateLog::parse(&mut args)?),
            "add-partitions" => Command::AddPartitions(AddPartitions::parse(&mut args)?),
            "alter-offsets" => Command::AlterOffsets(AlterOffsets::parse(&mut args)?),
            "alter-topic" => Command::AlterTopic(AlterTopic::parse(&mut args)?),
            "delete-topic" => Command::DeleteTopic(DeleteTopic::parse(&mut args)?),
            "delete-group" => Command::DeleteGroup(DeleteGroup::parse(&mut args)?),
            "delete-offsets" => Command::DeleteOffsets(DeleteOffsets::parse(&mut args)?),
            "broker" => Command::Broker(Broker::parse(&mut args)?),
            "restart-coordinator" => Command::RestartCoordinator(RestartCoordinator::parse(&mut args)?),
            "fault" => Command::Fault(Fault::parse(&mut args)?),
            "share-consumer" => Command::ShareConsumer(StartShareConsumer::parse(&mut args)?),
            "share-poll" => Command::SharePoll(SharePoll::parse(&mut args)?),
            "share-ack" => Command::ShareAck(ShareAck::parse(&mut args)?),
            "alter-share-group" => Command::AlterShareGroup(AlterShareGroup::parse(&mut args)?),
            "share-join" => Command::ShareJoin(ShareJoin::parse(&mut args)?),
            "share-leave" => Command::ShareLeave(ShareLeave::parse(&mut args)?),
            "share-release" => Command::ShareRelease(ShareRelease::parse(&mut args)?),
            "share-fetch" => Command::ShareFetch(ShareFetch::parse(&mut args)?),
            "share-acknowledge" => Command::ShareAcknowledge(ShareAcknowledge::parse(&mut args)?),
            "alter-share-offsets" => Command::AlterShareOffsets(AlterShareOffsets::parse(&mut args)?),
            "delete-share-offsets" => Command::DeleteShareOffsets(DeleteShareOffsets::parse(&mut args)?),
            "expect" => Command::Expect(Expect::parse(&mut args)?),
            "expect-error" => {
                return Err(ParseError::new(
                    "expect-error: the line it expects to be refused is an action, not a claim",
                ))
            }
            other => {
                return Err(ParseError::new(format!(
                    "unknown command '{other}' (expected one of: {})",
                    COMMANDS.join(", ")
                )))
            }
        };
        args.finish()?;
        Ok(cmd)
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<Outcome, ApplyError> {
        match self {
            Command::Topic(c) => c.apply(lab)?,
            Command::Produce(c) => c.apply(lab)?,
            Command::Send(c) => c.apply(lab)?,
            Command::SendStored(c) => return Err(c.unresolved().into()),
            Command::Rebalance(c) => c.apply(lab)?,
            Command::ConsumerGroupState(c) => c.apply(lab)?,
            Command::CommitOffsets(c) => c.apply(lab)?,
            Command::InitTxn(c) => c.apply(lab)?,
            Command::TxnSend(c) => c.apply(lab)?,
            Command::TxnOffsets(c) => c.apply(lab)?,
            Command::EndTxn(c) => c.apply(lab)?,
            Command::TxnTimeout(c) => c.apply(lab)?,
            Command::Consumer(c) => c.apply(lab)?,
            Command::Poll(c) => c.apply(lab)?,
            Command::Process(c) => c.apply(lab)?,
            Command::Commit(c) => c.apply(lab)?,
            Command::Abort(c) => c.apply(lab)?,
            Command::Tick(c) => c.apply(lab)?,
            Command::Clock(c) => c.apply(lab)?,
            Command::Crash(c) => c.apply(lab)?,
            Command::Restart(c) => c.apply(lab)?,
            Command::Close(c) => c.apply(lab)?,
            Command::Seek(c) => c.apply(lab)?,
            Command::ResetOffsets(c) => return Ok(Outcome::Reset(c.apply(lab)?)),
            Command::Compact(c) => c.apply(lab)?,
            Command::DeleteRecords(c) => c.apply(lab)?,
            Command::TruncateLog(c) => c.apply(lab)?,
            Command::AddPartitions(c) => c.apply(lab)?,
            Command::AlterOffsets(c) => c.apply(lab)?,
            Command::AlterTopic(c) => c.apply(lab)?,
            Command::DeleteTopic(c) => c.apply(lab)?,
            Command::DeleteGroup(c) => c.apply(lab)?,
            Command::DeleteOffsets(c) => c.apply(lab)?,
            Command::Broker(c) => c.apply(lab)?,
            Command::RestartCoordinator(c) => c.apply(lab)?,
            Command::Fault(c) => c.apply(lab)?,
            Command::ShareConsumer(c) => c.apply(lab)?,
            Command::SharePoll(c) => c.apply(lab)?,
            Command::ShareAck(c) => c.apply(lab)?,
            Command::AlterShareGroup(c) => c.apply(lab)?,
            Command::ShareJoin(c) => c.apply(lab)?,
            Command::ShareLeave(c) => c.apply(lab)?,
            Command::ShareRelease(c) => c.apply(lab)?,
            Command::ShareFetch(c) => c.apply(lab)?,
            Command::ShareAcknowledge(c) => c.apply(lab)?,
            Command::AlterShareOffsets(c) => c.apply(lab)?,
            Command::DeleteShareOffsets(c) => c.apply(lab)?,
            Command::Expect(c) => c.check(lab)?,
            Command::ExpectError(c) => c.check(lab)?,
        }
        Ok(Outcome::Done)
    }

    /// Whether the line is a claim about the lab (`expect`, `expect-error`) rather than an
    /// action: it changes nothing when it holds, and the explorer, trying other strategies,
    /// leaves it out.
    pub fn is_claim(&self) -> bool {
        matches!(self, Command::Expect(_) | Command::ExpectError(_))
    }

    /// The consumer this command acts on, if it acts on one.
    pub fn consumer(&self) -> Option<&str> {
        match self {
            Command::Consumer(c) => Some(&c.config.name),
            Command::Poll(c) => Some(&c.consumer),
            Command::Process(c) => Some(&c.consumer),
            Command::Commit(c) => Some(&c.consumer),
            Command::Abort(c) => Some(&c.consumer),
            Command::Crash(c) => Some(&c.consumer),
            Command::Restart(c) => Some(&c.consumer),
            Command::Close(c) => Some(&c.consumer),
            Command::Seek(c) => Some(&c.consumer),
            Command::Fault(c) => Some(&c.consumer),
            Command::ShareConsumer(c) => Some(&c.config.name),
            Command::SharePoll(c) => Some(&c.consumer),
            Command::ShareAck(c) => Some(&c.consumer),
            _ => None,
        }
    }
}

impl fmt::Display for Command {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Command::Topic(c) => c.fmt(f),
            Command::Produce(c) => c.fmt(f),
            Command::Send(c) => c.fmt(f),
            Command::SendStored(c) => c.fmt(f),
            Command::Rebalance(c) => c.fmt(f),
            Command::ConsumerGroupState(c) => c.fmt(f),
            Command::CommitOffsets(c) => c.fmt(f),
            Command::InitTxn(c) => c.fmt(f),
            Command::TxnSend(c) => c.fmt(f),
            Command::TxnOffsets(c) => c.fmt(f),
            Command::EndTxn(c) => c.fmt(f),
            Command::TxnTimeout(c) => c.fmt(f),
            Command::Consumer(c) => c.fmt(f),
            Command::Poll(c) => c.fmt(f),
            Command::Process(c) => c.fmt(f),
            Command::Commit(c) => c.fmt(f),
            Command::Abort(c) => c.fmt(f),
            Command::Tick(c) => c.fmt(f),
            Command::Clock(c) => c.fmt(f),
            Command::Crash(c) => c.fmt(f),
            Command::Restart(c) => c.fmt(f),
            Command::Close(c) => c.fmt(f),
            Command::Seek(c) => c.fmt(f),
            Command::ResetOffsets(c) => c.fmt(f),
            Command::Compact(c) => c.fmt(f),
            Command::DeleteRecords(c) => c.fmt(f),
            Command::TruncateLog(c) => c.fmt(f),
            Command::AddPartitions(c) => c.fmt(f),
            Command::AlterOffsets(c) => c.fmt(f),
            Command::AlterTopic(c) => c.fmt(f),
            Command::DeleteTopic(c) => c.fmt(f),
            Command::DeleteGroup(c) => c.fmt(f),
            Command::DeleteOffsets(c) => c.fmt(f),
            Command::Broker(c) => c.fmt(f),
            Command::RestartCoordinator(c) => c.fmt(f),
            Command::Fault(c) => c.fmt(f),
            Command::ShareConsumer(c) => c.fmt(f),
            Command::SharePoll(c) => c.fmt(f),
            Command::ShareAck(c) => c.fmt(f),
            Command::AlterShareGroup(c) => c.fmt(f),
            Command::ShareJoin(c) => c.fmt(f),
            Command::ShareLeave(c) => c.fmt(f),
            Command::ShareRelease(c) => c.fmt(f),
            Command::ShareFetch(c) => c.fmt(f),
            Command::ShareAcknowledge(c) => c.fmt(f),
            Command::AlterShareOffsets(c) => c.fmt(f),
            Command::DeleteShareOffsets(c) => c.fmt(f),
            Command::Expect(c) => c.fmt(f),
            Command::ExpectError(c) => c.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every canonical line parses back to the same command.
    #[test]
    fn display_round_trips() {
        let lines = [
            "topic orders partitions=3 retention.ms=7d segment.records=4 cleanup.policy=delete",
            "produce orders count=12",
            r#"produce orders count=1 key=o-3 value={"order_id":"o-3","status":"paid"} partition=0"#,
            "consumer c1 group=analytics-prod topic=orders commit=manual-batch interval=5s max-poll=4 sink=upsert reset=earliest",
            "consumer c2 group=g topic=orders assignor=cooperative-sticky instance-id=s-2 commit-on-revoke=no max-poll-interval=1m",
            "consumer c3 group=g topic=orders group-protocol=consumer",
            "consumer c4 group=g topic=orders instance-id=s-4 group-protocol=consumer assignor=range",
            "poll c1",
            "process c1 count=all",
            "process c1 count=2",
            "commit c1",
            "abort copier",
            "consumer copier group=copy topic=orders commit=manual-batch sink=kafka-tx output=orders-out transaction-timeout=30s",
            "consumer audit group=audit topic=orders-out isolation=read_committed reset=earliest",
            "topic users partitions=1 cleanup.policy=compact delete.retention.ms=1h",
            "tick 250ms",
            "crash c1",
            "restart c1",
            "close c1",
            "seek c1 to=earliest",
            "seek c1 to=42 partition=0",
            "expect-error NON_EMPTY_GROUP delete-group billing",
            "expect-error UNKNOWN_MEMBER_ID commit-offsets billing member=ghost generation=1 offsets=orders:0=5",
            "seek c1 to=@2026-01-01T06:00:00Z",
            "reset-offsets analytics-prod topic=orders to-offset=3 execute",
            "reset-offsets analytics-prod topic=orders:0,1 by-duration=6h",
            "expect group=analytics-prod lost=0 duplicates=4 committed=12",
            "compact __consumer_offsets",
            "delete-records orders partition=0 before=4",
            "truncate-log orders partition=0 to=300 was=500",
            "truncate-log orders partition=1 to=0",
            "delete-topic scratch",
            "delete-group copy",
            "delete-offsets copy topic=orders partitions=0,2",
            "broker offsets.retention=2d",
            "restart-coordinator",
            "fault c1 after=7",
            "share-consumer s1 group=sg topic=orders ack=explicit max-poll=3",
            "share-consumer s2 group=sg topic=orders",
            "share-poll s1",
            "share-ack s1 offsets=3,4 accept",
            "share-ack s1 partition=1 release",
            "share-ack s1 reject",
            "alter-share-group sg share.auto.offset.reset=earliest share.record.lock.duration.ms=15s share.delivery.count.limit=3",
            "alter-share-group sg share.partition.max.record.locks=100 share.session.timeout.ms=1m",
            "share-join sg member=AbC-9_x client=rdkafka topics=orders,payments",
            "share-leave sg member=AbC-9_x session-timeout",
            "share-leave sg member=AbC-9_x",
            "share-release sg member=AbC-9_x",
            "share-fetch sg member=AbC-9_x topic=orders partition=0 max=500",
            "share-acknowledge sg member=AbC-9_x topic=orders partition=0 acks=3-5:accept,6:reject,9:release",
            "expect share-group=sg partition=0 spso=4 speo=6 in-flight=2 acquired=1 archived=1",
            "expect share-group=sg offset=3 record-state=acquired delivery-count=2 owner=s1#1",
            r#"rebalance copy generation=3 protocol=range members=[{"id":"rdkafka-1","client":"rdkafka","host":"/127.0.0.1","partitions":{"orders":[0,1]}},{"id":"rdkafka-2","client":"rdkafka","host":"/127.0.0.1","partitions":{}}]"#,
            "rebalance copy generation=4 protocol=range members=[]",
            "commit-offsets copy member=rdkafka-1 generation=3 offsets=orders:0=17,my-topic:1=4",
            "init-txn copy-loop timeout=1m",
            r#"txn-send copy-loop producer-id=1000 epoch=0 topic=orders-out partition=0 records=[{"key":"o-1","value":"x"}]"#,
            "txn-offsets copy-loop producer-id=1000 epoch=0 group=copy offsets=orders:0=5",
            "end-txn copy-loop producer-id=1000 epoch=0 abort",
            "end-txn copy-loop producer-id=1000 epoch=1 commit",
            "send orders partition=0 client=rdkafka stored=orders-0-00000000000000000000.log:0+1048576 count=9000",
            r#"send orders partition=0 client=rdkafka batches=2,1 records=[{"key":"a","value":"1"},{"key":"b","value":"2"},{"key":null,"value":"3"}]"#,
            "send orders partition=0 client=rdkafka stored=memory:512+64 count=1",
            r#"send orders partition=0 client=rdkafka records=[{"key":"o-1","value":"{\"a\": [1, \"]#'\"]}"},{"key":null,"value":"x y\nz"},{"key":"k","value":null}]"#,
        ];
        for line in lines {
            let cmd = Command::parse(line).expect("parses").expect("a command");
            let again = Command::parse(&cmd.to_string())
                .expect("re-parses")
                .expect("a command");
            assert_eq!(cmd, again, "{line} → {cmd}");
        }
    }

    #[test]
    fn every_listed_command_is_known_to_the_parser() {
        for word in COMMANDS {
            let err = Command::parse(word).err().map(|e| e.message).unwrap_or_default();
            assert!(!err.contains("unknown command"), "{word}: {err}");
        }
    }

    #[test]
    fn malformed_lines_say_what_is_wrong() {
        let err = |l: &str| Command::parse(l).expect_err(l).message;
        assert!(err("fly c1").contains("unknown command 'fly'"));
        assert!(err("poll").contains("missing consumer"));
        assert!(err("produce orders count=-3").contains("must not be negative"));
        assert!(err("tick soon").contains("not a duration"));
        assert!(err("consumer c1 group=g topic=t commit=yolo").contains("unknown commit strategy"));
        assert!(err("expect lots=3").contains("unknown expect key"));
        assert!(err("poll c1 c2").contains("unexpected 'c2'"));
        assert!(err("reset-offsets g topic=orders").contains("exactly one of"));
        assert!(err("produce orders value={oops}").contains("not valid JSON"));
        assert!(err("send orders records=[]").contains("missing partition"));
        assert!(err("rebalance g generation=1").contains("missing members"));
        assert!(err(r#"rebalance g generation=1 members=[{"name":"x"}]"#).contains("not a JSON array"));
        assert!(err("commit-offsets g member=m generation=1 offsets=orders=3")
            .contains("not TOPIC:PARTITION=OFFSET"));
        assert!(err("send orders partition=0 records=[]").contains("between 1 and"));
        assert!(err(r#"send orders partition=0 records=[{"key":1}]"#).contains("not a JSON array"));
        assert!(err(r#"send orders partition=0 records=[{"k":"a"}]"#).contains("not a JSON array"));
        assert!(err("expect-error").contains("missing the error code"));
        assert!(err("expect-error NON_EMPTY_GROUP").contains("missing the line"));
        assert!(err("expect-error non_empty delete-group g").contains("not the name of a Kafka error"));
        assert!(err("expect-error NON_EMPTY_GROUP expect lost=0").contains("an action, not a claim"));
        assert!(err("expect-error NON_EMPTY_GROUP expect-error X delete-group g")
            .contains("an action, not a claim"));
        assert!(err("expect-error NON_EMPTY_GROUP fly g").contains("unknown command 'fly'"));
        assert!(err("share-ack s1 maybe").contains("unknown acknowledge type 'maybe'"));
        assert!(err("share-ack s1 offsets=1,x accept").contains("offsets=1,x"));
        assert!(
            err("share-consumer s1 group=sg topic=t ack=sometimes").contains("share.acknowledgement.mode")
        );
        assert!(err("alter-share-group sg").contains("nothing to change"));
        assert!(err("alter-share-group sg share.delivery.count.limit=-1").contains("must not be negative"));
        assert!(err("expect spso=3").contains("add share-group=G"));
        assert!(err("expect share-group=sg committed=3").contains("not a share group's figure"));
        assert!(err("expect share-group=sg delivery-count=2").contains("need offset=O"));
        assert!(err("expect share-group=sg offset=2 spso=2").contains("need offset=O"));
        assert!(err("consumer c1 group=g topic=t group-protocol=kip848").contains("unknown group protocol"));
        assert!(
            err("consumer c1 group=g topic=t group-protocol=consumer assignor=cooperative-sticky")
                .contains("the coordinator assigns, with a server-side assignor")
        );
        assert!(err("consumer c1 group=g topic=t assignor=uniform").contains("add group-protocol=consumer"));
        assert!(err("expect consumer=c1 member-epoch=x").contains("expected a number"));
    }
}
