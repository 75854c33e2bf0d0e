//! Share groups (KIP-932): every rule the lab models, each checked through the lab's own API —
//! acquisition, the delivery states, lock expiry, the delivery limit, implicit and explicit
//! acknowledgement, `share.auto.offset.reset`, the SPSO, and a consumer group on the same topic.

use offsetlab_engine::consumer::ConsumerConfig;
use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::share::{
    AcknowledgeType, AcknowledgementMode, AcquireMode, DeliveryState, ShareAutoOffsetReset,
    ShareConsumerConfig, ShareGroupConfigChange,
};
use offsetlab_engine::strategy::AutoOffsetReset;
use offsetlab_engine::Lab;

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

/// `count` records, each its own batch — as a shop sends orders, one request each. Kafka's
/// default acquire mode hands out whole batches; these rules are about records.
fn produce(lab: &mut Lab, count: u64) {
    for _ in 0..count {
        produce_batch(lab, 1);
    }
}

/// `count` records in one producer batch.
fn produce_batch(lab: &mut Lab, count: u64) {
    lab.produce(
        "orders",
        &ProduceSpec {
            count,
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
}

/// A lab with `orders` holding `records`, and share group `sg` reading from the earliest.
fn lab_with(records: u64) -> Lab {
    let mut lab = Lab::default();
    lab.create_topic("orders", TopicConfig::default()).expect("topic");
    produce(&mut lab, records);
    lab.alter_share_group(
        "sg",
        &ShareGroupConfigChange {
            auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
            ..Default::default()
        },
    )
    .expect("config");
    lab
}

fn join(lab: &mut Lab, name: &str, mode: AcknowledgementMode, max_poll: usize) {
    let mut c = ShareConsumerConfig::new(name, "sg", "orders");
    c.acknowledgement_mode = mode;
    c.max_poll_records = max_poll;
    lab.add_share_consumer(c).expect("join");
}

fn state(lab: &Lab, offset: i64) -> Option<DeliveryState> {
    lab.share_group("sg").expect("group").partitions[&tp()]
        .record(offset)
        .map(|r| r.state)
}

fn spso(lab: &Lab) -> i64 {
    lab.share_group("sg").expect("group").partitions[&tp()].start_offset
}

fn held(lab: &Lab, name: &str) -> Vec<i64> {
    lab.share_consumer(name)
        .expect("consumer")
        .held
        .iter()
        .map(|h| h.offset)
        .collect()
}

#[test]
fn two_members_share_one_partition_and_never_hold_the_same_record() {
    let mut lab = lab_with(6);
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 3);
    join(&mut lab, "s2", AcknowledgementMode::Explicit, 3);
    let g = lab.share_group("sg").expect("group");
    assert!(
        g.members.iter().all(|m| m.assignment.contains(&tp())),
        "both read orders-0"
    );
    assert_eq!(lab.share_poll("s1").expect("poll"), 3);
    assert_eq!(lab.share_poll("s2").expect("poll"), 3);
    assert_eq!(held(&lab, "s1"), vec![0, 1, 2]);
    assert_eq!(held(&lab, "s2"), vec![3, 4, 5]);
    assert_eq!(lab.share_poll("s1").expect("poll"), 0, "everything is acquired");
}

#[test]
fn latest_is_the_default_and_resolves_at_the_first_fetch() {
    let mut lab = Lab::default();
    lab.create_topic("orders", TopicConfig::default()).expect("topic");
    produce(&mut lab, 4);
    join(&mut lab, "s1", AcknowledgementMode::Implicit, 500);
    produce(&mut lab, 2);
    assert_eq!(
        lab.share_poll("s1").expect("poll"),
        0,
        "latest: the group starts at the log end"
    );
    assert_eq!(
        spso(&lab),
        6,
        "resolved at the first fetch, after the two records sent since the join"
    );
    produce(&mut lab, 1);
    assert_eq!(lab.share_poll("s1").expect("poll"), 1);
}

#[test]
fn earliest_starts_at_the_log_start_and_a_later_reset_moves_nothing() {
    let mut lab = lab_with(3);
    join(&mut lab, "s1", AcknowledgementMode::Implicit, 500);
    assert_eq!(lab.share_poll("s1").expect("poll"), 3);
    lab.alter_share_group(
        "sg",
        &ShareGroupConfigChange {
            auto_offset_reset: Some(ShareAutoOffsetReset::Latest),
            ..Default::default()
        },
    )
    .expect("config");
    assert_eq!(spso(&lab), 0, "an initialised SPSO moves only with the records");
}

#[test]
fn explicit_accept_release_reject_and_the_spso() {
    let mut lab = lab_with(4);
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 500);
    lab.share_poll("s1").expect("poll");
    let r = |o: i64| vec![(tp(), o)];
    lab.share_acknowledge("s1", Some(&r(1)), AcknowledgeType::Accept)
        .expect("accept");
    assert_eq!(
        (state(&lab, 1), spso(&lab)),
        (Some(DeliveryState::Acknowledged), 0)
    );
    lab.share_acknowledge("s1", Some(&r(0)), AcknowledgeType::Reject)
        .expect("reject");
    assert_eq!(
        spso(&lab),
        2,
        "0 archived and 1 acknowledged: both delivery-complete"
    );
    lab.share_acknowledge("s1", Some(&r(2)), AcknowledgeType::Release)
        .expect("release");
    assert_eq!(state(&lab, 2), Some(DeliveryState::Available));
    assert_eq!(held(&lab, "s1"), vec![3]);
    lab.share_poll("s1").expect("poll");
    let again = lab
        .share_consumer("s1")
        .expect("s1")
        .held
        .iter()
        .find(|h| h.offset == 2)
        .cloned();
    assert_eq!(
        again.map(|h| h.delivery_count),
        Some(2),
        "the released record comes back, second delivery"
    );
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!(
        (f.skipped, f.lost, f.archived),
        (1, 1, 1),
        "0 rejected on purpose; 1 accepted unprocessed"
    );
}

