//! Property tests: random sequences of actions never break the lab's invariants.
//!
//! Invalid actions in a sequence (processing with nothing polled, restarting a running
//! consumer, …) are part of the input: they must be rejected without changing anything and
//! without a panic.

use offsetlab_engine::consumer::{Assignor, ConsumerConfig};
use offsetlab_engine::lab::{ProduceSpec, ResetSpec, SeekTarget};
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::offsets::OffsetKey;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::sink::SinkKind;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy};
use offsetlab_engine::Lab;
use proptest::prelude::*;
use std::collections::BTreeSet;

const CONSUMERS: [&str; 3] = ["c1", "c2", "c3"];
const GROUP: &str = "g";
/// The output topic of the read-process-write consumers (Kafka transactions).
const OUTPUT: &str = "orders-out";

#[derive(Debug, Clone)]
enum Action {
    Produce(u64),
    Join(usize),
    Poll(usize),
    Process(usize, Option<usize>),
    Commit(usize),
    Tick(i64),
    Crash(usize),
    Restart(usize),
    Close(usize),
    Seek(usize, SeekTarget),
    Reset(ResetSpec),
    /// `abortTransaction()` (Kafka transactions only).
    Abort(usize),
}

fn action(allow_skips: bool) -> impl Strategy<Value = Action> {
    let c = 0..CONSUMERS.len();
    let base = prop_oneof![
        3 => (1u64..6).prop_map(Action::Produce),
        2 => c.clone().prop_map(Action::Join),
        6 => c.clone().prop_map(Action::Poll),
        6 => (c.clone(), prop::option::of(1usize..5)).prop_map(|(c, n)| Action::Process(c, n)),
        3 => prop_oneof![Just(50i64), Just(1_000), Just(5_000), Just(46_000), Just(301_000)].prop_map(Action::Tick),
        2 => c.clone().prop_map(Action::Crash),
        2 => c.clone().prop_map(Action::Restart),
        1 => c.clone().prop_map(Action::Close),
        1 => (c.clone(), prop_oneof![Just(SeekTarget::Earliest), (0i64..30).prop_map(SeekTarget::Offset)].boxed())
            .prop_map(|(c, t)| Action::Seek(c, t)),
        1 => prop_oneof![Just(ResetSpec::ToEarliest), (-5i64..5).prop_map(ResetSpec::ShiftBy)].prop_map(Action::Reset),
    ];
    if allow_skips {
        prop_oneof![
            10 => base,
            1 => (0..CONSUMERS.len()).prop_map(Action::Commit),
            1 => (0..CONSUMERS.len()).prop_map(|c| Action::Seek(c, SeekTarget::Latest)),
            1 => Just(Action::Reset(ResetSpec::ToLatest)),
        ]
        .boxed()
    } else {
        base.boxed()
    }
}

fn new_lab(partitions: i32) -> Lab {
    let mut lab = Lab::default();
    lab.keep_delivery_logs();
    lab.create_topic(
        "orders",
        TopicConfig {
            partitions,
            segment_records: Some(5),
            ..TopicConfig::default()
        },
    )
    .expect("topic");
    lab
}

fn apply(lab: &mut Lab, a: &Action, strategies: &[CommitStrategy], sink: SinkKind, assignor: Assignor) {
    let name = |i: usize| CONSUMERS[i];
    // Errors are expected for invalid actions; the invariants below check nothing changed badly.
    let _ = match a {
        Action::Produce(n) => lab
            .produce(
                "orders",
                &ProduceSpec {
                    count: *n,
                    ..ProduceSpec::default()
                },
            )
            .map(|_| ()),
        Action::Join(i) => lab.add_consumer(ConsumerConfig {
            strategy: strategies[*i % strategies.len()],
            sink,
            output: (sink == SinkKind::KafkaTx).then(|| OUTPUT.to_string()),
            max_poll_records: 3,
            assignor,
            auto_offset_reset: AutoOffsetReset::Earliest,
            ..ConsumerConfig::new(name(*i), GROUP, "orders")
        }),
        Action::Poll(i) => lab.poll(name(*i)).map(|_| ()),
        Action::Process(i, n) => lab.process(name(*i), *n).map(|_| ()),
        Action::Commit(i) => lab.commit(name(*i)),
        Action::Tick(ms) => lab.tick(*ms),
        Action::Crash(i) => lab.crash(name(*i)),
        Action::Restart(i) => lab.restart(name(*i)),
        Action::Close(i) => lab.close(name(*i)),
        Action::Seek(i, t) => lab.seek(name(*i), *t, None),
        Action::Reset(spec) => lab.reset_offsets(GROUP, "orders", None, *spec, true).map(|_| ()),
        Action::Abort(i) => lab.abort_transaction(name(*i)),
    };
}

