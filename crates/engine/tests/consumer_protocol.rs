//! Kafka 4's consumer group protocol (KIP-848), one test per rule: the coordinator's assignment
//! (uniform, range), reconciliation in order (revoke, then assign), group and member epochs,
//! commit fencing by member epoch, session timeouts by missed heartbeats, static members, and
//! groups that mix protocols (upgrade, downgrade).

use offsetlab_engine::consumer::{Assignor, ConsumerConfig};
use offsetlab_engine::group::{ConsumerGroup, GroupProtocol, MemberState, ServerAssignor};
use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::offsets::OffsetKey;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy};
use offsetlab_engine::{Lab, LabError};
use std::collections::BTreeSet;

const HEARTBEAT: i64 = 5_000;

/// A lab with `orders` of six partitions, four records in each.
fn lab() -> Lab {
    let mut lab = Lab::default();
    lab.create_topic(
        "orders",
        TopicConfig {
            partitions: 6,
            ..TopicConfig::default()
        },
    )
    .expect("topic");
    for p in 0..6 {
        lab.produce(
            "orders",
            &ProduceSpec {
                count: 4,
                partition: Some(p),
                ..ProduceSpec::default()
            },
        )
        .expect("produce");
    }
    lab
}

fn config(name: &str, protocol: GroupProtocol) -> ConsumerConfig {
    ConsumerConfig {
        strategy: CommitStrategy::ManualBatch,
        auto_offset_reset: AutoOffsetReset::Earliest,
        group_protocol: protocol,
        ..ConsumerConfig::new(name, "g", "orders")
    }
}

fn join(lab: &mut Lab, name: &str) {
    lab.add_consumer(config(name, GroupProtocol::Consumer))
        .expect("join");
}

fn cg(lab: &Lab) -> &ConsumerGroup {
    lab.group("g")
        .expect("group")
        .consumer
        .as_ref()
        .expect("a consumer group")
}

fn tps(ps: &[i32]) -> BTreeSet<TopicPartition> {
    ps.iter().map(|p| TopicPartition::new("orders", *p)).collect()
}

/// What the coordinator says `member` owns.
fn assigned(lab: &Lab, member: &str) -> BTreeSet<TopicPartition> {
    cg(lab)
        .members
        .get(member)
        .map(|m| m.assigned.clone())
        .unwrap_or_default()
}

/// What the consumer process holds.
fn held(lab: &Lab, name: &str) -> BTreeSet<TopicPartition> {
    lab.consumer(name)
        .expect("consumer")
        .assignment
        .keys()
        .cloned()
        .collect()
}

fn epoch(lab: &Lab, member: &str) -> i32 {
    cg(lab).members.get(member).map_or(-1, |m| m.member_epoch)
}

fn committed(lab: &Lab, p: i32) -> Option<i64> {
    lab.offsets()
        .fetch(&OffsetKey::new("g", &TopicPartition::new("orders", p)))
        .map(|v| v.offset)
}

/// Two members that split the six partitions and are Stable.
fn two_stable() -> Lab {
    let mut lab = lab();
    join(&mut lab, "c1");
    join(&mut lab, "c2");
    // c1 learns of c2 on its next heartbeat, revokes in its poll, and c2 takes the rest on its
    // next heartbeat.
    lab.tick(HEARTBEAT).expect("tick");
    lab.poll("c1").expect("poll");
    lab.tick(HEARTBEAT).expect("tick");
    assert_eq!(cg(&lab).state_name(), "Stable");
    lab
}

#[test]
fn the_first_member_gets_every_partition_at_group_epoch_two() {
    let mut lab = lab();
    join(&mut lab, "c1");
    // Kafka 4.4 creates the group at epoch 1; the first member's join bumps it.
    assert_eq!(cg(&lab).group_epoch, 2);
    assert_eq!(epoch(&lab, "c1#1"), 2);
    assert_eq!(assigned(&lab, "c1#1"), tps(&[0, 1, 2, 3, 4, 5]));
    assert_eq!(held(&lab, "c1"), tps(&[0, 1, 2, 3, 4, 5]));
    assert_eq!(lab.group("g").expect("g").state_name(), "Stable");
}