#[test]
fn an_acknowledgement_of_a_record_not_held_is_refused_and_changes_nothing() {
    let mut lab = lab_with(4);
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 2);
    join(&mut lab, "s2", AcknowledgementMode::Explicit, 2);
    lab.share_poll("s1").expect("poll");
    lab.share_poll("s2").expect("poll");
    let before = serde_json::to_string(&lab.snapshot_without_narrative()).expect("json");
    for offsets in [vec![(tp(), 2)], vec![(tp(), 0), (tp(), 9)]] {
        let e = lab
            .share_acknowledge("s1", Some(&offsets), AcknowledgeType::Accept)
            .expect_err("s1 does not hold it");
        assert_eq!(e.kafka_error(), Some("INVALID_RECORD_STATE"), "{e}");
    }
    let after = serde_json::to_string(&lab.snapshot_without_narrative()).expect("json");
    assert_eq!(before, after);
}

#[test]
fn implicit_mode_accepts_the_previous_poll_at_the_next() {
    let mut lab = lab_with(4);
    join(&mut lab, "s1", AcknowledgementMode::Implicit, 2);
    lab.share_poll("s1").expect("poll");
    lab.process("s1", None).expect("process");
    lab.share_poll("s1").expect("poll");
    assert_eq!(spso(&lab), 2, "offsets 0 and 1 accepted by the second poll");
    assert_eq!(held(&lab, "s1"), vec![2, 3]);
    let e = lab
        .share_acknowledge("s1", None, AcknowledgeType::Accept)
        .expect_err("implicit mode");
    assert!(e.to_string().contains("implicit"), "{e}");
    // Handed to a worker that never finished: the next poll accepts them anyway.
    lab.share_poll("s1").expect("poll");
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!((f.lost, f.deliveries, f.accepted), (2, 2, 4));
    lab.commit("s1").expect("commitSync");
}

/// A process killed (kill -9) takes its connection with it, and Kafka ends the share session
/// with the connection: the records it held are released at once, their delivery counted — what
/// Apache Kafka 4.4 does (`scripts/share_consumers.py` kills a member on both brokers). The
/// member itself stays until its session times out.
#[test]
fn a_killed_members_records_come_back_at_once_and_its_member_after_its_session() {
    let mut lab = lab_with(4);
    join(&mut lab, "s1", AcknowledgementMode::Implicit, 2);
    join(&mut lab, "s2", AcknowledgementMode::Implicit, 2);
    lab.share_poll("s1").expect("poll");
    lab.process("s1", None).expect("process");
    lab.crash("s1").expect("crash");
    assert_eq!(
        state(&lab, 0),
        Some(DeliveryState::Available),
        "released with the connection"
    );
    lab.share_poll("s2").expect("poll");
    assert_eq!(
        held(&lab, "s2"),
        vec![0, 1],
        "the released records first, their second delivery"
    );
    lab.process("s2", None).expect("process");
    lab.commit("s2").expect("commitSync accepts 0 and 1");
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!(
        (f.duplicates, f.lost, spso(&lab)),
        (2, 0, 2),
        "processed twice, lost none"
    );
    assert_eq!(
        lab.share_group("sg").expect("sg").members.len(),
        2,
        "the dead member waits for its session"
    );
    lab.tick(45_000).expect("tick");
    assert_eq!(
        lab.share_group("sg").expect("sg").members.len(),
        1,
        "45 s after the crash it is gone"
    );
}

