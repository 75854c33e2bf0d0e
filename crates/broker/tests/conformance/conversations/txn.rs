//! Producer ids: idempotent producers (a resent batch written once, a gap refused) and
//! transactions at every version of the transactional APIs, read back by both isolation
//! levels; and the transactions and producers described and listed.

use super::groups::clamp;
use super::{batch, create_topic, group, produce_request, s, topic, txn_id, versions};
use crate::ensure;
use crate::target::{Step, Target};
use offsetlab_wire::kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use offsetlab_wire::kafka_protocol::messages::describe_producers_request::TopicRequest;
use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use offsetlab_wire::kafka_protocol::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use offsetlab_wire::kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use offsetlab_wire::kafka_protocol::messages::txn_offset_commit_request::{
    TxnOffsetCommitRequestPartition, TxnOffsetCommitRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddPartitionsToTxnRequest, ApiKey, DescribeProducersRequest,
    DescribeTransactionsRequest, EndTxnRequest, FetchRequest, InitProducerIdRequest, ListOffsetsRequest,
    ListTransactionsRequest, ListTransactionsResponse, OffsetFetchRequest, ProducerId,
    TxnOffsetCommitRequest,
};
use offsetlab_wire::Uuid;

pub(super) fn init(_v: i16, txn: Option<&str>, timeout: i32) -> InitProducerIdRequest {
    InitProducerIdRequest::default()
        .with_transactional_id(txn.map(txn_id))
        .with_transaction_timeout_ms(timeout)
}

fn fetch_all(name: &str, isolation: i8) -> FetchRequest {
    FetchRequest::default()
        .with_max_wait_ms(10)
        .with_isolation_level(isolation)
        .with_topics(vec![FetchTopic::default()
            .with_topic(topic(name))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_partition_max_bytes(1 << 20)])])
}

fn describe_producers(name: &str) -> DescribeProducersRequest {
    DescribeProducersRequest::default().with_topics(vec![TopicRequest::default()
        .with_name(topic(name))
        .with_partition_indexes(vec![0, 4])])
}

pub fn idempotence(t: &mut Target) -> Step<()> {
    let name = t.name("idem");
    create_topic(t, &name, 1, &[])?;
    let mut last = (ProducerId(-1), -1i16);
    for v in versions(ApiKey::InitProducerId) {
        let r = t.ask("init", v, init(v, None, i32::MAX))?;
        ensure!(r.error_code == 0, "init: error {}", r.error_code);
        t.ctx.register(
            "pid",
            &r.producer_id.0.to_string(),
            &format!("pid idempotent v{v}"),
        );
        last = (r.producer_id, r.producer_epoch);
    }
    let (pid, epoch) = (last.0 .0, last.1);
    let pv = 11;
    let send = |t: &mut Target, step: &str, pid: i64, epoch: i16, seq: i32, records: &[(&str, &str)]| {
        let b = batch(t, pid, epoch, seq, false, records);
        t.ask(step, pv, produce_request(pv, &name, Uuid::nil(), 0, b, -1))
            .map(|_| ())
    };
    send(t, "first", pid, epoch, 0, &[("a", "1"), ("b", "2")])?;
    send(t, "resent", pid, epoch, 0, &[("a", "1"), ("b", "2")])?;
    send(t, "gap", pid, epoch, 5, &[("c", "3")])?;
    send(t, "next", pid, epoch, 2, &[("c", "3")])?;
    send(t, "old sequence", pid, epoch, 1, &[("b", "2")])?;
    send(t, "unknown producer", pid + 1_000_000, 0, 3, &[("d", "4")])?;
    t.ask("describe producers", 0, describe_producers(&name))?;
    t.ask("fetch", 12, fetch_all(&name, 0))?;
    Ok(())
}