/// The member id of the consumer `a` processes or commits with, if that consumer runs but is not
/// a member of its group's current generation (a zombie, or one a rebalance moved past). Process
/// and commit never rejoin, so whatever they commit would come from that stale member.
fn stale_member(lab: &Lab, a: &Action) -> Option<String> {
    let i = match a {
        Action::Process(i, _) | Action::Commit(i) => *i,
        _ => return None,
    };
    let c = lab.consumers().get(CONSUMERS[i])?;
    let g = lab.group(&c.config.group).ok()?;
    let stale = c.is_running() && (!g.is_member(&c.member_id()) || c.generation != g.generation);
    stale.then(|| c.member_id())
}

fn check_invariants(lab: &Lab, partitions: i32) -> Result<(), TestCaseError> {
    for p in 0..partitions {
        let tp = TopicPartition::new("orders", p);
        let log = lab.partition_log(&tp).expect("log");
        let mut offsets = Vec::new();
        log.read(0, usize::MAX, &mut |r| offsets.push(r.offset));
        let expected: Vec<i64> = (log.log_start_offset()..log.log_end_offset()).collect();
        prop_assert_eq!(offsets, expected, "offsets dense and increasing in {}", tp);
        if let Some(c) = lab.offsets().fetch(&OffsetKey::new(GROUP, &tp)) {
            prop_assert!(
                c.offset >= 0 && c.offset <= log.log_end_offset(),
                "committed {} ≤ LEO {}",
                c.offset,
                log.log_end_offset()
            );
        }
    }
    // At most one running member owns a partition. (A zombie — removed for exceeding
    // max.poll.interval.ms — may still believe it owns some; the coordinator does not.)
    let mut owned = BTreeSet::new();
    for c in lab.consumers().values().filter(|c| c.is_running()) {
        let Ok(g) = lab.group(&c.config.group) else {
            continue;
        };
        if !g.is_member(&c.member_id()) {
            continue;
        }
        for tp in c.assignment.keys() {
            prop_assert!(owned.insert(tp.clone()), "{} owned twice", tp);
        }
        if g.rebalance.is_none() {
            prop_assert_eq!(
                c.generation,
                g.generation,
                "in a stable group, a member knows the generation"
            );
        }
    }
    if let Ok(g) = lab.group(GROUP) {
        let view = lab.group_view(GROUP).expect("view");
        for pv in &view.partitions {
            let tp = TopicPartition::new(pv.topic.clone(), pv.partition);
            let recount = g.audit.recount(&tp).expect("the lab keeps its delivery logs");
            prop_assert_eq!(pv.audit.duplicates, recount.duplicates);
            prop_assert_eq!(pv.audit.redeliveries, recount.redeliveries);
            prop_assert_eq!(pv.audit.crash_redeliveries, recount.crash_redeliveries);
            prop_assert_eq!(pv.audit.replays, recount.replays);
            prop_assert_eq!(pv.audit.deliveries, recount.deliveries);
        }
        let stats = g.sink.stats().expect("stats");
        match g.sink_kind {
            SinkKind::Append | SinkKind::Transactional | SinkKind::KafkaTx => {
                prop_assert_eq!(stats.rows, view.audit.deliveries, "a ledger row per delivery");
                prop_assert_eq!(
                    stats.duplicate_rows,
                    view.audit.duplicates,
                    "each duplicate is a duplicate row"
                );
            }
            SinkKind::Upsert => prop_assert_eq!(stats.duplicate_rows, 0),
        }
    }
    Ok(())
}

fn strategies() -> impl Strategy<Value = Vec<CommitStrategy>> {
    prop::collection::vec(prop::sample::select(CommitStrategy::ALL.to_vec()), 3)
}