/// A member that is alive but does not acknowledge — slow, stuck — keeps its records until
/// their acquisition locks expire, not a millisecond less; then any member may have them.
#[test]
fn a_slow_members_records_come_back_after_the_lock_not_before() {
    let mut lab = lab_with(4);
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 2);
    join(&mut lab, "s2", AcknowledgementMode::Implicit, 2);
    lab.share_poll("s1").expect("poll");
    lab.process("s1", None).expect("process");
    lab.share_poll("s2").expect("poll");
    assert_eq!(held(&lab, "s2"), vec![2, 3], "0 and 1 are still s1's");
    lab.commit("s2").expect("commitSync accepts 2 and 3");
    assert_eq!(spso(&lab), 0, "s1's records hold the SPSO");
    lab.tick(29_999).expect("tick");
    assert_eq!(state(&lab, 0), Some(DeliveryState::Acquired));
    lab.tick(1).expect("tick");
    assert_eq!(
        state(&lab, 0),
        Some(DeliveryState::Available),
        "30 s: the lock expired"
    );
    lab.share_poll("s2").expect("poll");
    assert_eq!(held(&lab, "s2"), vec![0, 1]);
    assert!(
        lab.share_acknowledge("s1", None, offsetlab_engine::share::AcknowledgeType::Accept)
            .is_err(),
        "s1's late acknowledgement is refused: the records are no longer its"
    );
}

#[test]
fn the_delivery_limit_archives_a_poison_record() {
    let mut lab = lab_with(1);
    lab.alter_share_group(
        "sg",
        &ShareGroupConfigChange {
            delivery_count_limit: Some(3),
            ..Default::default()
        },
    )
    .expect("config");
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 1);
    for attempt in 1..=3u16 {
        assert_eq!(lab.share_poll("s1").expect("poll"), 1, "attempt {attempt}");
        lab.share_acknowledge("s1", None, AcknowledgeType::Release)
            .expect("release");
    }
    assert_eq!(
        lab.share_poll("s1").expect("poll"),
        0,
        "archived after its third delivery"
    );
    assert_eq!(spso(&lab), 1);
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!((f.archived, f.lost, f.acquisitions), (1, 1, 3));
}

#[test]
fn a_lock_timeout_at_the_limit_archives_too() {
    let mut lab = lab_with(1);
    lab.alter_share_group(
        "sg",
        &ShareGroupConfigChange {
            delivery_count_limit: Some(2),
            record_lock_duration_ms: Some(15_000),
            ..Default::default()
        },
    )
    .expect("config");
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 1);
    lab.share_poll("s1").expect("poll");
    lab.tick(15_000).expect("tick");
    assert_eq!(state(&lab, 0), Some(DeliveryState::Available));
    lab.share_poll("s1").expect("poll");
    lab.tick(15_000).expect("tick");
    assert_eq!(spso(&lab), 1, "second delivery timed out: archived");
}

#[test]
fn config_bounds_are_kafkas_and_a_refusal_changes_nothing() {
    let mut lab = lab_with(1);
    for change in [
        ShareGroupConfigChange {
            delivery_count_limit: Some(11),
            ..Default::default()
        },
        ShareGroupConfigChange {
            record_lock_duration_ms: Some(1_000),
            ..Default::default()
        },
    ] {
        let e = lab.alter_share_group("sg", &change).expect_err("out of range");
        assert_eq!(e.kafka_error(), Some("INVALID_CONFIG"));
    }
    let g = lab.share_group("sg").expect("sg");
    assert_eq!(
        (g.config.delivery_count_limit, g.config.record_lock_duration_ms),
        (5, 30_000)
    );
}