#[test]
fn uniform_is_balanced_and_sticky() {
    let mut lab = two_stable();
    assert_eq!(assigned(&lab, "c1#1"), tps(&[0, 1, 2]));
    assert_eq!(assigned(&lab, "c2#1"), tps(&[3, 4, 5]));
    join(&mut lab, "c3");
    let target = cg(&lab).clone();
    let of = |m: &str| target.target_of(m).len();
    assert_eq!((of("c1#1"), of("c2#1"), of("c3#1")), (2, 2, 2));
    // Sticky: each of the first two keeps two of its three.
    assert!(target.target_of("c1#1").is_subset(&tps(&[0, 1, 2])));
    assert!(target.target_of("c2#1").is_subset(&tps(&[3, 4, 5])));
}

#[test]
fn range_gives_contiguous_ranges_by_member_id() {
    let mut lab = lab();
    for name in ["c2", "c1"] {
        lab.add_consumer(ConsumerConfig {
            remote_assignor: ServerAssignor::Range,
            ..config(name, GroupProtocol::Consumer)
        })
        .expect("join");
    }
    // c1 joined in the same second as c2: its epoch's target is computed a second after c2's
    // (Kafka 4.4 assigns at most once a second), c2 alone until then.
    assert_eq!(cg(&lab).state_name(), "Assigning");
    assert_eq!(cg(&lab).target_of("c2#1"), tps(&[0, 1, 2, 3, 4, 5]));
    lab.tick(1_000).expect("tick");
    assert_eq!(cg(&lab).assignor(), ServerAssignor::Range);
    assert_eq!(cg(&lab).target_of("c1#1"), tps(&[0, 1, 2]));
    assert_eq!(cg(&lab).target_of("c2#1"), tps(&[3, 4, 5]));
}

#[test]
fn a_partition_moves_only_after_its_old_owner_revoked_it() {
    let mut lab = two_stable();
    join(&mut lab, "c3");
    // Everything is owned: c3 is at the new epoch, awaiting.
    assert_eq!(cg(&lab).group_epoch, 4);
    assert_eq!(epoch(&lab, "c3#1"), 4);
    assert!(assigned(&lab, "c3#1").is_empty());
    assert_eq!(cg(&lab).members["c3#1"].state, MemberState::UnreleasedPartitions);
    // c1's next heartbeat asks it to revoke one partition; it keeps epoch 3 until it has.
    lab.tick(HEARTBEAT).expect("tick");
    let c1 = cg(&lab).members["c1#1"].clone();
    assert_eq!(c1.state, MemberState::UnrevokedPartitions);
    assert_eq!(c1.member_epoch, 3);
    assert_eq!(c1.pending_revocation.len(), 1);
    let moving = c1.pending_revocation.iter().next().cloned().expect("one");
    // c3 heartbeats too, but the partition is still c1's.
    lab.tick(HEARTBEAT).expect("tick");
    assert!(!assigned(&lab, "c3#1").contains(&moving));
    // c1's poll revokes it (the callback commits) and acknowledges at once: epoch 4.
    lab.poll("c1").expect("poll");
    assert_eq!(epoch(&lab, "c1#1"), 4);
    assert!(!held(&lab, "c1").contains(&moving));
    assert!(
        !assigned(&lab, "c3#1").contains(&moving),
        "not before c3's next heartbeat"
    );
    lab.tick(HEARTBEAT).expect("tick");
    assert!(assigned(&lab, "c3#1").contains(&moving));
    assert!(held(&lab, "c3").contains(&moving));
}