fn add_partitions(
    v: i16,
    txn: &str,
    pid: ProducerId,
    epoch: i16,
    name: &str,
    parts: Vec<i32>,
) -> AddPartitionsToTxnRequest {
    let topics = vec![AddPartitionsToTxnTopic::default()
        .with_name(topic(name))
        .with_partitions(parts)];
    if v >= 4 {
        AddPartitionsToTxnRequest::default().with_transactions(vec![AddPartitionsToTxnTransaction::default()
            .with_transactional_id(txn_id(txn))
            .with_producer_id(pid)
            .with_producer_epoch(epoch)
            .with_topics(topics)])
    } else {
        AddPartitionsToTxnRequest::default()
            .with_v3_and_below_transactional_id(txn_id(txn))
            .with_v3_and_below_producer_id(pid)
            .with_v3_and_below_producer_epoch(epoch)
            .with_v3_and_below_topics(topics)
    }
}

fn txn_offsets(
    v: i16,
    txn: &str,
    g: &str,
    pid: ProducerId,
    epoch: i16,
    name: &str,
    offset: i64,
) -> TxnOffsetCommitRequest {
    let req = TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id(txn))
        .with_group_id(group(g))
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_topics(vec![TxnOffsetCommitRequestTopic::default()
            .with_name(topic(name))
            .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(if v >= 2 { 0 } else { -1 })
                .with_committed_metadata(Some(s("txn-meta")))])]);
    if v >= 3 {
        req.with_generation_id(-1).with_member_id(s(""))
    } else {
        req
    }
}

/// Waits (quietly) until `txn`'s last transaction is complete: Kafka writes its markers after
/// answering EndTxn (the state reads PrepareCommit or PrepareAbort meanwhile, and the next
/// call gets CONCURRENT_TRANSACTIONS); the lab before answering.
pub(super) fn settled(t: &mut Target, txn: &str) -> Step<()> {
    let id = txn.to_string();
    t.wait_until(
        "completed the transaction",
        std::time::Duration::from_secs(30),
        |t| {
            let r = t.quiet(
                0,
                DescribeTransactionsRequest::default().with_transactional_ids(vec![txn_id(&id)]),
            )?;
            Ok(r.transaction_states
                .iter()
                .all(|s| !s.transaction_state.as_str().starts_with("Prepare")))
        },
    )
}

pub(super) fn end(txn: &str, pid: ProducerId, epoch: i16, commit: bool) -> EndTxnRequest {
    EndTxnRequest::default()
        .with_transactional_id(txn_id(txn))
        .with_producer_id(pid)
        .with_producer_epoch(epoch)
        .with_committed(commit)
}