#[test]
fn the_in_flight_limit_stops_acquisition_at_the_window() {
    let mut lab = lab_with(150);
    lab.alter_share_group(
        "sg",
        &ShareGroupConfigChange {
            partition_max_record_locks: Some(100),
            ..Default::default()
        },
    )
    .expect("config");
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 500);
    assert_eq!(lab.share_poll("s1").expect("poll"), 100);
    let all: Vec<(TopicPartition, i64)> = (1..100).map(|o| (tp(), o)).collect();
    lab.share_acknowledge("s1", Some(&all), AcknowledgeType::Accept)
        .expect("accept");
    assert_eq!(
        lab.share_poll("s1").expect("poll"),
        0,
        "offset 0 still holds the window open"
    );
    lab.share_acknowledge("s1", None, AcknowledgeType::Accept)
        .expect("accept 0");
    assert_eq!(lab.share_poll("s1").expect("poll"), 50);
}

#[test]
fn close_releases_what_the_member_holds_even_in_implicit_mode() {
    let mut lab = lab_with(2);
    join(&mut lab, "s1", AcknowledgementMode::Implicit, 500);
    lab.share_poll("s1").expect("poll");
    lab.process("s1", None).expect("process");
    lab.close("s1").expect("close");
    assert_eq!(
        state(&lab, 0),
        Some(DeliveryState::Available),
        "released, not accepted"
    );
    assert!(lab.share_group("sg").expect("sg").members.is_empty());
    lab.restart("s1").expect("restart");
    assert_eq!(lab.share_poll("s1").expect("poll"), 2);
}

#[test]
fn acknowledging_never_changes_the_log_and_a_consumer_group_reads_it_all() {
    let mut lab = lab_with(5);
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 500);
    lab.share_poll("s1").expect("poll");
    lab.share_acknowledge("s1", Some(&[(tp(), 0)]), AcknowledgeType::Reject)
        .expect("reject");
    lab.share_acknowledge("s1", None, AcknowledgeType::Accept)
        .expect("accept");
    let log = lab.partition_log(&tp()).expect("log");
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 5));
    let mut c = ConsumerConfig::new("c1", "audit", "orders");
    c.auto_offset_reset = AutoOffsetReset::Earliest;
    lab.add_consumer(c).expect("consumer");
    assert_eq!(
        lab.poll("c1").expect("poll"),
        5,
        "the consumer group reads every record from 0"
    );
}

#[test]
fn a_group_id_has_one_type() {
    let mut lab = lab_with(1);
    lab.add_consumer(ConsumerConfig::new("c1", "g", "orders"))
        .expect("consumer");
    let e = lab
        .add_share_consumer(ShareConsumerConfig::new("s1", "g", "orders"))
        .expect_err("g is a consumer group");
    assert_eq!(e.kafka_error(), Some("INCONSISTENT_GROUP_PROTOCOL"));
    join(&mut lab, "s1", AcknowledgementMode::Implicit, 1);
    let e = lab
        .add_consumer(ConsumerConfig::new("c2", "sg", "orders"))
        .expect_err("sg is a share group");
    assert_eq!(e.kafka_error(), Some("INCONSISTENT_GROUP_PROTOCOL"));
    assert!(lab.poll("s1").is_err(), "a share consumer polls with share-poll");
}

#[test]
fn the_log_start_moving_archives_what_was_never_delivered() {
    let mut lab = lab_with(6);
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 2);
    lab.share_poll("s1").expect("poll");
    lab.share_acknowledge("s1", None, AcknowledgeType::Release)
        .expect("release");
    lab.delete_records("orders", 0, 4).expect("delete");
    assert_eq!(spso(&lab), 4);
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!(
        f.lost, 2,
        "0 and 1 were released and deleted before anyone processed them"
    );
    assert_eq!(lab.share_poll("s1").expect("poll"), 2);
    assert_eq!(held(&lab, "s1"), vec![4, 5]);
}

#[test]
fn share_state_survives_a_snapshot() {
    let mut lab = lab_with(4);
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 2);
    lab.share_poll("s1").expect("poll");
    lab.process("s1", Some(1)).expect("process");
    let json = serde_json::to_string(&lab.snapshot()).expect("serialize");
    let back = serde_json::from_str(&json).expect("deserialize");
    let restored = Lab::restore(
        back,
        Box::new(offsetlab_engine::log::MemoryStore),
        Box::new(offsetlab_engine::sink::MemorySinks),
    )
    .expect("restore");
    assert_eq!(restored.share(), lab.share());
    assert_eq!(
        restored.share_group("sg").expect("sg").partitions[&tp()].next_lock_expiry(),
        Some(lab.now() + 30_000)
    );
}

