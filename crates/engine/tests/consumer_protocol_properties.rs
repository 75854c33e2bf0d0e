//! Property: under Kafka 4's consumer group protocol (KIP-848) no partition is ever owned by two
//! members at once — not by the coordinator's books (assigned or pending revocation), and not by
//! the consumer processes that are members — whatever the sequence of joins (of either protocol,
//! so groups are upgraded and downgraded on the way), leaves, crashes, restarts, polls,
//! commits and ticks.

use offsetlab_engine::consumer::{Assignor, ConsumerConfig};
use offsetlab_engine::group::{GroupProtocol, ServerAssignor};
use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy};
use offsetlab_engine::Lab;
use proptest::prelude::*;
use std::collections::BTreeSet;

const CONSUMERS: [&str; 4] = ["c1", "c2", "c3", "c4"];

#[derive(Debug, Clone)]
enum Action {
    Produce(u64),
    /// A consumer-protocol member (with an instance id when the flag is set), or a classic one.
    Join(usize, Protocol, bool),
    Poll(usize),
    Process(usize),
    Commit(usize),
    Tick(i64),
    Crash(usize),
    Restart(usize),
    Close(usize),
}

#[derive(Debug, Clone, Copy)]
enum Protocol {
    Uniform,
    Range,
    ClassicEager,
    ClassicCooperative,
}

fn action() -> impl Strategy<Value = Action> {
    let c = 0..CONSUMERS.len();
    let protocol = prop_oneof![
        4 => Just(Protocol::Uniform),
        2 => Just(Protocol::Range),
        1 => Just(Protocol::ClassicEager),
        1 => Just(Protocol::ClassicCooperative),
    ];
    prop_oneof![
        2 => (1u64..8).prop_map(Action::Produce),
        3 => (c.clone(), protocol, any::<bool>()).prop_map(|(i, p, s)| Action::Join(i, p, s)),
        6 => c.clone().prop_map(Action::Poll),
        4 => c.clone().prop_map(Action::Process),
        1 => c.clone().prop_map(Action::Commit),
        5 => prop_oneof![Just(1i64), Just(2_500), Just(5_000), Just(46_000), Just(301_000)].prop_map(Action::Tick),
        2 => c.clone().prop_map(Action::Crash),
        2 => c.clone().prop_map(Action::Restart),
        1 => c.prop_map(Action::Close),
    ]
}

fn apply(lab: &mut Lab, a: &Action) {
    let name = |i: usize| CONSUMERS[i];
    // Invalid actions (poll a crashed consumer, …) are refused and change nothing.
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
        Action::Join(i, p, static_member) => {
            let (group_protocol, remote_assignor, assignor) = match p {
                Protocol::Uniform => (GroupProtocol::Consumer, ServerAssignor::Uniform, Assignor::Range),
                Protocol::Range => (GroupProtocol::Consumer, ServerAssignor::Range, Assignor::Range),
                Protocol::ClassicEager => (GroupProtocol::Classic, ServerAssignor::Uniform, Assignor::Range),
                Protocol::ClassicCooperative => (
                    GroupProtocol::Classic,
                    ServerAssignor::Uniform,
                    Assignor::CooperativeSticky,
                ),
            };
            lab.add_consumer(ConsumerConfig {
                strategy: CommitStrategy::ManualBatch,
                max_poll_records: 3,
                auto_offset_reset: AutoOffsetReset::Earliest,
                group_protocol,
                remote_assignor,
                assignor,
                group_instance_id: static_member.then(|| format!("{}-host", name(*i))),
                ..ConsumerConfig::new(name(*i), "g", "orders")
            })
        }
        Action::Poll(i) => lab.poll(name(*i)).map(|_| ()),
        Action::Process(i) => lab.process(name(*i), None).map(|_| ()),
        Action::Commit(i) => lab.commit(name(*i)),
        Action::Tick(ms) => lab.tick(*ms),
        Action::Crash(i) => lab.crash(name(*i)),
        Action::Restart(i) => lab.restart(name(*i)),
        Action::Close(i) => lab.close(name(*i)),
    };
}

fn check(lab: &Lab) -> Result<(), TestCaseError> {
    let Ok(g) = lab.group("g") else {
        return Ok(());
    };
    // The processes that are members hold disjoint partitions (a zombie removed from the group
    // may still believe it holds some: the coordinator does not, and fences its commits).
    let mut held = BTreeSet::new();
    for c in lab
        .consumers()
        .values()
        .filter(|c| c.is_running() && g.is_member(&c.member_id()))
    {
        for tp in c.assignment.keys() {
            prop_assert!(held.insert(tp.clone()), "{} held by two member processes", tp);
        }
    }
    let Some(cg) = &g.consumer else {
        return Ok(());
    };
    prop_assert!(
        cg.owners_disjoint(),
        "the coordinator has a partition owned twice"
    );
    prop_assert_eq!(&g.owners, &cg.owners());
    let ids: BTreeSet<&String> = g.members.iter().map(|m| &m.id).collect();
    prop_assert_eq!(ids, cg.members.keys().collect::<BTreeSet<_>>());
    for c in lab.consumers().values().filter(|c| c.is_running()) {
        let Some(m) = cg.members.get(&c.member_id()) else {
            continue;
        };
        let owns: BTreeSet<&TopicPartition> = m.assigned.iter().chain(&m.pending_revocation).collect();
        for tp in c.assignment.keys() {
            prop_assert!(
                owns.contains(tp),
                "{} holds {} the coordinator gave it not",
                m.member_id,
                tp
            );
        }
        prop_assert!(m.member_epoch <= cg.group_epoch);
        if !m.classic {
            prop_assert_eq!(c.generation, m.member_epoch, "the client knows its member epoch");
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    #[test]
    fn no_partition_is_owned_by_two_members(actions in prop::collection::vec(action(), 1..60)) {
        let mut lab = Lab::default();
        lab.create_topic("orders", TopicConfig { partitions: 6, ..TopicConfig::default() }).expect("topic");
        for a in &actions {
            apply(&mut lab, a);
            check(&lab)?;
        }
    }
}
