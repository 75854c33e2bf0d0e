//! Property tests of share groups: over random sequences of share consumers joining, polling,
//! processing, acknowledging, crashing, closing and time passing,
//! - no record is ever acquired by a member while another member holds its lock;
//! - an acknowledgement (or anything a share consumer does) never changes the log;
//! - the SPSO never goes back and never passes the SPEO, every acquired record has a lock and
//!   no other record has one, and no record is delivered more than the delivery limit allows;
//! - a refused action changes nothing;
//! - an administrator's moves (AlterShareGroupOffsets with any offset, negative ones included,
//!   DeleteShareGroupOffsets, DeleteGroups) never change the log, and every state they leave
//!   reads back from a snapshot as it was written.

use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::share::{
    AcknowledgeType, AcknowledgementMode, DeliveryState, ShareAutoOffsetReset, ShareConsumerConfig,
    ShareGroupConfigChange,
};
use offsetlab_engine::Lab;
use proptest::prelude::*;
use std::collections::BTreeMap;

const NAMES: [&str; 3] = ["s1", "s2", "s3"];
const LIMIT: u16 = 3;

#[derive(Debug, Clone)]
enum Action {
    Produce(u64),
    Join(usize, bool, usize),
    Poll(usize),
    Process(usize, Option<usize>),
    Ack(usize, AcknowledgeType, usize),
    Commit(usize),
    Crash(usize),
    Close(usize),
    Restart(usize),
    Tick(i64),
    /// AlterShareGroupOffsets of group `sg` for one partition.
    AlterOffsets(i32, i64),
    DeleteOffsets,
    DeleteGroup,
}

fn action() -> impl Strategy<Value = Action> {
    let who = 0..NAMES.len();
    let ack = prop_oneof![
        Just(AcknowledgeType::Accept),
        Just(AcknowledgeType::Release),
        Just(AcknowledgeType::Reject)
    ];
    prop_oneof![
        1 => (1..6u64).prop_map(Action::Produce),
        1 => (who.clone(), any::<bool>(), 1..5usize).prop_map(|(i, e, m)| Action::Join(i, e, m)),
        4 => who.clone().prop_map(Action::Poll),
        2 => (who.clone(), proptest::option::of(1..4usize)).prop_map(|(i, n)| Action::Process(i, n)),
        3 => (who.clone(), ack, 0..4usize).prop_map(|(i, a, k)| Action::Ack(i, a, k)),
        1 => who.clone().prop_map(Action::Commit),
        1 => who.clone().prop_map(Action::Crash),
        1 => who.clone().prop_map(Action::Close),
        1 => who.clone().prop_map(Action::Restart),
        2 => prop_oneof![Just(1_000i64), Just(15_000), Just(30_000), Just(45_000)].prop_map(Action::Tick),
        1 => (0..2i32, prop_oneof![-5..0i64, 0..30i64]).prop_map(|(p, o)| Action::AlterOffsets(p, o)),
        1 => Just(Action::DeleteOffsets),
        1 => Just(Action::DeleteGroup),
    ]
}

fn tp(p: i32) -> TopicPartition {
    TopicPartition::new("orders", p)
}

/// A partition's log start and end, and every record's offset and value.
type LogPrint = (i64, i64, Vec<(i64, Option<Vec<u8>>)>);

/// Every record of both partitions, with the logs' bounds: what no share action may change.
fn log_fingerprint(lab: &Lab) -> Vec<LogPrint> {
    (0..2)
        .map(|p| {
            let log = lab.partition_log(&tp(p)).expect("log");
            let mut records = Vec::new();
            log.read(log.log_start_offset(), usize::MAX, &mut |r| {
                records.push((r.offset, r.value.map(<[u8]>::to_vec)));
            });
            (log.log_start_offset(), log.log_end_offset(), records)
        })
        .collect()
}

/// Who holds each acquired record's lock now.
fn locks(lab: &Lab) -> BTreeMap<(TopicPartition, i64), String> {
    let mut out = BTreeMap::new();
    for g in lab.share().groups.values() {
        for (t, p) in &g.partitions {
            for (o, r) in p.records() {
                if let Some(l) = &r.lock {
                    out.insert((t.clone(), o), l.member.clone());
                }
            }
        }
    }
    out
}