/// Real clients' share consumers (the Kafka listener's `share-join`, `share-fetch`,
/// `share-acknowledge`, `share-release`, `share-leave`): the same rules, by member id.
#[test]
fn real_clients_acquire_acknowledge_and_leave_by_member_id() {
    let mut lab = lab_with(6);
    let orders = vec!["orders".to_string()];
    lab.share_client_join("sg", "AAAA", "billing-a", &orders)
        .expect("join a");
    lab.share_client_join("sg", "BBBB", "billing-b", &orders)
        .expect("join b");
    let g = lab.share_group("sg").expect("sg");
    assert!(
        g.members.iter().all(|m| m.client && m.assignment.contains(&tp())),
        "both share orders-0"
    );
    assert!(lab.share_acquirable("sg", &tp()), "the partition is not read yet");
    let a = lab.share_client_fetch("sg", "AAAA", &tp(), 3).expect("fetch a");
    assert_eq!(a.iter().map(|h| h.offset).collect::<Vec<_>>(), [0, 1, 2]);
    let b = lab.share_client_fetch("sg", "BBBB", &tp(), 10).expect("fetch b");
    assert_eq!(b.iter().map(|h| h.offset).collect::<Vec<_>>(), [3, 4, 5]);
    assert!(
        !lab.share_acquirable("sg", &tp()),
        "everything is acquired: a fetch would change nothing"
    );
    assert_eq!(lab.share_held_by("sg", "AAAA", &tp()), [(0, 1), (1, 1), (2, 1)]);

    // One of b's records in a's acknowledgement: INVALID_RECORD_STATE, and none of them applied.
    let before = lab.share_group("sg").expect("sg").clone();
    let refused = lab.share_client_acknowledge(
        "sg",
        "AAAA",
        &tp(),
        &[(0, AcknowledgeType::Accept), (3, AcknowledgeType::Accept)],
    );
    assert!(
        matches!(refused, Err(offsetlab_engine::LabError::InvalidRecordState(_))),
        "{refused:?}"
    );
    assert_eq!(lab.share_group("sg").expect("sg"), &before, "nothing changed");

    lab.share_client_acknowledge(
        "sg",
        "AAAA",
        &tp(),
        &[
            (0, AcknowledgeType::Accept),
            (1, AcknowledgeType::Release),
            (2, AcknowledgeType::Reject),
        ],
    )
    .expect("a acknowledges");
    assert_eq!(
        [state(&lab, 0), state(&lab, 1), state(&lab, 2)],
        [
            None,
            Some(DeliveryState::Available),
            Some(DeliveryState::Archived)
        ],
        "0 behind the SPSO, 1 available again, 2 archived"
    );
    // b's share session closes (its connection gone): what it held is released, it stays.
    lab.share_client_release("sg", "BBBB").expect("release");
    assert_eq!(state(&lab, 3), Some(DeliveryState::Available));
    assert_eq!(lab.share_group("sg").expect("sg").members.len(), 2);
    let again = lab
        .share_client_fetch("sg", "BBBB", &tp(), 2)
        .expect("fetch again");
    assert_eq!(
        again
            .iter()
            .map(|h| (h.offset, h.delivery_count))
            .collect::<Vec<_>>(),
        [(1, 2), (3, 2)],
        "released records first, their second delivery"
    );
    lab.share_client_leave("sg", "BBBB", "its heartbeat with member epoch -1")
        .expect("leave");
    assert_eq!(
        state(&lab, 1),
        Some(DeliveryState::Available),
        "a leaving member releases too"
    );
    let g = lab.share_group("sg").expect("sg");
    assert_eq!(g.members.len(), 1);
    assert!(g.members[0].assignment.contains(&tp()), "a keeps orders-0");
    // The log never changed.
    assert_eq!(lab.partition_log(&tp()).expect("log").record_count(), 6);
}