/// A transaction at each version `i` of the transactional APIs (clamped to each one's range):
/// partitions added, records written, a group's offsets added and committed with it, ended —
/// committed when `i` is even, aborted when odd — and read back.
pub fn transactions(t: &mut Target) -> Step<()> {
    let name = t.name("txt");
    create_topic(t, &name, 2, &[])?;
    let top = [
        ApiKey::InitProducerId,
        ApiKey::AddPartitionsToTxn,
        ApiKey::AddOffsetsToTxn,
        ApiKey::TxnOffsetCommit,
        ApiKey::EndTxn,
    ]
    .iter()
    .map(|k| *versions(*k).end())
    .max()
    .unwrap_or(0);
    let fv = *versions(ApiKey::OffsetFetch).end();
    for i in 0..=top {
        let (iv, av, ov, tv, ev) = (
            clamp(ApiKey::InitProducerId, i),
            clamp(ApiKey::AddPartitionsToTxn, i),
            clamp(ApiKey::AddOffsetsToTxn, i),
            clamp(ApiKey::TxnOffsetCommit, i),
            clamp(ApiKey::EndTxn, i),
        );
        let (tx, g) = (t.name(&format!("tx{i}")), t.name(&format!("txg{i}")));
        let commit = i % 2 == 0;
        let r = t.ask("init", iv, init(iv, Some(&tx), 60_000))?;
        ensure!(r.error_code == 0, "init: error {}", r.error_code);
        t.ctx
            .register("pid", &r.producer_id.0.to_string(), &format!("pid {tx}"));
        let (pid, epoch) = (r.producer_id, r.producer_epoch);
        t.ask(
            "add partitions",
            av,
            add_partitions(av, &tx, pid, epoch, &name, vec![0]),
        )?;
        let b = batch(
            t,
            pid.0,
            epoch,
            0,
            true,
            &[("t1", &format!("in-txn-{i}")), ("t2", "x")],
        );
        t.ask(
            "produce",
            11,
            produce_request(11, &name, Uuid::nil(), 0, b, -1).with_transactional_id(Some(txn_id(&tx))),
        )?;
        t.ask(
            "add offsets",
            ov,
            AddOffsetsToTxnRequest::default()
                .with_transactional_id(txn_id(&tx))
                .with_producer_id(pid)
                .with_producer_epoch(epoch)
                .with_group_id(group(&g)),
        )?;
        t.ask(
            "txn offset commit",
            tv,
            txn_offsets(tv, &tx, &g, pid, epoch, &name, 2),
        )?;
        t.ask(
            "describe transaction",
            0,
            DescribeTransactionsRequest::default().with_transactional_ids(vec![txn_id(&tx)]),
        )?;
        t.ask("fetch read_committed open", 12, fetch_all(&name, 1))?;
        t.ask("fenced end", ev, end(&tx, pid, epoch - 1, commit))?;
        let e = t.ask("end", ev, end(&tx, pid, epoch, commit))?;
        ensure!(e.error_code == 0, "end: error {}", e.error_code);
        settled(t, &tx)?;
        t.ask("end again", ev, end(&tx, pid, epoch, commit))?;
        settled(t, &tx)?;
        t.ask(
            "offsets after",
            fv.min(8),
            OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
                .with_group_id(group(&g))
                .with_topics(None)]),
        )?;
        t.ask("fetch read_committed", 12, fetch_all(&name, 1))?;
        t.ask("fetch read_uncommitted", 12, fetch_all(&name, 0))?;
        t.ask(
            "last stable offset",
            9,
            ListOffsetsRequest::default()
                .with_isolation_level(1)
                .with_topics(vec![ListOffsetsTopic::default()
                    .with_name(topic(&name))
                    .with_partitions(vec![ListOffsetsPartition::default()
                        .with_partition_index(0)
                        .with_timestamp(-1)])]),
        )?;
        // The next transaction with the epoch EndTxn answered with (bumped from v5).
        let (pid2, epoch2) = if ev >= 5 {
            (e.producer_id, e.producer_epoch)
        } else {
            (pid, epoch)
        };
        t.ask(
            "add partitions next",
            av,
            add_partitions(av, &tx, pid2, epoch2, &name, vec![1]),
        )?;
        let b = batch(
            t,
            pid2.0,
            epoch2,
            if ev >= 5 { 0 } else { 2 },
            true,
            &[("t3", "next")],
        );
        t.ask(
            "produce next",
            11,
            produce_request(11, &name, Uuid::nil(), 1, b, -1).with_transactional_id(Some(txn_id(&tx))),
        )?;
        t.ask("end next", ev, end(&tx, pid2, epoch2, true))?;
        settled(t, &tx)?;
        // Another producer takes the transactional id over: the old one is fenced.
        let again = t.ask("init again", iv, init(iv, Some(&tx), 60_000))?;
        t.ask(
            "fenced add partitions",
            av,
            add_partitions(av, &tx, pid2, epoch2, &name, vec![0]),
        )?;
        t.ask(
            "end after init again",
            ev,
            end(&tx, again.producer_id, again.producer_epoch, false),
        )?;
        settled(t, &tx)?;
    }
    let unknown = t.name("tx-unknown");
    for av in versions(ApiKey::AddPartitionsToTxn) {
        t.ask(
            "add partitions unknown id",
            av,
            add_partitions(av, &unknown, ProducerId(1), 0, &name, vec![0]),
        )?;
    }
    for ev in versions(ApiKey::EndTxn) {
        t.ask("end unknown id", ev, end(&unknown, ProducerId(1), 0, true))?;
    }
    t.ask("describe producers", 0, describe_producers(&name))?;
    Ok(())
}