#[test]
fn only_the_moving_partitions_pause() {
    let mut lab = two_stable();
    lab.poll("c2").expect("poll");
    lab.process("c2", None).expect("process");
    join(&mut lab, "c3");
    lab.tick(HEARTBEAT).expect("tick");
    // c2 has a partition to revoke; its poll revokes it and goes on reading the other two.
    let kept: BTreeSet<TopicPartition> = assigned(&lab, "c2#1");
    assert_eq!(kept.len(), 2);
    lab.produce(
        "orders",
        &ProduceSpec {
            count: 12,
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
    let n = lab.poll("c2").expect("poll");
    assert!(n > 0, "c2 keeps fetching while the group reconciles");
    let polled: BTreeSet<TopicPartition> = lab
        .consumer("c2")
        .expect("c2")
        .last_poll
        .iter()
        .map(|(tp, _)| tp.clone())
        .collect();
    assert!(polled.is_subset(&kept));
}

#[test]
fn no_partition_has_two_owners_during_a_scale_out() {
    let mut lab = two_stable();
    join(&mut lab, "c3");
    for step in 0..12 {
        assert!(cg(&lab).owners_disjoint(), "step {step}");
        let mut seen = BTreeSet::new();
        for name in ["c1", "c2", "c3"] {
            for tp in held(&lab, name) {
                assert!(seen.insert(tp), "step {step}: two consumers hold one partition");
            }
        }
        match step % 3 {
            0 => lab.tick(HEARTBEAT / 2).map(|_| 0),
            1 => lab.poll("c1"),
            _ => lab.poll("c2"),
        }
        .expect("step");
    }
    assert_eq!(cg(&lab).state_name(), "Stable");
    assert_eq!(
        [epoch(&lab, "c1#1"), epoch(&lab, "c2#1"), epoch(&lab, "c3#1")],
        [4; 3]
    );
}

/// Kafka 4.4 (KIP-1251): a commit stamped with an epoch its member has left is still its own for
/// the partitions it had by then — stored, not refused with STALE_MEMBER_EPOCH as before 4.4.
#[test]
fn a_late_commit_from_an_older_epoch_is_stored_for_what_the_member_had_then() {
    let mut lab = lab();
    for name in ["c1", "c2"] {
        lab.add_consumer(ConsumerConfig {
            strategy: CommitStrategy::ManualAsync,
            async_commit_latency_ms: 8_000,
            ..config(name, GroupProtocol::Consumer)
        })
        .expect("join");
    }
    lab.tick(HEARTBEAT).expect("tick");
    lab.poll("c1").expect("poll");
    lab.tick(HEARTBEAT).expect("tick");
    assert_eq!(epoch(&lab, "c1#1"), 3);
    lab.poll("c1").expect("poll");
    lab.process("c1", None)
        .expect("process: sends commitAsync stamped with epoch 3");
    // c2 leaves: c1's next heartbeat moves it to epoch 4 before the async commit lands.
    lab.close("c2").expect("close");
    lab.tick(HEARTBEAT).expect("tick");
    assert_eq!(epoch(&lab, "c1#1"), 4);
    let before: Vec<Option<i64>> = (0..6).map(|p| committed(&lab, p)).collect();
    lab.tick(HEARTBEAT).expect("the async commit lands");
    let after: Vec<Option<i64>> = (0..6).map(|p| committed(&lab, p)).collect();
    assert_ne!(before, after, "the late commit is stored");
    assert!(!lab
        .narrative()
        .events()
        .iter()
        .any(|e| e.text.contains("STALE_MEMBER_EPOCH")));
}

/// A commit at an older epoch for a partition its member has given away since is the zombie's
/// part: STALE_MEMBER_EPOCH for it (as a `commit-offsets` line or a real client's OffsetCommit
/// carries it), nothing stored.
#[test]
fn a_commit_for_a_partition_given_away_since_is_stale() {
    let mut lab = two_stable();
    // c1 owns 0,1,2 since epoch 2 (it had all six then); c2 got 3,4,5 at epoch 3.
    assert_eq!(epoch(&lab, "c1#1"), 3);
    let none = Default::default();
    let at = |p: i32| [(TopicPartition::new("orders", p), 1)];
    let stale = lab.external_commit("g", "c1#1", 2, &at(4), &none, &Default::default());
    assert!(
        matches!(stale, Err(LabError::StaleMemberEpoch { current: 3, .. })),
        "{stale:?}"
    );
    assert_eq!(committed(&lab, 4), None);
    lab.external_commit("g", "c1#1", 2, &at(0), &none, &Default::default())
        .expect("orders-0 was c1's at epoch 2");
    assert_eq!(committed(&lab, 0), Some(1));
    let ahead = lab.external_commit("g", "c1#1", 4, &at(0), &none, &Default::default());
    assert!(
        matches!(ahead, Err(LabError::StaleMemberEpoch { .. })),
        "{ahead:?}"
    );
}

#[test]
fn a_zombie_is_fenced_with_unknown_member_id() {
    let mut lab = lab();
    lab.add_consumer(ConsumerConfig {
        max_poll_interval_ms: 30_000,
        ..config("c1", GroupProtocol::Consumer)
    })
    .expect("join");
    join(&mut lab, "c2");
    lab.poll("c1").expect("poll");
    // c1 stops polling: after max.poll.interval.ms it leaves; c2 keeps polling.
    for _ in 0..7 {
        lab.tick(HEARTBEAT).expect("tick");
        lab.poll("c2").expect("poll");
    }
    assert!(!cg(&lab).members.contains_key("c1#1"));
    let before: Vec<Option<i64>> = (0..6).map(|p| committed(&lab, p)).collect();
    lab.process("c1", None)
        .expect("the zombie finishes its batch and commits");
    let after: Vec<Option<i64>> = (0..6).map(|p| committed(&lab, p)).collect();
    assert_eq!(before, after);
    assert!(lab
        .narrative()
        .events()
        .iter()
        .any(|e| e.text.contains("UNKNOWN_MEMBER_ID")));
}

#[test]
fn the_session_expires_45s_after_the_last_heartbeat() {
    let mut lab = two_stable();
    // Heartbeats every 5 s since c2 joined at 0 s (c2's last one: 10 s); the crash is at 12 s.
    lab.tick(2_000).expect("tick");
    lab.crash("c2").expect("crash");
    let expires = lab
        .group("g")
        .expect("g")
        .members
        .iter()
        .find(|m| m.id == "c2#1")
        .and_then(|m| m.expires_at);
    let last_heartbeat = cg(&lab).members["c2#1"].last_heartbeat_by(lab.now());
    assert_eq!(expires, Some(last_heartbeat + 45_000));
    assert!(last_heartbeat < lab.now());
    lab.tick(expires.expect("set") - lab.now() - 1).expect("tick");
    assert!(
        cg(&lab).members.contains_key("c2#1"),
        "still a member 1 ms before"
    );
    lab.tick(1).expect("tick");
    assert!(!cg(&lab).members.contains_key("c2#1"));
    assert_eq!(cg(&lab).group_epoch, 4);
    lab.tick(HEARTBEAT)
        .expect("c1's heartbeat takes the free partitions");
    assert_eq!(assigned(&lab, "c1#1"), tps(&[0, 1, 2, 3, 4, 5]));
}

fn static_config(name: &str) -> ConsumerConfig {
    ConsumerConfig {
        group_instance_id: Some(format!("{name}-host")),
        ..config(name, GroupProtocol::Consumer)
    }
}

#[test]
fn a_static_member_back_within_the_session_keeps_its_assignment() {
    let mut lab = lab();
    lab.add_consumer(static_config("c1")).expect("join");
    lab.add_consumer(static_config("c2")).expect("join");
    lab.tick(HEARTBEAT).expect("tick");
    lab.poll("c1").expect("poll");
    lab.tick(HEARTBEAT).expect("tick");
    let (epoch_before, mine) = (cg(&lab).group_epoch, assigned(&lab, "c2#1"));
    lab.close("c2").expect("static leave");
    lab.tick(30_000).expect("tick");
    lab.restart("c2").expect("restart");
    assert_eq!(cg(&lab).group_epoch, epoch_before, "no new group epoch");
    assert_eq!(assigned(&lab, "c2#2"), mine);
    assert_eq!(held(&lab, "c2"), mine);
    assert_eq!(epoch(&lab, "c2#2"), epoch_before);
    assert_eq!(lab.consumer("c2").expect("c2").generation, epoch_before);
}

#[test]
fn a_crashed_static_member_holds_its_instance_id_until_its_session_expires() {
    let mut lab = lab();
    lab.add_consumer(static_config("c1")).expect("join");
    lab.crash("c1").expect("crash");
    let err = lab.restart("c1").expect_err("UNRELEASED_INSTANCE_ID");
    assert!(matches!(err, LabError::UnreleasedInstanceId(_)), "{err}");
    assert_eq!(lab.consumer("c1").expect("c1").incarnation, 1, "nothing changed");
    lab.tick(45_000).expect("session expires");
    lab.restart("c1").expect("restart after the session expired");
    assert_eq!(assigned(&lab, "c1#2"), tps(&[0, 1, 2, 3, 4, 5]));
}

#[test]
fn a_consumer_member_upgrades_a_classic_group_and_the_last_one_out_downgrades_it() {
    let mut lab = lab();
    for name in ["c1", "c2"] {
        lab.add_consumer(ConsumerConfig {
            assignor: Assignor::CooperativeSticky,
            ..config(name, GroupProtocol::Classic)
        })
        .expect("classic join");
    }
    lab.poll("c1").expect("poll");
    lab.poll("c2").expect("poll");
    let g = lab.group("g").expect("g");
    assert!(g.consumer.is_none());
    let generation = g.generation;
    let owners = g.owners.clone();
    join(&mut lab, "c3");
    assert_eq!(cg(&lab).members["c1#1"].member_epoch, generation);
    assert!(cg(&lab).members["c1#1"].classic);
    assert_eq!(cg(&lab).group_epoch, generation + 1);
    // The classic members reconcile by rejoining inside their polls.
    for _ in 0..3 {
        lab.poll("c1").expect("poll");
        lab.poll("c2").expect("poll");
        lab.tick(HEARTBEAT).expect("tick");
        assert!(cg(&lab).owners_disjoint());
    }
    assert_eq!(cg(&lab).state_name(), "Stable");
    for m in ["c1#1", "c2#1", "c3#1"] {
        assert_eq!(assigned(&lab, m).len(), 2, "{m}");
    }
    assert_ne!(owners, lab.group("g").expect("g").owners);
    // c3 leaves: only classic members remain, the group goes back to classic and rebalances.
    lab.close("c3").expect("close");
    let g = lab.group("g").expect("g");
    assert!(g.consumer.is_none());
    assert_eq!(g.state_name(), "PreparingRebalance");
    lab.poll("c1").expect("poll");
    lab.poll("c2").expect("poll");
    assert_eq!(lab.group("g").expect("g").state_name(), "Stable");
    assert_eq!(held(&lab, "c1").len() + held(&lab, "c2").len(), 6);
}

#[test]
fn an_empty_group_takes_the_protocol_of_whoever_joins_it() {
    let mut lab = lab();
    lab.add_consumer(config("c1", GroupProtocol::Classic))
        .expect("classic");
    lab.close("c1").expect("close");
    join(&mut lab, "c2");
    assert_eq!(cg(&lab).group_epoch, 2, "the empty classic group was replaced");
    lab.close("c2").expect("close");
    assert_eq!(lab.group("g").expect("g").state_name(), "Empty");
    lab.add_consumer(config("c3", GroupProtocol::Classic))
        .expect("classic");
    let g = lab.group("g").expect("g");
    assert!(
        g.consumer.is_none(),
        "the empty consumer group was replaced by a classic one"
    );
    assert_eq!(g.state_name(), "Stable");
}

#[test]
fn a_classic_member_joins_a_consumer_group_as_a_classic_member() {
    let mut lab = two_stable();
    lab.add_consumer(config("c3", GroupProtocol::Classic))
        .expect("classic join");
    assert!(cg(&lab).members["c3#1"].classic);
    for _ in 0..3 {
        lab.tick(HEARTBEAT).expect("tick");
        lab.poll("c1").expect("poll");
        lab.poll("c2").expect("poll");
        lab.poll("c3").expect("poll");
    }
    assert_eq!(cg(&lab).state_name(), "Stable");
    assert_eq!(held(&lab, "c3").len(), 2);
}

/// Kafka starts a deleted group over at epoch 2. The lab, which keeps the group for its own
/// consumers, goes on from its epochs when one of them brings it back — as a classic group goes
/// on from its generation — because its transactional sink fences writes from older epochs (the
/// listener's coordinator never goes below the lab's epoch either). A known difference, in
/// docs/SCENARIOS.md.
#[test]
fn a_deleted_consumer_group_brought_back_by_a_lab_consumer_goes_on_from_its_epochs() {
    let mut lab = lab();
    join(&mut lab, "c1");
    join(&mut lab, "c2");
    lab.close("c1").expect("close");
    lab.close("c2").expect("close");
    let before = cg(&lab).group_epoch;
    assert!(before > 2);
    lab.delete_group("g").expect("an Empty group can be deleted");
    assert_eq!(
        lab.group("g").expect("kept for its consumers").state_name(),
        "Dead"
    );
    lab.restart("c1").expect("restart");
    assert_eq!(cg(&lab).group_epoch, before + 1);
    assert_eq!(epoch(&lab, "c1#2"), before + 1);
}

/// The sequence Apache Kafka 4.4 gave librdkafka members (group.protocol=consumer, the uniform
/// assignor) on six partitions: 0-2 / 3-5 for two members, then 0,1 / 3,4 / 2,5 for three; when
/// the second leaves, its partitions are free at once and the survivors' next heartbeats take
/// 3 and 4 (0,1,3 / 2,4,5).
#[test]
fn the_uniform_targets_kafka_gave_and_a_leave_frees_partitions_at_once() {
    let mut lab = two_stable();
    join(&mut lab, "c3");
    assert_eq!(cg(&lab).target_of("c1#1"), tps(&[0, 1]));
    assert_eq!(cg(&lab).target_of("c2#1"), tps(&[3, 4]));
    assert_eq!(cg(&lab).target_of("c3#1"), tps(&[2, 5]));
    for _ in 0..3 {
        lab.tick(HEARTBEAT).expect("tick");
        lab.poll("c1").expect("poll");
        lab.poll("c2").expect("poll");
    }
    assert_eq!(cg(&lab).state_name(), "Stable");
    lab.close("c2").expect("close");
    assert_eq!(cg(&lab).target_of("c1#1"), tps(&[0, 1, 3]));
    assert_eq!(cg(&lab).target_of("c3#1"), tps(&[2, 4, 5]));
    assert_eq!(
        cg(&lab).owner_of(&TopicPartition::new("orders", 3), ""),
        None,
        "free at once"
    );
    lab.tick(HEARTBEAT).expect("the next heartbeats");
    assert_eq!(assigned(&lab, "c1#1"), tps(&[0, 1, 3]));
    assert_eq!(assigned(&lab, "c3#1"), tps(&[2, 4, 5]));
}

/// A group real clients used and left keeps its (empty) record of them; the lab's own
/// consumers joining it afterwards still get their deferred assignment, and are the ones shown.
#[test]
fn a_group_real_clients_left_assigns_to_the_labs_own_consumers() {
    use offsetlab_engine::group::{ExternalConsumerMember, ExternalMember};
    let mut lab = lab();
    let real = ExternalConsumerMember {
        member: ExternalMember {
            id: "rdkafka-1".into(),
            partitions: tps(&[0, 1, 2, 3, 4, 5]).into_iter().collect(),
            topics: vec!["orders".into()],
            ..ExternalMember::default()
        },
        epoch: 2,
        target: tps(&[0, 1, 2, 3, 4, 5]).into_iter().collect(),
        ..ExternalConsumerMember::default()
    };
    lab.external_consumer_group("g", 2, 2, vec![real])
        .expect("real clients");
    lab.external_consumer_group("g", 3, 3, Vec::new())
        .expect("they left");
    join(&mut lab, "c1");
    join(&mut lab, "c2");
    lab.tick(1_000).expect("the assignment interval");
    assert_eq!(cg(&lab).state_name(), "Reconciling");
    assert_eq!(cg(&lab).target_of("c2#1").len(), 3);
    let view = lab.consumer_group_view("g").expect("view");
    let shown: Vec<&str> = view.members.iter().map(|m| m.member_id.as_str()).collect();
    assert_eq!(shown, ["c1#1", "c2#1"]);
}

/// A consumer group the coordinator's cleanup removed (no member, no committed offset — a
/// transactional sink commits nothing to Kafka) and a lab consumer brings back goes on from its
/// epochs: started again at epoch 2, every write to its transactional sink, which fences older
/// generations, would be refused for good.
#[test]
fn a_removed_consumer_group_brought_back_keeps_its_epochs_and_its_sink_takes_writes() {
    use offsetlab_engine::sink::SinkKind;
    let mut lab = lab();
    lab.add_consumer(ConsumerConfig {
        sink: SinkKind::Transactional,
        ..config("c1", GroupProtocol::Consumer)
    })
    .expect("join");
    for _ in 0..3 {
        lab.poll("c1").expect("poll");
        lab.process("c1", Some(1)).expect("process");
        lab.crash("c1").expect("crash");
        lab.tick(45_000).expect("session expires");
        lab.restart("c1").expect("restart");
    }
    let before = cg(&lab).group_epoch;
    assert!(before > 2, "epoch {before}");
    lab.close("c1").expect("close");
    lab.tick(600_000).expect("the cleanup runs");
    assert_eq!(lab.group("g").expect("kept for c1").state_name(), "Dead");
    lab.restart("c1").expect("restart");
    assert!(
        cg(&lab).group_epoch > before,
        "{} after {before}",
        cg(&lab).group_epoch
    );
    let rows = lab.group_view("g").expect("view").sink.rows;
    lab.poll("c1").expect("poll");
    lab.process("c1", Some(1)).expect("the sink takes the write");
    assert_eq!(lab.group_view("g").expect("view").sink.rows, rows + 1);
}