fn commit_after() -> impl Strategy<Value = Vec<CommitStrategy>> {
    prop::collection::vec(
        prop::sample::select(vec![
            CommitStrategy::ManualBatch,
            CommitStrategy::ManualRecord,
            CommitStrategy::ManualAsync,
        ]),
        3,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 1000, ..ProptestConfig::default() })]

    /// Any sequence of actions, any strategies and sink: the structural invariants hold and the
    /// audit agrees with a recount of its delivery log.
    #[test]
    fn invariants_hold_for_any_sequence(
        partitions in 1i32..4,
        strategies in strategies(),
        assignor in prop::sample::select(vec![Assignor::Range, Assignor::CooperativeSticky]),
        sink in prop::sample::select(SinkKind::DATABASES.to_vec()),
        actions in prop::collection::vec(action(true), 1..80),
    ) {
        let mut lab = new_lab(partitions);
        for a in &actions {
            let zombie = stale_member(&lab, a);
            let commits_before = lab.offsets().log().log_end_offset();
            apply(&mut lab, a, &strategies, sink, assignor);
            check_invariants(&lab, partitions)?;
            if let Some(member) = zombie {
                // A member the coordinator no longer knows (or knows in another generation)
                // processes or commits: no commit of its lands.
                let landed = lab.offsets().records(commits_before, usize::MAX);
                prop_assert!(
                    landed.iter().all(|r| r.value.as_ref().is_none_or(|v| !v.metadata.starts_with(&format!("{member} ")))),
                    "a commit from stale member {} was accepted after {:?}",
                    member,
                    a
                );
            }
        }
    }

    /// A group whose members only commit what they processed never loses a record, whatever
    /// crashes, restarts, closes, rebalances and session timeouts happen.
    #[test]
    fn commit_after_processing_never_loses(
        partitions in 1i32..4,
        strategies in commit_after(),
        assignor in prop::sample::select(vec![Assignor::Range, Assignor::CooperativeSticky]),
        sink in prop::sample::select(SinkKind::DATABASES.to_vec()),
        actions in prop::collection::vec(action(false), 1..80),
    ) {
        let mut lab = new_lab(partitions);
        for a in &actions {
            apply(&mut lab, a, &strategies, sink, assignor);
            if lab.group(GROUP).is_ok() {
                let view = lab.group_view(GROUP).expect("view");
                prop_assert_eq!(view.audit.lost, 0, "after {:?}", a);
            }
        }
    }

    /// The transactional sink never loses and never duplicates, whatever the strategy, as long
    /// as nobody rewinds on purpose.
    #[test]
    fn the_transactional_sink_never_loses_or_duplicates(
        partitions in 1i32..4,
        strategies in strategies(),
        assignor in prop::sample::select(vec![Assignor::Range, Assignor::CooperativeSticky]),
        actions in prop::collection::vec(action(false), 1..80),
    ) {
        let mut lab = new_lab(partitions);
        for a in &actions {
            if matches!(a, Action::Seek(..) | Action::Reset(..)) {
                continue;
            }
            apply(&mut lab, a, &strategies, SinkKind::Transactional, assignor);
            if lab.group(GROUP).is_ok() {
                let view = lab.group_view(GROUP).expect("view");
                prop_assert_eq!((view.audit.lost, view.audit.duplicates), (0, 0), "after {:?}", a);
            }
        }
    }

    /// Kafka transactions never lose or duplicate: whatever crashes, restarts, aborts,
    /// rebalances, zombies and transaction timeouts happen, the committed output holds every
    /// input record below the committed offsets exactly once. Checked twice: by the audit, and
    /// independently from the output topic's log and transaction index (every
    /// order id is produced once, so a key seen twice is a duplicate).
    #[test]
    fn kafka_transactions_never_lose_or_duplicate(
        partitions in 1i32..4,
        out_partitions in 1i32..3,
        strategies in prop::collection::vec(
            prop::sample::select(vec![CommitStrategy::ManualBatch, CommitStrategy::ManualRecord]),
            3,
        ),
        assignor in prop::sample::select(vec![Assignor::Range, Assignor::CooperativeSticky]),
        actions in prop::collection::vec(
            prop_oneof![8 => action(false), 1 => (0..CONSUMERS.len()).prop_map(Action::Abort)],
            1..80,
        ),
    ) {
        let mut lab = new_lab(partitions);
        lab.create_topic(OUTPUT, TopicConfig { partitions: out_partitions, ..TopicConfig::default() })
            .expect("output topic");
        for a in &actions {
            if matches!(a, Action::Seek(..) | Action::Reset(..)) {
                continue;
            }
            apply(&mut lab, a, &strategies, SinkKind::KafkaTx, assignor);
            if lab.group(GROUP).is_err() {
                continue;
            }
            let view = lab.group_view(GROUP).expect("view");
            prop_assert_eq!((view.audit.lost, view.audit.duplicates), (0, 0), "after {:?}", a);
            let mut seen = BTreeSet::new();
            for p in 0..out_partitions {
                let tp = TopicPartition::new(OUTPUT, p);
                let log = lab.partition_log(&tp).expect("log");
                let txns = lab.partition_txns(&tp).expect("txns");
                // Committed: neither a marker, nor aborted, nor in a transaction still open. (A
                // read_committed reader sees those below the last stable offset now, the rest
                // once the older transactions end.)
                let mut keys = Vec::new();
                log.read(0, usize::MAX, &mut |r| {
                    if !r.control && !txns.is_aborted(r.offset) && !txns.is_open(r.offset) {
                        keys.push(r.key.map(<[u8]>::to_vec));
                    }
                });
                for k in keys {
                    prop_assert!(seen.insert(k.clone()), "{:?} committed twice after {:?}", k, a);
                }
            }
            prop_assert_eq!(seen.len() as u64, view.sink.rows, "the committed output is the sink");
            prop_assert!(view.partitions.iter().all(|p| p.aborted_read == 0));
        }
    }
}