fn ours(run: &str) -> impl Fn(&mut ListTransactionsResponse) + '_ {
    move |r: &mut ListTransactionsResponse| {
        r.transaction_states
            .retain(|s| s.transactional_id.0.contains(run))
    }
}

/// Transactions described and listed while one is open and one is complete.
pub fn transaction_admin(t: &mut Target) -> Step<()> {
    let name = t.name("ta");
    create_topic(t, &name, 1, &[])?;
    let (open, done) = (t.name("ta-open"), t.name("ta-done"));
    let iv = *versions(ApiKey::InitProducerId).end();
    let o = t.ask("init open", iv, init(iv, Some(&open), 60_000))?;
    t.ctx
        .register("pid", &o.producer_id.0.to_string(), &format!("pid {open}"));
    t.ask(
        "add partitions",
        3,
        add_partitions(3, &open, o.producer_id, o.producer_epoch, &name, vec![0]),
    )?;
    let b = batch(t, o.producer_id.0, o.producer_epoch, 0, true, &[("o", "open")]);
    t.ask(
        "produce",
        11,
        produce_request(11, &name, Uuid::nil(), 0, b, -1).with_transactional_id(Some(txn_id(&open))),
    )?;
    let d = t.ask("init done", iv, init(iv, Some(&done), 60_000))?;
    t.ctx
        .register("pid", &d.producer_id.0.to_string(), &format!("pid {done}"));
    t.ask(
        "add partitions done",
        3,
        add_partitions(3, &done, d.producer_id, d.producer_epoch, &name, vec![0]),
    )?;
    let b = batch(t, d.producer_id.0, d.producer_epoch, 0, true, &[("d", "done")]);
    t.ask(
        "produce done",
        11,
        produce_request(11, &name, Uuid::nil(), 0, b, -1).with_transactional_id(Some(txn_id(&done))),
    )?;
    t.ask("end done", 4, end(&done, d.producer_id, d.producer_epoch, true))?;
    settled(t, &done)?;
    let run = t.run.clone();
    for v in versions(ApiKey::DescribeTransactions) {
        t.ask(
            "describe",
            v,
            DescribeTransactionsRequest::default().with_transactional_ids(vec![
                txn_id(&open),
                txn_id(&done),
                txn_id(&t.name("ta-none")),
            ]),
        )?;
    }
    for v in versions(ApiKey::ListTransactions) {
        t.ask_keeping("list", v, ListTransactionsRequest::default(), ours(&run))?;
        t.ask_keeping(
            "list ongoing",
            v,
            ListTransactionsRequest::default().with_state_filters(vec![s("Ongoing")]),
            ours(&run),
        )?;
        t.ask_keeping(
            "list bad state",
            v,
            ListTransactionsRequest::default().with_state_filters(vec![s("Sleeping")]),
            ours(&run),
        )?;
        t.ask_keeping(
            "list by producer",
            v,
            ListTransactionsRequest::default().with_producer_id_filters(vec![o.producer_id]),
            ours(&run),
        )?;
        if v >= 1 {
            t.ask_keeping(
                "list older than an hour",
                v,
                ListTransactionsRequest::default().with_duration_filter(3_600_000),
                ours(&run),
            )?;
            t.ask_keeping(
                "list older than 0 ms",
                v,
                ListTransactionsRequest::default().with_duration_filter(0),
                ours(&run),
            )?;
        }
        if v >= 2 {
            t.ask_keeping(
                "list by pattern",
                v,
                ListTransactionsRequest::default()
                    .with_transactional_id_pattern(Some(s(&format!("{run}-ta-o.*")))),
                ours(&run),
            )?;
        }
    }
    for v in versions(ApiKey::DescribeProducers) {
        t.ask("describe producers", v, describe_producers(&name))?;
    }
    t.ask("end open", 4, end(&open, o.producer_id, o.producer_epoch, false))?;
    Ok(())
}