#[test]
fn a_real_clients_bad_calls_are_refused_and_change_nothing() {
    let mut lab = lab_with(2);
    let orders = vec!["orders".to_string()];
    lab.add_consumer(ConsumerConfig::new("c1", "g", "orders"))
        .expect("consumer");
    assert_eq!(
        lab.share_client_join("g", "AAAA", "c", &orders)
            .expect_err("g is a consumer group")
            .kafka_error(),
        Some("INCONSISTENT_GROUP_PROTOCOL")
    );
    lab.share_client_join("sg", "AAAA", "c", &orders).expect("join");
    let before = lab.share().clone();
    assert!(matches!(
        lab.share_client_fetch("sg", "AAAA", &TopicPartition::new("nope", 0), 5),
        Err(offsetlab_engine::LabError::UnknownTopic(_))
    ));
    assert!(matches!(
        lab.share_client_fetch("sg", "ZZZZ", &tp(), 5),
        Err(offsetlab_engine::LabError::UnknownMember { .. })
    ));
    assert!(matches!(
        lab.share_client_acknowledge("sg", "AAAA", &tp(), &[(0, AcknowledgeType::Accept)]),
        Err(offsetlab_engine::LabError::InvalidRecordState(_))
    ));
    assert!(lab.share_client_leave("sg", "ZZZZ", "gone").is_err());
    assert!(lab.share_client_join("sg", "", "c", &orders).is_err());
    assert!(lab.share_client_join("sg", "BBBB", "c", &[]).is_err());
    assert_eq!(lab.share(), &before, "nothing changed");
}

/// Kafka's default `share.acquire.mode` (`batch_optimized`, KIP-1206): a fetch acquires whole
/// producer batches — the batch its last record falls in to its end, past `max.poll.records`.
/// On Apache Kafka 4.4, eight records produced in one batch all went to the first share
/// consumer that fetched, `max.poll.records=3` notwithstanding (scripts/share_consumers.py plays
/// it on both brokers). `record_limit` keeps to the count and splits the batch.
#[test]
fn a_fetch_acquires_whole_producer_batches_unless_its_consumer_limits_records() {
    let mut lab = lab_with(0);
    produce_batch(&mut lab, 8);
    produce_batch(&mut lab, 4);
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 3);
    join(&mut lab, "s2", AcknowledgementMode::Explicit, 3);
    assert_eq!(lab.share_poll("s1").expect("poll"), 8, "the whole first batch");
    assert_eq!(held(&lab, "s1"), (0..8).collect::<Vec<_>>());
    assert_eq!(
        held_after_poll(&mut lab, "s2"),
        vec![8, 9, 10, 11],
        "three records reach into the second batch: it is taken to its end"
    );

    let mut lab = lab_with(0);
    produce_batch(&mut lab, 8);
    let mut strict = ShareConsumerConfig::new("r1", "sg", "orders");
    strict.acknowledgement_mode = AcknowledgementMode::Explicit;
    strict.max_poll_records = 3;
    strict.acquire_mode = AcquireMode::RecordLimit;
    lab.add_share_consumer(strict).expect("join");
    join(&mut lab, "s2", AcknowledgementMode::Explicit, 3);
    assert_eq!(
        held_after_poll(&mut lab, "r1"),
        vec![0, 1, 2],
        "record_limit splits the batch"
    );
    assert_eq!(
        held_after_poll(&mut lab, "s2"),
        vec![3, 4, 5, 6, 7],
        "the rest of the split batch, whole"
    );
    // Records released back into the window come back one by one, up to the count.
    lab.share_acknowledge("s2", None, AcknowledgeType::Release)
        .expect("release");
    lab.share_acknowledge("r1", None, AcknowledgeType::Accept)
        .expect("accept");
    assert_eq!(held_after_poll(&mut lab, "r1"), vec![3, 4, 5]);

    // A real client's ShareFetch (v0/v1 carry no mode): whole batches, as Kafka serves them.
    let mut lab = lab_with(0);
    produce_batch(&mut lab, 8);
    let orders = vec!["orders".to_string()];
    lab.share_client_join("sg", "AAAA", "billing-a", &orders)
        .expect("join");
    let a = lab.share_client_fetch("sg", "AAAA", &tp(), 3).expect("fetch");
    assert_eq!(a.len(), 8);
}

fn held_after_poll(lab: &mut Lab, name: &str) -> Vec<i64> {
    lab.share_poll(name).expect("poll");
    held(lab, name)
}