fn apply(lab: &mut Lab, a: &Action) -> Result<(), offsetlab_engine::LabError> {
    match a {
        Action::Produce(n) => lab
            .produce(
                "orders",
                &ProduceSpec {
                    count: *n,
                    // Odd counts in one batch (acquired whole), even ones a batch per record.
                    batch: (n % 2 == 0).then_some(1),
                    ..ProduceSpec::default()
                },
            )
            .map(|_| ()),
        Action::Join(i, explicit, max) => {
            let mut c = ShareConsumerConfig::new(NAMES[*i], "sg", "orders");
            c.max_poll_records = *max;
            if max % 2 == 0 {
                c.acquire_mode = offsetlab_engine::share::AcquireMode::RecordLimit;
            }
            if *explicit {
                c.acknowledgement_mode = AcknowledgementMode::Explicit;
            }
            lab.add_share_consumer(c)
        }
        Action::Poll(i) => lab.share_poll(NAMES[*i]).map(|_| ()),
        Action::Process(i, n) => lab.process(NAMES[*i], *n).map(|_| ()),
        Action::Ack(i, ack, k) => {
            let held: Vec<(TopicPartition, i64)> = lab
                .share_consumer(NAMES[*i])
                .map(|c| c.held.iter().map(|h| (h.tp.clone(), h.offset)).collect())
                .unwrap_or_default();
            // k = 0: everything held; else every k-th record held, plus one never handed out.
            let picked: Vec<(TopicPartition, i64)> = if *k == 0 {
                held
            } else {
                held.into_iter().step_by(*k).chain([(tp(0), 10_000)]).collect()
            };
            let picked = if *k == 3 {
                picked
            } else {
                picked.into_iter().filter(|r| r.1 < 10_000).collect()
            };
            lab.share_acknowledge(NAMES[*i], Some(&picked), *ack).map(|_| ())
        }
        Action::Commit(i) => lab.commit(NAMES[*i]),
        Action::Crash(i) => lab.crash(NAMES[*i]),
        Action::Close(i) => lab.close(NAMES[*i]),
        Action::Restart(i) => lab.restart(NAMES[*i]),
        Action::Tick(ms) => lab.tick(*ms),
        Action::AlterOffsets(p, o) => lab.alter_share_group_offsets("sg", &[(tp(*p), *o)]),
        Action::DeleteOffsets => lab
            .delete_share_group_offsets("sg", &["orders".to_string()])
            .map(|_| ()),
        Action::DeleteGroup => lab.delete_group("sg").map(|_| ()),
    }
}

fn check_invariants(lab: &Lab, spso_before: &BTreeMap<TopicPartition, i64>) -> Result<(), TestCaseError> {
    for g in lab.share().groups.values() {
        for (t, p) in &g.partitions {
            prop_assert!(p.start_offset <= p.end_offset, "{t}: SPSO past SPEO");
            if let Some(&before) = spso_before.get(t) {
                prop_assert!(p.start_offset >= before, "{t}: the SPSO went back");
            }
            for (o, r) in p.records() {
                prop_assert!(o < p.end_offset, "{t}@{o} past the SPEO");
                prop_assert_eq!(
                    r.lock.is_some(),
                    r.state == DeliveryState::Acquired,
                    "{}@{}",
                    t,
                    o
                );
                prop_assert!(
                    r.delivery_count <= LIMIT,
                    "{t}@{o} delivered {} times",
                    r.delivery_count
                );
            }
        }
    }
    Ok(())
}

fn spsos(lab: &Lab) -> BTreeMap<TopicPartition, i64> {
    lab.share()
        .groups
        .values()
        .flat_map(|g| g.partitions.iter().map(|(t, p)| (t.clone(), p.start_offset)))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn share_groups_keep_their_invariants(actions in proptest::collection::vec(action(), 1..60)) {
        let mut lab = Lab::default();
        lab.create_topic("orders", TopicConfig { partitions: 2, ..TopicConfig::default() }).expect("topic");
        lab.alter_share_group("sg", &ShareGroupConfigChange {
            auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
            delivery_count_limit: Some(LIMIT),
            record_lock_duration_ms: Some(15_000),
            ..Default::default()
        }).expect("config");
        for a in &actions {
            let before_locks = locks(&lab);
            let before_log = log_fingerprint(&lab);
            let before_spso = spsos(&lab);
            let before = serde_json::to_string(&lab.snapshot_without_narrative()).expect("json");
            let ok = apply(&mut lab, a).is_ok();
            if !ok {
                let after = serde_json::to_string(&lab.snapshot_without_narrative()).expect("json");
                prop_assert_eq!(&before, &after, "a refused {:?} changed the lab", a);
            }
            if !matches!(a, Action::Produce(_)) {
                prop_assert_eq!(&before_log, &log_fingerprint(&lab), "{:?} changed the log", a);
            }
            if let (Action::Poll(i), true) = (a, ok) {
                let c = lab.share_consumer(NAMES[*i]).expect("consumer");
                let me = c.member_id();
                for (t, o) in &c.last_poll {
                    if let Some(holder) = before_locks.get(&(t.clone(), *o)) {
                        prop_assert_eq!(holder, &me, "{}@{} acquired by {} while {} held it", t, o, me, holder);
                    }
                    prop_assert!(!before_locks.contains_key(&(t.clone(), *o)), "{t}@{o} was locked");
                }
            }
            // An administrator moves the start offset back on purpose.
            let moved = matches!(a, Action::AlterOffsets(..) | Action::DeleteOffsets | Action::DeleteGroup);
            let before_spso = if moved { BTreeMap::new() } else { before_spso };
            check_invariants(&lab, &before_spso)?;
        }
        // Every state the actions left reads back from its snapshot as it was written.
        let written = serde_json::to_string(&lab.snapshot_without_narrative()).expect("json");
        let read: offsetlab_engine::lab::LabSnapshot = serde_json::from_str(&written).expect("reads back");
        prop_assert_eq!(&written, &serde_json::to_string(&read).expect("json"));
    }
}