/// The snapshot as JSON, to compare two (a snapshot has no `PartialEq`; JSON objects compare
/// whatever order their maps were filled in).
fn json(snapshot: &offsetlab_engine::lab::LabSnapshot) -> serde_json::Value {
    serde_json::to_value(snapshot).expect("a snapshot is JSON")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    /// What a durable lab's journal holds ([`Lab::changes`]): the snapshot of one save, brought
    /// forward by the changes since (written as JSON and read back), is the next save's
    /// snapshot — whatever the actions, and with several actions between two saves.
    #[test]
    fn the_changes_since_a_save_bring_its_snapshot_to_the_next(
        partitions in 1i32..4,
        strategies in strategies(),
        sink in prop::sample::select(vec![SinkKind::Append, SinkKind::Upsert, SinkKind::Transactional, SinkKind::KafkaTx]),
        actions in prop::collection::vec((action(true), 0u8..3), 1..60),
    ) {
        let mut lab = new_lab(partitions);
        let mut saved = lab.snapshot_without_narrative();
        lab.forget_changes();
        for (a, saves) in &actions {
            apply(&mut lab, a, &strategies, sink, Assignor::CooperativeSticky);
            if *saves == 0 {
                continue;
            }
            let entry = serde_json::to_vec(&lab.changes()).expect("changes are JSON");
            lab.forget_changes();
            saved
                .apply(serde_json::from_slice(&entry).expect("read back"))
                .map_err(TestCaseError::fail)?;
            prop_assert_eq!(json(&saved), json(&lab.snapshot_without_narrative()), "after {:?}", a);
        }
    }
}

/// Removals are changes too: a group deleted, a topic deleted — the
/// journal's entry names them and the snapshot brought forward no longer holds them. An entry
/// holds what changed, not the lab: one produce into one of fifty groups' topics carries one
/// topic and no group.
#[test]
fn a_removed_topic_or_group_leaves_the_snapshot_brought_forward() {
    let mut lab = new_lab(1);
    for g in 0..50 {
        let name = format!("g{g}");
        lab.add_consumer(ConsumerConfig::new(&format!("c{g}"), &name, "orders"))
            .expect("consumer");
    }
    let mut saved = lab.snapshot_without_narrative();
    lab.forget_changes();
    lab.produce(
        "orders",
        &ProduceSpec {
            count: 1,
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
    let changes = lab.changes();
    assert_eq!(
        changes.entries(),
        1,
        "the topic produced to, nothing else: {changes:?}"
    );
    saved.apply(changes).expect("apply");
    lab.forget_changes();
    assert_eq!(json(&saved), json(&lab.snapshot_without_narrative()));

    lab.create_topic("t2", TopicConfig::default()).expect("t2");
    let t2 = TopicPartition::new("t2", 0);
    let none = std::collections::BTreeMap::new();
    lab.alter_offsets("gx", &[(t2, 0)], &none, &Default::default())
        .expect("gx");
    let entry = serde_json::to_string(&lab.changes()).expect("json");
    assert!(entry.contains("\"gx\""), "the new group is in the entry: {entry}");
    lab.delete_topic("t2").expect("delete topic");
    lab.delete_group("gx").expect("delete group");
    let entry = serde_json::to_string(&lab.changes()).expect("json");
    lab.forget_changes();
    saved
        .apply(serde_json::from_str(&entry).expect("read back"))
        .expect("apply");
    let now = json(&lab.snapshot_without_narrative());
    assert_eq!(json(&saved), now);
    assert!(
        !now.to_string().contains("\"gx\""),
        "the deleted group is gone: {entry}"
    );
}