/// Kafka 4.2+ throttles records that keep coming back (KAFKA-17541): from ⌈limit / 2⌉
/// deliveries (at least 2) a record is handed out only at the head of a fetch, and nothing new
/// after it; on its last delivery it goes alone. On Apache Kafka 4.4 with a limit of 3, a record
/// released twice came back alone, and the new records behind it came in the next poll.
#[test]
fn a_record_that_keeps_coming_back_is_handed_out_alone() {
    let mut lab = lab_with(6);
    lab.alter_share_group(
        "sg",
        &ShareGroupConfigChange {
            delivery_count_limit: Some(3),
            ..Default::default()
        },
    )
    .expect("config");
    join(&mut lab, "s1", AcknowledgementMode::Explicit, 3);
    assert_eq!(held_after_poll(&mut lab, "s1"), vec![0, 1, 2]);
    let first = vec![(tp(), 0)];
    lab.share_acknowledge("s1", Some(&first), AcknowledgeType::Release)
        .expect("release 0");
    let rest = vec![(tp(), 1), (tp(), 2)];
    lab.share_acknowledge("s1", Some(&rest), AcknowledgeType::Accept)
        .expect("accept");
    // Its second delivery, below the threshold (2): with new records after it.
    assert_eq!(held_after_poll(&mut lab, "s1"), vec![0, 3, 4]);
    lab.share_acknowledge("s1", Some(&first), AcknowledgeType::Release)
        .expect("release 0 again");
    let two = vec![(tp(), 3), (tp(), 4)];
    lab.share_acknowledge("s1", Some(&two), AcknowledgeType::Accept)
        .expect("accept");
    // Its third and last: alone, and offset 5 waits for the next poll.
    assert_eq!(held_after_poll(&mut lab, "s1"), vec![0]);
    lab.share_acknowledge("s1", None, AcknowledgeType::Release)
        .expect("release 0 a last time");
    assert_eq!(state(&lab, 0), None, "archived: behind the SPSO");
    assert_eq!(held_after_poll(&mut lab, "s1"), vec![5]);
}

/// With Kafka's default limit of 5 (throttled from 3 deliveries), a record on its last delivery
/// is not handed out behind another even inside a throttled batch's room: the fetch stops
/// before it, and it goes alone in the next one (`acquireSubsetBatchRecords`).
#[test]
fn a_record_on_its_last_delivery_never_follows_another() {
    let mut lab = lab_with(0);
    produce_batch(&mut lab, 4);
    let strict = |lab: &mut Lab, name: &str, max: usize| {
        let mut c = ShareConsumerConfig::new(name, "sg", "orders");
        c.acknowledgement_mode = AcknowledgementMode::Explicit;
        c.max_poll_records = max;
        c.acquire_mode = AcquireMode::RecordLimit;
        lab.add_share_consumer(c).expect("join");
    };
    strict(&mut lab, "r", 1);
    strict(&mut lab, "q", 1);
    strict(&mut lab, "z", 2);
    assert_eq!(held_after_poll(&mut lab, "r"), vec![0]);
    assert_eq!(held_after_poll(&mut lab, "q"), vec![1]);
    assert_eq!(
        held_after_poll(&mut lab, "z"),
        vec![2, 3],
        "they stay held: the batch is 4"
    );
    let release = |lab: &mut Lab, name: &str| {
        lab.share_acknowledge(name, None, AcknowledgeType::Release)
            .expect("release");
    };
    // Offset 1 to four deliveries, offset 0 to three.
    for _ in 0..3 {
        release(&mut lab, "q");
        lab.share_poll("q").expect("poll");
    }
    release(&mut lab, "q");
    for _ in 0..2 {
        release(&mut lab, "r");
        lab.share_poll("r").expect("poll");
    }
    release(&mut lab, "r");
    let count = |lab: &Lab, o: i64| {
        lab.share_group("sg").expect("sg").partitions[&tp()]
            .record(o)
            .map(|r| r.delivery_count)
    };
    assert_eq!((count(&lab, 0), count(&lab, 1)), (Some(3), Some(4)));
    strict(&mut lab, "w", 3);
    assert_eq!(
        held_after_poll(&mut lab, "w"),
        vec![0],
        "offset 1's last delivery waits"
    );
    release(&mut lab, "w");
    assert_eq!(
        held_after_poll(&mut lab, "w"),
        vec![0],
        "both on their last delivery now: the first goes alone"
    );
}
