//! One test per semantic point of DESIGN.md that the engine covers, driven through the `Lab`
//! API exactly as a scenario would drive it.

use offsetlab_engine::clock::LAB_EPOCH_MS;
use offsetlab_engine::consumer::{ConsumerConfig, ConsumerState};
use offsetlab_engine::delivery::DeliveryReason;
use offsetlab_engine::lab::{ProduceSpec, ResetSpec, SeekTarget};
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::offsets::OffsetKey;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::sink::SinkKind;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy};
use offsetlab_engine::txn::IsolationLevel;
use offsetlab_engine::{Lab, LabError};

/// Creates `name` with `partitions` partitions.
fn topic(lab: &mut Lab, name: &str, partitions: i32) {
    lab.create_topic(
        name,
        TopicConfig {
            partitions,
            ..TopicConfig::default()
        },
    )
    .expect("topic");
}

/// Produces `count` new orders to partition `partition` of `topic`.
fn produce_to(lab: &mut Lab, topic: &str, partition: i32, count: u64) {
    lab.produce(
        topic,
        &ProduceSpec {
            count,
            partition: Some(partition),
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
}

/// Produces `count` new orders to `topic`, spread by key.
fn produce(lab: &mut Lab, topic: &str, count: u64) {
    lab.produce(
        topic,
        &ProduceSpec {
            count,
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
}

/// Produces `count` records with `key` to `topic`.
fn produce_keyed(lab: &mut Lab, topic: &str, count: u64, key: &str) {
    lab.produce(
        topic,
        &ProduceSpec {
            count,
            key: Some(key.into()),
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
}

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

fn lab_with_orders(n: u64) -> Lab {
    let mut lab = Lab::default();
    lab.create_topic("orders", TopicConfig::default()).expect("topic");
    lab.produce(
        "orders",
        &ProduceSpec {
            count: n,
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
    lab
}

fn consumer(
    name: &str,
    group: &str,
    strategy: CommitStrategy,
    sink: SinkKind,
    max_poll: usize,
) -> ConsumerConfig {
    ConsumerConfig {
        strategy,
        sink,
        max_poll_records: max_poll,
        auto_offset_reset: AutoOffsetReset::Earliest,
        ..ConsumerConfig::new(name, group, "orders")
    }
}

fn committed(lab: &Lab, group: &str) -> Option<i64> {
    lab.offsets()
        .fetch(&OffsetKey::new(group, &tp()))
        .map(|v| v.offset)
}

/// kill -9, wait for the session to time out, start a new process.
fn crash_and_restart(lab: &mut Lab, name: &str) {
    lab.crash(name).expect("crash");
    lab.tick(45_000).expect("session timeout");
    lab.restart(name).expect("restart");
}

fn figures(lab: &Lab, group: &str) -> offsetlab_engine::lab::GroupView {
    lab.group_view(group).expect("group view")
}

/// The three figures most tests check: records lost, duplicates, sink rows.
fn lost_duplicates_rows(lab: &Lab, group: &str) -> (u64, u64, u64) {
    let f = figures(lab, group);
    (f.audit.lost, f.audit.duplicates, f.sink.rows)
}

/// One poll, and every record it returned processed.
fn poll_and_process(lab: &mut Lab, name: &str) {
    lab.poll(name).expect("poll");
    lab.process(name, None).expect("process");
}

/// 1, 2: offsets are dense positions from 0; LEO is the next offset; reading deletes nothing.
#[test]
fn offsets_are_positions_and_reading_deletes_nothing() {
    let mut lab = lab_with_orders(12);
    let log = lab.partition_log(&tp()).expect("log");
    assert_eq!((log.log_start_offset(), log.log_end_offset()), (0, 12));
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        12,
    ))
    .expect("consumer");
    poll_and_process(&mut lab, "c1");
    let log = lab.partition_log(&tp()).expect("log");
    assert_eq!(
        (log.log_start_offset(), log.log_end_offset(), log.record_count()),
        (0, 12, 12)
    );
}

/// 3: the committed offset is the next record to read, stored as a record of the compacted
/// __consumer_offsets topic keyed by (group, topic, partition); lag = LEO − committed.
#[test]
fn a_commit_is_a_record_in_consumer_offsets_holding_the_next_offset() {
    let mut lab = lab_with_orders(12);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        4,
    ))
    .expect("consumer");
    let before = lab.offsets().log().log_end_offset();
    poll_and_process(&mut lab, "c1");
    assert_eq!(
        committed(&lab, "g"),
        Some(4),
        "last processed is 3, so the next to read is 4"
    );
    let records = lab.offsets().records(before, 10);
    assert_eq!(records.len(), 1);
    assert_eq!(records[0].key.display(), "('g', 'orders', 0)");
    assert_eq!(records[0].value.as_ref().map(|v| v.offset), Some(4));
    assert_eq!(figures(&lab, "g").lag.get("orders-0"), Some(&Some(8)));
}

/// 4: a crash loses the position, never the committed offset.
#[test]
fn a_crash_loses_the_position_not_the_committed_offset() {
    let mut lab = lab_with_orders(12);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        4,
    ))
    .expect("consumer");
    poll_and_process(&mut lab, "c1");
    lab.poll("c1").expect("poll");
    assert_eq!(lab.consumer("c1").expect("c1").assignment[&tp()].position, 8);
    lab.crash("c1").expect("crash");
    assert!(lab.consumer("c1").expect("c1").assignment.is_empty());
    assert_eq!(committed(&lab, "g"), Some(4));
    // A new process gets a new member id; the group waits for the dead one's session.
    lab.restart("c1").expect("restart");
    assert!(
        lab.consumer("c1").expect("c1").assignment.is_empty(),
        "waiting for c1#1's session to expire"
    );
    assert_eq!(lab.poll("c1").expect("poll"), 0);
    lab.tick(45_000).expect("tick");
    assert_eq!(lab.consumer("c1").expect("c1").assignment[&tp()].position, 4);
}

/// 5 (librdkafka): the timer commits offsets stored at hand-over, processed or not.
#[test]
fn the_timer_commits_what_poll_handed_over() {
    let mut lab = lab_with_orders(12);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::AutoTimer,
        SinkKind::Append,
        4,
    ))
    .expect("consumer");
    lab.poll("c1").expect("poll");
    lab.tick(4_999).expect("tick");
    assert_eq!(committed(&lab, "g"), None, "not before the interval");
    lab.tick(1).expect("tick");
    assert_eq!(
        committed(&lab, "g"),
        Some(4),
        "the timer committed 4 although nothing was processed"
    );
    crash_and_restart(&mut lab, "c1");
    poll_and_process(&mut lab, "c1");
    lab.tick(5_000).expect("tick");
    assert_eq!(figures(&lab, "g").audit.lost, 4);
}

/// 5 (Java): auto-commit happens inside poll, after the interval, and commits the position
/// reached by earlier polls.
#[test]
fn java_auto_commit_runs_inside_poll_and_commits_earlier_polls() {
    let mut lab = lab_with_orders(12);
    lab.add_consumer(consumer("c1", "g", CommitStrategy::AutoPoll, SinkKind::Append, 4))
        .expect("consumer");
    poll_and_process(&mut lab, "c1");
    lab.tick(60_000).expect("tick");
    assert_eq!(committed(&lab, "g"), None, "no background timer");
    lab.poll("c1").expect("poll");
    assert_eq!(
        committed(&lab, "g"),
        Some(4),
        "the poll committed what the previous poll returned"
    );
    lab.poll("c1").expect("poll"); // within the interval again: no commit
    assert_eq!(committed(&lab, "g"), Some(4));
}

/// 6: commit before processing is at-most-once; per-record commits shrink the replay window.
#[test]
fn commit_before_processing_skips_and_per_record_commits_shrink_the_window() {
    let mut lab = lab_with_orders(8);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::BeforeProcess,
        SinkKind::Append,
        4,
    ))
    .expect("consumer");
    lab.poll("c1").expect("poll");
    assert_eq!(committed(&lab, "g"), Some(4));
    lab.process("c1", Some(1)).expect("process");
    crash_and_restart(&mut lab, "c1");
    poll_and_process(&mut lab, "c1");
    let f = figures(&lab, "g");
    assert_eq!((f.audit.lost, f.audit.duplicates), (3, 0));

    let mut lab = lab_with_orders(8);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualRecord,
        SinkKind::Append,
        4,
    ))
    .expect("consumer");
    lab.poll("c1").expect("poll");
    lab.process("c1", Some(3)).expect("process");
    assert_eq!(committed(&lab, "g"), Some(3), "one commit per record");
}

/// 6: commitAsync lands later, and a crash before it lands forgets it.
#[test]
fn an_async_commit_in_flight_is_lost_in_a_crash() {
    let mut lab = lab_with_orders(8);
    let mut cfg = consumer("c1", "g", CommitStrategy::ManualAsync, SinkKind::Append, 4);
    cfg.async_commit_latency_ms = 100;
    lab.add_consumer(cfg).expect("consumer");
    poll_and_process(&mut lab, "c1");
    assert_eq!(committed(&lab, "g"), None, "sent, not landed");
    lab.crash("c1").expect("crash");
    lab.tick(45_000).expect("tick");
    assert_eq!(committed(&lab, "g"), None, "the crash forgot it");
    lab.restart("c1").expect("restart");
    poll_and_process(&mut lab, "c1");
    lab.tick(100).expect("tick");
    assert_eq!(committed(&lab, "g"), Some(4));
    let f = figures(&lab, "g");
    assert_eq!(
        (f.audit.duplicates, f.audit.crash_redeliveries, f.audit.lost),
        (4, 4, 0)
    );
}

/// 7: a crashed member stays in the group, its partition stalled, until the session times out;
/// a graceful close leaves at once; the survivor resumes from the committed offset.
#[test]
fn a_crashed_member_holds_its_partition_until_the_session_times_out() {
    let mut lab = Lab::default();
    topic(&mut lab, "orders", 2);
    produce(&mut lab, "orders", 20);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        100,
    ))
    .expect("c1");
    lab.add_consumer(consumer(
        "c2",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        100,
    ))
    .expect("c2");
    assert_eq!(
        lab.group("g").expect("g").generation,
        1,
        "the rebalance waits for c1 to rejoin"
    );
    assert_eq!(lab.poll("c2").expect("poll"), 0, "c2 waits");
    lab.poll("c1").expect("c1 rejoins inside poll");
    let g = lab.group("g").expect("g");
    assert_eq!(g.generation, 2);
    assert_eq!(g.owners.values().filter(|o| *o == "c2#1").count(), 1);
    lab.poll("c2").expect("poll");
    lab.process("c2", Some(3))
        .expect("three written, the batch's commit not made yet");
    lab.crash("c2").expect("crash");
    lab.tick(44_999).expect("tick");
    assert!(
        lab.group("g").expect("g").is_member("c2#1"),
        "still a member, partition stalled"
    );
    assert_eq!(lab.consumer("c1").expect("c1").assignment.len(), 1);
    lab.tick(1).expect("tick");
    let g = lab.group("g").expect("g");
    assert!(!g.is_member("c2#1"));
    assert_eq!(g.generation, 2, "c1 has not rejoined yet");
    lab.process("c1", None).expect("c1 finishes its batch first");
    lab.poll("c1").expect("c1 rejoins");
    assert_eq!(lab.group("g").expect("g").generation, 3);
    assert_eq!(
        lab.consumer("c1").expect("c1").assignment.len(),
        2,
        "the survivor took over"
    );
    lab.process("c1", None).expect("process");
    lab.close("c1").expect("close");
    assert_eq!(
        lab.group("g").expect("g").members.len(),
        0,
        "close leaves at once"
    );
    let f = figures(&lab, "g");
    assert_eq!(f.audit.lost, 0);
    assert_eq!(
        f.audit.crash_redeliveries, 3,
        "c2's uncommitted writes were redelivered after its crash"
    );
}

/// 7: the revoke hook runs inside the member's next poll, after its synchronous processing, so
/// Java auto-commit loses nothing to a rebalance (DESIGN 5); commits keep their order.
#[test]
fn a_rebalance_waits_for_the_next_poll_and_loses_nothing() {
    let mut lab = Lab::default();
    topic(&mut lab, "orders", 2);
    produce_to(&mut lab, "orders", 0, 8);
    lab.add_consumer(consumer("c1", "g", CommitStrategy::AutoPoll, SinkKind::Append, 4))
        .expect("c1");
    lab.poll("c1").expect("poll");
    lab.process("c1", Some(2)).expect("process");
    lab.add_consumer(consumer("c2", "g", CommitStrategy::AutoPoll, SinkKind::Append, 4))
        .expect("c2");
    assert_eq!(
        lab.consumer("c1").expect("c1").in_flight.len(),
        2,
        "c1 keeps working until it polls"
    );
    lab.process("c1", None).expect("process");
    lab.poll("c1")
        .expect("poll: revoke hook commits 4, rejoin, rebalance completes");
    assert_eq!(committed(&lab, "g"), Some(4));
    lab.process("c1", None).expect("process what that poll fetched");
    for c in ["c1", "c2"] {
        while lab.poll(c).expect("poll") > 0 {
            lab.process(c, None).expect("process");
        }
    }
    lab.tick(6_000).expect("tick");
    lab.poll("c1").expect("poll");
    lab.poll("c2").expect("poll");
    let f = figures(&lab, "g");
    assert_eq!((f.audit.lost, f.audit.duplicates), (0, 0));

    // An async commit sent before a sync commit lands before it: offsets never go backwards.
    let mut lab = lab_with_orders(8);
    let mut cfg = consumer("c1", "g", CommitStrategy::ManualAsync, SinkKind::Append, 4);
    cfg.async_commit_latency_ms = 5_000;
    lab.add_consumer(cfg).expect("c1");
    poll_and_process(&mut lab, "c1");
    lab.poll("c1").expect("poll");
    lab.process("c1", Some(2)).expect("process");
    lab.commit("c1").expect("sync commit of the position, 8");
    lab.tick(10_000).expect("tick");
    assert_eq!(committed(&lab, "g"), Some(8));
}

/// 8: auto.offset.reset decides where a group without a committed offset starts.
#[test]
fn auto_offset_reset_applies_without_a_committed_offset() {
    for (reset, expected) in [
        (AutoOffsetReset::Earliest, Some(0)),
        (AutoOffsetReset::Latest, Some(12)),
        (AutoOffsetReset::None, None),
    ] {
        let mut lab = lab_with_orders(12);
        let cfg = ConsumerConfig {
            auto_offset_reset: reset,
            ..consumer("c1", "g", CommitStrategy::ManualBatch, SinkKind::Append, 4)
        };
        lab.add_consumer(cfg).expect("consumer");
        let c = lab.consumer("c1").expect("c1");
        assert_eq!(c.assignment.get(&tp()).map(|f| f.position), expected, "{reset}");
        if expected.is_none() {
            // `none` throws from poll(), where the client resolves its positions (Java's
            // NoOffsetForPartitionException; librdkafka's ERR__AUTO_OFFSET_RESET event, as a
            // confluent-kafka consumer meets it on Apache Kafka 4.4): until then it is a member.
            assert!(c.is_running(), "{:?}", c.state);
            assert_eq!(lab.group("g").expect("g").state().name(), "Stable");
            assert_eq!(lab.poll("c1").expect("poll"), 0);
            let c = lab.consumer("c1").expect("c1");
            assert!(matches!(c.state, ConsumerState::Failed { .. }), "{:?}", c.state);
            // The application stops and its close() leaves the group.
            assert_eq!(lab.group("g").expect("g").state().name(), "Empty");
        }
    }
}

/// 10: seek moves only the position; a timestamp seek finds the first record at or after it.
#[test]
fn seek_moves_the_position_and_commits_nothing() {
    let mut lab = Lab::default();
    lab.create_topic("orders", TopicConfig::default()).expect("topic");
    for _ in 0..6 {
        produce(&mut lab, "orders", 2);
        lab.tick(3_600_000).expect("tick");
    }
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Upsert,
        100,
    ))
    .expect("consumer");
    poll_and_process(&mut lab, "c1");
    assert_eq!(committed(&lab, "g"), Some(12));
    lab.seek(
        "c1",
        SeekTarget::Timestamp(LAB_EPOCH_MS + 2 * 3_600_000 + 1),
        None,
    )
    .expect("seek");
    assert_eq!(
        lab.consumer("c1").expect("c1").assignment[&tp()].position,
        6,
        "first record of hour 3"
    );
    assert_eq!(committed(&lab, "g"), Some(12), "a seek commits nothing");
    poll_and_process(&mut lab, "c1");
    let f = figures(&lab, "g");
    assert_eq!(
        (f.audit.replays, f.audit.redeliveries, f.sink.duplicate_rows),
        (6, 0, 0)
    );
    let rows = lab.group("g").expect("g").sink.rows(0, 100).expect("rows");
    assert!(rows.iter().any(|r| r.reason == DeliveryReason::Replay));
}

/// 10: an offset reset is refused while the group has members, in Kafka's words, and a dry run
/// changes nothing; offsets are clamped to the retained range.
#[test]
fn reset_offsets_is_refused_for_an_active_group_and_dry_runs_change_nothing() {
    let mut lab = lab_with_orders(12);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        12,
    ))
    .expect("consumer");
    poll_and_process(&mut lab, "c1");
    let err = lab
        .reset_offsets("g", "orders", None, ResetSpec::ToEarliest, true)
        .expect_err("active");
    assert_eq!(
        err.to_string(),
        "Assignments can only be reset if the group 'g' is inactive, but the current state is Stable."
    );
    lab.crash("c1").expect("crash");
    assert!(
        lab.reset_offsets("g", "orders", None, ResetSpec::ToEarliest, true)
            .is_err(),
        "a crashed member still counts until its session expires"
    );
    lab.tick(45_000).expect("tick");
    let plan = lab
        .reset_offsets("g", "orders", None, ResetSpec::ToEarliest, false)
        .expect("dry run");
    assert_eq!(
        (plan.rows[0].replayed, plan.rows[0].predicted_duplicate_rows),
        (12, 12)
    );
    assert_eq!(committed(&lab, "g"), Some(12), "dry run");
    let plan = lab
        .reset_offsets("g", "orders", None, ResetSpec::ToOffset(99), true)
        .expect("execute");
    assert!(plan.rows[0].clamped);
    assert_eq!(committed(&lab, "g"), Some(12));
    assert!(matches!(
        lab.reset_offsets("g", "orders", None, ResetSpec::ShiftBy(-5), true),
        Ok(ref p) if p.rows[0].target == 7
    ));
    assert!(matches!(
        lab.reset_offsets("fresh", "orders", None, ResetSpec::ShiftBy(1), false),
        Err(LabError::NoCommittedOffset(_))
    ));
}

/// 11b: the transactional sink stores offsets with its rows; a restart seeks to them.
#[test]
fn a_transactional_sink_resumes_from_its_own_offsets() {
    let mut lab = lab_with_orders(8);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::BeforeProcess,
        SinkKind::Transactional,
        4,
    ))
    .expect("consumer");
    lab.poll("c1").expect("poll");
    lab.process("c1", Some(2)).expect("process");
    assert_eq!(committed(&lab, "g"), None, "nothing goes to __consumer_offsets");
    crash_and_restart(&mut lab, "c1");
    assert_eq!(lab.consumer("c1").expect("c1").assignment[&tp()].position, 2);
    poll_and_process(&mut lab, "c1");
    poll_and_process(&mut lab, "c1");
    assert_eq!(lost_duplicates_rows(&lab, "g"), (0, 0, 8));
    let f = figures(&lab, "g");
    assert_eq!(f.offsets_source, "sink");
    assert_eq!(f.committed.get("orders-0"), Some(&Some(8)));
}

/// 12: every group has its own offsets.
#[test]
fn groups_keep_independent_offsets() {
    let mut lab = lab_with_orders(12);
    lab.add_consumer(consumer(
        "a",
        "billing",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        4,
    ))
    .expect("a");
    lab.add_consumer(consumer(
        "b",
        "search",
        CommitStrategy::ManualBatch,
        SinkKind::Upsert,
        12,
    ))
    .expect("b");
    poll_and_process(&mut lab, "a");
    poll_and_process(&mut lab, "b");
    assert_eq!(
        (committed(&lab, "billing"), committed(&lab, "search")),
        (Some(4), Some(12))
    );
}

/// Produce without a key creates new orders; with a key, more events of that order.
#[test]
fn produce_without_a_key_creates_orders_and_with_a_key_adds_events() {
    let mut lab = lab_with_orders(3);
    produce_keyed(&mut lab, "orders", 2, "o-2");
    produce(&mut lab, "orders", 1);
    let mut keys = Vec::new();
    let mut values = Vec::new();
    lab.partition_log(&tp()).expect("log").read(0, 10, &mut |r| {
        keys.push(String::from_utf8_lossy(r.key.unwrap_or_default()).into_owned());
        values.push(String::from_utf8_lossy(r.value.unwrap_or_default()).into_owned());
    });
    assert_eq!(keys, ["o-1", "o-2", "o-3", "o-2", "o-2", "o-4"]);
    assert!(values[3].contains("\"status\":\"paid\"") && values[4].contains("\"status\":\"shipped\""));
}

/// Keyed records land where Kafka's default partitioner puts them.
#[test]
fn keys_are_partitioned_by_murmur2() {
    let mut lab = Lab::default();
    topic(&mut lab, "orders", 3);
    let written = lab
        .produce(
            "orders",
            &ProduceSpec {
                count: 30,
                ..ProduceSpec::default()
            },
        )
        .expect("produce");
    assert_eq!(written.len(), 3, "30 keys spread over all 3 partitions");
    let again = lab
        .produce(
            "orders",
            &ProduceSpec {
                count: 1,
                key: Some("o-1".into()),
                ..ProduceSpec::default()
            },
        )
        .expect("produce");
    let p = *again.keys().next().expect("one partition");
    assert_eq!(
        p,
        offsetlab_engine::log::partitioner::partition_for_key(b"o-1", 3)
    );
}

/// Bad input is rejected with a clear error and changes nothing.
#[test]
fn rejected_operations_change_nothing() {
    let mut lab = lab_with_orders(4);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        4,
    ))
    .expect("consumer");
    let before = lab.view().expect("view");
    let events = lab.narrative().len();
    let errors = [
        lab.poll("nobody").expect_err("unknown"),
        lab.process("c1", None).expect_err("nothing polled"),
        lab.produce(
            "nope",
            &ProduceSpec {
                count: 1,
                ..ProduceSpec::default()
            },
        )
        .expect_err("unknown topic"),
        lab.produce(
            "orders",
            &ProduceSpec {
                count: 0,
                ..ProduceSpec::default()
            },
        )
        .expect_err("zero"),
        lab.produce(
            "orders",
            &ProduceSpec {
                count: 1,
                partition: Some(3),
                ..ProduceSpec::default()
            },
        )
        .expect_err("partition"),
        lab.add_consumer(consumer(
            "c1",
            "g",
            CommitStrategy::ManualBatch,
            SinkKind::Append,
            4,
        ))
        .expect_err("exists"),
        lab.add_consumer(consumer(
            "c2",
            "g",
            CommitStrategy::ManualBatch,
            SinkKind::Upsert,
            4,
        ))
        .expect_err("sink mismatch"),
        lab.restart("c1").expect_err("running"),
        lab.seek("c1", SeekTarget::Earliest, Some(7))
            .expect_err("not assigned"),
        lab.tick(-1).expect_err("negative"),
        lab.create_topic("__consumer_offsets", TopicConfig::default())
            .expect_err("reserved"),
        lab.reset_offsets("g", "orders", None, ResetSpec::ToEarliest, true)
            .expect_err("active"),
    ];
    for e in &errors {
        assert!(!e.to_string().is_empty());
    }
    assert_eq!(lab.narrative().len(), events, "no event was emitted");
    let after = lab.view().expect("view");
    assert_eq!(
        serde_json::to_string(&before).ok(),
        serde_json::to_string(&after).ok()
    );
}

/// The coordinator's view is rebuilt from __consumer_offsets, compacted or not.
#[test]
fn the_coordinator_view_survives_a_replay_of_compacted_consumer_offsets() {
    let mut lab = lab_with_orders(400);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualRecord,
        SinkKind::Upsert,
        500,
    ))
    .expect("consumer");
    poll_and_process(&mut lab, "c1");
    assert_eq!(committed(&lab, "g"), Some(400));
    let removed = lab.compact_offsets_topic();
    assert!(removed > 300, "{removed}");
    lab.restart_coordinator();
    assert_eq!(committed(&lab, "g"), Some(400));
}

/// 8, 9: retention deletes whole closed segments by age; a consumer whose committed offset fell
/// below the log start meets "offset out of range" and auto.offset.reset decides.
#[test]
fn retention_deletes_segments_and_out_of_range_falls_to_auto_offset_reset() {
    let mut lab = Lab::default();
    let cfg = TopicConfig {
        retention_ms: Some(3_600_000),
        segment_records: Some(4),
        ..TopicConfig::default()
    };
    lab.create_topic("orders", cfg).expect("topic");
    produce(&mut lab, "orders", 8);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        2,
    ))
    .expect("c1");
    poll_and_process(&mut lab, "c1");
    lab.close("c1").expect("close");
    assert_eq!(committed(&lab, "g"), Some(2));
    lab.tick(2 * 3_600_000).expect("two hours");
    produce(&mut lab, "orders", 1);
    lab.tick(1).expect("tick");
    let log = lab.partition_log(&tp()).expect("log");
    assert_eq!(
        log.log_start_offset(),
        8,
        "both closed segments were older than retention.ms"
    );
    assert_eq!(log.segments().len(), 1, "the active segment stays");
    lab.restart("c1").expect("restart");
    lab.poll("c1").expect("poll: 2 is out of range, earliest → 8");
    assert_eq!(lab.consumer("c1").expect("c1").assignment[&tp()].position, 9);
    lab.process("c1", None).expect("process");
    let f = figures(&lab, "g");
    assert_eq!(f.audit.lost, 6, "2..7 were deleted before the group read them");
}

/// A skip on purpose stays a skip, unless the group later fetches those records and commits
/// over them unprocessed: then they are lost like any other.
#[test]
fn records_skipped_then_committed_over_unprocessed_are_lost() {
    let mut lab = lab_with_orders(8);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::AutoTimer,
        SinkKind::Append,
        4,
    ))
    .expect("c1");
    poll_and_process(&mut lab, "c1");
    lab.seek("c1", SeekTarget::Offset(6), None)
        .expect("skip 4 and 5 on purpose");
    assert_eq!(figures(&lab, "g").audit.skipped, 2);
    lab.seek("c1", SeekTarget::Offset(4), None)
        .expect("then go back for them");
    lab.poll("c1").expect("4..7 handed over");
    lab.tick(5_000)
        .expect("the timer commits 8 over unprocessed 4..7");
    lab.crash("c1").expect("crash");
    let f = figures(&lab, "g");
    assert_eq!(
        (f.audit.lost, f.audit.skipped),
        (4, 0),
        "4..7 are lost, 4 and 5 included"
    );

    // Seek forward and commit: a deliberate skip, not a loss.
    let mut lab = lab_with_orders(8);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        4,
    ))
    .expect("c1");
    lab.seek("c1", SeekTarget::Offset(6), None).expect("skip 0..5");
    poll_and_process(&mut lab, "c1");
    let f = figures(&lab, "g");
    assert_eq!((f.audit.lost, f.audit.skipped), (0, 6));
}

/// Static membership (group.instance.id): a restart within the session timeout takes the
/// partitions back without a rebalance; a close sends no LeaveGroup.
#[test]
fn a_static_member_restarts_without_a_rebalance() {
    let mut lab = lab_with_orders(8);
    let cfg = ConsumerConfig {
        group_instance_id: Some("shipping-1".into()),
        ..consumer("c1", "g", CommitStrategy::ManualBatch, SinkKind::Append, 4)
    };
    lab.add_consumer(cfg).expect("c1");
    poll_and_process(&mut lab, "c1");
    let generation = lab.group("g").expect("g").generation;
    lab.crash("c1").expect("crash");
    lab.tick(10_000).expect("well within the session timeout");
    lab.restart("c1").expect("restart");
    let g = lab.group("g").expect("g");
    assert_eq!(g.generation, generation, "no rebalance");
    assert!(g.rebalance.is_none());
    assert!(g.is_member("c1#2"));
    assert_eq!(
        lab.consumer("c1").expect("c1").assignment[&tp()].position,
        4,
        "back at once"
    );
    lab.close("c1").expect("close");
    assert!(
        lab.group("g").expect("g").is_member("c1#2"),
        "a static member's close sends no LeaveGroup"
    );
    lab.tick(45_000).expect("session timeout");
    assert!(lab.group("g").expect("g").members.is_empty());
}

/// Without a commit in the revoke hook, a rebalance replays what was processed since the last
/// commit; with it (the default), nothing.
#[test]
fn the_revoke_hook_commit_decides_what_a_rebalance_replays() {
    for (hook, replays) in [(true, 0), (false, 2)] {
        let mut lab = Lab::default();
        topic(&mut lab, "orders", 2);
        produce_to(&mut lab, "orders", 0, 8);
        let cfg = ConsumerConfig {
            commit_on_revoke: hook,
            ..consumer("c1", "g", CommitStrategy::ManualBatch, SinkKind::Append, 4)
        };
        lab.add_consumer(cfg).expect("c1");
        lab.poll("c1").expect("poll 0..3");
        lab.process("c1", Some(2))
            .expect("two processed, batch not committed");
        lab.add_consumer(consumer(
            "c2",
            "g",
            CommitStrategy::ManualBatch,
            SinkKind::Append,
            4,
        ))
        .expect("c2");
        lab.poll("c1").expect("c1 rejoins: revoke hook");
        poll_and_process(&mut lab, "c1");
        let f = figures(&lab, "g");
        assert_eq!(
            (f.audit.redeliveries, f.audit.lost),
            (replays, 0),
            "commit-on-revoke={hook}"
        );
    }
}

/// 9 (KIP-211): an empty group's committed offsets expire after offsets.retention.minutes;
/// its next start falls to auto.offset.reset.
#[test]
fn an_empty_groups_offsets_expire() {
    let mut lab = lab_with_orders(8);
    lab.set_offsets_retention(3_600_000).expect("1h");
    let cfg = ConsumerConfig {
        auto_offset_reset: AutoOffsetReset::Latest,
        max_poll_interval_ms: 10 * 3_600_000,
        ..consumer("c1", "g", CommitStrategy::ManualBatch, SinkKind::Append, 4)
    };
    lab.reset_offsets("g", "orders", None, ResetSpec::ToEarliest, true)
        .expect("bookmark 0");
    lab.add_consumer(cfg).expect("c1");
    poll_and_process(&mut lab, "c1");
    lab.tick(2 * 3_600_000).expect("a member keeps the offsets alive");
    assert_eq!(committed(&lab, "g"), Some(4));
    lab.close("c1").expect("the group is empty now");
    lab.tick(3_599_999).expect("tick");
    assert_eq!(committed(&lab, "g"), Some(4));
    lab.tick(1).expect("tick");
    assert_eq!(
        committed(&lab, "g"),
        None,
        "expired: a tombstone in __consumer_offsets"
    );
    lab.restart("c1").expect("restart");
    assert_eq!(
        lab.consumer("c1").expect("c1").assignment[&tp()].position,
        8,
        "auto.offset.reset=latest"
    );
    assert_eq!(
        figures(&lab, "g").audit.lost,
        0,
        "nothing passed without a committed offset… yet"
    );
}

/// Cooperative-sticky: a member keeps the partitions it does not have to give up, and keeps
/// working on them; only the partitions that move stop and resume from the committed offset.
#[test]
fn a_cooperative_rebalance_moves_only_what_it_must() {
    use offsetlab_engine::consumer::Assignor;
    let mut lab = Lab::default();
    topic(&mut lab, "orders", 4);
    for p in 0..4 {
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
    let coop = |name: &str| ConsumerConfig {
        assignor: Assignor::CooperativeSticky,
        max_poll_records: 16,
        ..consumer(name, "g", CommitStrategy::ManualBatch, SinkKind::Append, 16)
    };
    lab.add_consumer(coop("c1")).expect("c1");
    lab.poll("c1").expect("16 records in flight over 4 partitions");
    lab.process("c1", Some(6))
        .expect("six processed, the batch not committed");
    lab.add_consumer(coop("c2")).expect("c2");
    lab.poll("c1").expect("c1 rejoins and keeps working");
    let c1 = lab.consumer("c1").expect("c1");
    assert_eq!(c1.assignment.len(), 2, "c1 keeps two partitions");
    assert!(
        c1.assignment.values().any(|f| f.position == 4),
        "a kept partition keeps its position"
    );
    assert!(!c1.in_flight.is_empty(), "and its in-flight records");
    assert_eq!(lab.consumer("c2").expect("c2").assignment.len(), 2);
    while !lab.consumer("c1").expect("c1").in_flight.is_empty() {
        lab.process("c1", None).expect("process");
    }
    for c in ["c1", "c2"] {
        while lab.poll(c).expect("poll") > 0 {
            lab.process(c, None).expect("process");
        }
    }
    let f = figures(&lab, "g");
    assert_eq!((f.audit.lost, f.sink.rows), (0, 16 + f.audit.duplicates));
}

// ---- Kafka transactions (DESIGN.md 11c) ----

fn out_tp() -> TopicPartition {
    TopicPartition::new("orders-out", 0)
}

/// A lab with `n` orders, an output topic, the copier (read-process-write with Kafka
/// transactions) and two readers of its output, one per isolation level.
fn transactional_lab(n: u64) -> Lab {
    transactional_lab_with_timeout(n, offsetlab_engine::txn::DEFAULT_TRANSACTION_TIMEOUT_MS)
}

fn transactional_lab_with_timeout(n: u64, transaction_timeout_ms: i64) -> Lab {
    let mut lab = lab_with_orders(n);
    lab.create_topic("orders-out", TopicConfig::default())
        .expect("output topic");
    lab.add_consumer(ConsumerConfig {
        output: Some("orders-out".into()),
        transaction_timeout_ms,
        ..consumer(
            "copier",
            "copy",
            CommitStrategy::ManualBatch,
            SinkKind::KafkaTx,
            3,
        )
    })
    .expect("copier");
    for (name, isolation) in [
        ("strict", IsolationLevel::ReadCommitted),
        ("loose", IsolationLevel::ReadUncommitted),
    ] {
        lab.add_consumer(ConsumerConfig {
            isolation,
            topic: "orders-out".into(),
            ..consumer(name, name, CommitStrategy::ManualBatch, SinkKind::Append, 100)
        })
        .expect("reader");
    }
    lab
}

fn read_all(lab: &mut Lab, name: &str) -> usize {
    let n = lab.poll(name).expect("poll");
    if n > 0 {
        lab.process(name, None).expect("process");
    }
    n
}

#[test]
fn read_committed_stops_at_the_last_stable_offset_and_skips_markers() {
    let mut lab = transactional_lab(6);
    poll_and_process(&mut lab, "copier");
    // Committed: output 0..2, COMMIT marker at 3.
    let log = lab.partition_log(&out_tp()).expect("log");
    assert_eq!(log.log_end_offset(), 4);
    let mut control = Vec::new();
    log.read(0, 10, &mut |r| control.push(r.control));
    assert_eq!(control, [false, false, false, true]);
    lab.poll("copier").expect("poll");
    lab.process("copier", Some(2)).expect("process");
    assert_eq!(lab.last_stable_offset(&out_tp()).expect("lso"), 4);
    assert_eq!(read_all(&mut lab, "strict"), 3, "read_committed: up to the LSO");
    assert_eq!(
        read_all(&mut lab, "loose"),
        5,
        "read_uncommitted: the open transaction too"
    );
    let strict = lab.consumer("strict").expect("strict");
    assert_eq!(
        strict.assignment.get(&out_tp()).map(|f| f.position),
        Some(4),
        "the position steps over the COMMIT marker and waits at the LSO"
    );
    assert_eq!(
        read_all(&mut lab, "strict"),
        0,
        "nothing past the LSO while it is open"
    );
    assert_eq!(
        figures(&lab, "strict").audit.lost,
        0,
        "a marker is not a lost record"
    );
}

#[test]
fn a_crash_mid_transaction_is_aborted_by_the_next_incarnation() {
    let mut lab = transactional_lab(6);
    poll_and_process(&mut lab, "copier");
    lab.poll("copier").expect("poll");
    lab.process("copier", Some(2)).expect("process");
    read_all(&mut lab, "loose");
    lab.crash("copier").expect("crash");
    assert_eq!(
        lab.last_stable_offset(&out_tp()).expect("lso"),
        4,
        "a crash alone ends nothing: the transaction hangs"
    );
    lab.restart("copier").expect("restart");
    // initTransactions() with the same transactional.id aborted it: ABORT at 6.
    assert_eq!(lab.last_stable_offset(&out_tp()).expect("lso"), 7);
    let txns = lab.partition_txns(&out_tp()).expect("txns");
    assert!(txns.is_aborted(4) && txns.is_aborted(5));
    assert_eq!(txns.markers().len(), 2);
    let p = &lab.producers()["copier"];
    assert_eq!((p.epoch, p.committed, p.aborted), (2, 1, 1));
    lab.tick(45_000).expect("session timeout");
    poll_and_process(&mut lab, "copier");
    read_all(&mut lab, "strict");
    read_all(&mut lab, "loose");
    assert_eq!(lost_duplicates_rows(&lab, "copy"), (0, 0, 6));
    let strict = figures(&lab, "strict");
    assert_eq!(
        (
            strict.sink.rows,
            strict.sink.distinct_keys,
            strict.audit.aborted_read
        ),
        (6, 6, 0)
    );
    let loose = figures(&lab, "loose");
    assert_eq!(
        (
            loose.sink.rows,
            loose.sink.distinct_keys,
            loose.audit.aborted_read
        ),
        (8, 6, 2)
    );
    assert_eq!((strict.audit.lost, loose.audit.lost), (0, 0));
}

#[test]
fn the_coordinator_aborts_a_transaction_after_its_timeout_and_fences_the_producer() {
    let mut lab = transactional_lab(6);
    lab.poll("copier").expect("poll");
    lab.process("copier", Some(1)).expect("process");
    // Plain records produced after the open transaction are held back as well.
    lab.produce(
        "orders-out",
        &ProduceSpec {
            count: 2,
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
    assert_eq!(
        read_all(&mut lab, "strict"),
        0,
        "a hanging transaction blocks read_committed"
    );
    lab.tick(60_000).expect("transaction timeout");
    assert_eq!(lab.last_stable_offset(&out_tp()).expect("lso"), 4);
    assert_eq!(
        read_all(&mut lab, "strict"),
        2,
        "the aborted record is dropped, the rest flows"
    );
    assert_eq!(lab.producers()["copier"].epoch, 1);
    // The copier's next send fails (InvalidProducerEpochException); since KIP-588 it recovers:
    // it aborts and processes the input again from its committed offset (none: the beginning).
    lab.process("copier", Some(1)).expect("process");
    let copier = lab.consumer("copier").expect("copier");
    assert!(copier.is_running());
    assert_eq!(copier.in_flight.len(), 0);
    assert_eq!(copier.assignment.get(&tp()).map(|f| f.position), Some(0));
    assert_eq!(committed(&lab, "copy"), None, "nothing was committed");
    for _ in 0..2 {
        poll_and_process(&mut lab, "copier");
    }
    assert_eq!(lost_duplicates_rows(&lab, "copy"), (0, 0, 6));
}

#[test]
fn read_committed_latest_is_the_last_stable_offset() {
    let mut lab = transactional_lab(6);
    lab.poll("copier").expect("poll");
    lab.process("copier", Some(1)).expect("process");
    lab.add_consumer(ConsumerConfig {
        isolation: IsolationLevel::ReadCommitted,
        auto_offset_reset: AutoOffsetReset::Latest,
        topic: "orders-out".into(),
        ..consumer("late", "late", CommitStrategy::ManualBatch, SinkKind::Append, 100)
    })
    .expect("late reader");
    assert_eq!(
        lab.consumer("late")
            .expect("late")
            .assignment
            .get(&out_tp())
            .map(|f| f.position),
        Some(0),
        "it does not start in the middle of the open transaction"
    );
    lab.process("copier", None).expect("the batch commits");
    assert_eq!(read_all(&mut lab, "late"), 3, "the whole transaction, atomically");
}

#[test]
fn compaction_never_lets_aborted_or_open_records_win() {
    let mut lab = Lab::default();
    lab.create_topic("orders", TopicConfig::default()).expect("topic");
    lab.create_topic(
        "latest",
        TopicConfig {
            cleanup_policy: offsetlab_engine::log::CleanupPolicy::Compact,
            segment_records: Some(2),
            ..TopicConfig::default()
        },
    )
    .expect("compacted output");
    let produce_key = |lab: &mut Lab, key: &str| {
        lab.produce(
            "orders",
            &ProduceSpec {
                count: 1,
                key: Some(key.into()),
                ..ProduceSpec::default()
            },
        )
        .expect("produce");
    };
    for key in ["k1", "k1", "k1", "k2"] {
        produce_key(&mut lab, key);
    }
    lab.add_consumer(ConsumerConfig {
        output: Some("latest".into()),
        ..consumer(
            "copier",
            "copy",
            CommitStrategy::ManualBatch,
            SinkKind::KafkaTx,
            2,
        )
    })
    .expect("copier");
    poll_and_process(&mut lab, "copier");
    lab.poll("copier").expect("poll");
    lab.process("copier", Some(1))
        .expect("k1@3 in an open transaction");
    // Open: nothing at or past the LSO (3) is cleaned, and k1@3 is not k1's latest value yet.
    produce_keyed(&mut lab, "latest", 3, "filler"); // rolls a segment
    lab.compact_topic("latest").expect("compact");
    let offsets = |lab: &Lab| {
        let log = lab.partition_log(&TopicPartition::new("latest", 0)).expect("log");
        let mut kept = Vec::new();
        log.read(0, 100, &mut |r| kept.push(r.offset));
        kept
    };
    assert_eq!(
        offsets(&lab),
        [1, 2, 3, 4, 5, 6],
        "k1@0 superseded by the committed k1@1 only"
    );
    lab.abort_transaction("copier").expect("abort: ABORT@7");
    produce_keyed(&mut lab, "latest", 2, "filler"); // rolls a segment
    lab.compact_topic("latest").expect("compact");
    let kept = offsets(&lab);
    assert!(
        kept.contains(&1),
        "the committed k1 survives the aborted one: {kept:?}"
    );
    assert!(!kept.contains(&3), "the aborted record is cleaned away: {kept:?}");
}

#[test]
fn an_aborted_transaction_is_processed_again_and_a_zombie_cannot_commit() {
    // A transaction timeout longer than max.poll.interval.ms (Kafka allows up to 15 min), so
    // the group coordinator, not the transaction coordinator, catches the zombie.
    let mut lab = transactional_lab_with_timeout(6, 600_000);
    lab.poll("copier").expect("poll");
    lab.process("copier", Some(2)).expect("process");
    lab.abort_transaction("copier").expect("abort");
    assert_eq!(
        lab.consumer("copier")
            .expect("copier")
            .assignment
            .get(&tp())
            .map(|f| f.position),
        Some(0),
        "back to the beginning: nothing was committed yet"
    );
    assert_eq!(
        lab.abort_transaction("copier"),
        Err(LabError::NoOpenTransaction("copier".into()))
    );
    for _ in 0..2 {
        poll_and_process(&mut lab, "copier");
    }
    assert_eq!(committed(&lab, "copy"), Some(6));
    // A zombie: it stops polling for max.poll.interval.ms mid-transaction.
    produce(&mut lab, "orders", 3);
    lab.poll("copier").expect("poll");
    lab.process("copier", Some(2)).expect("process");
    lab.tick(300_000).expect("max.poll.interval");
    lab.process("copier", None)
        .expect("the zombie finishes its batch");
    assert_eq!(
        committed(&lab, "copy"),
        Some(6),
        "its sendOffsetsToTransaction was rejected"
    );
    assert_eq!(lost_duplicates_rows(&lab, "copy"), (0, 0, 6));
    assert_eq!(lab.producers()["copier"].aborted, 2);
    lab.poll("copier").expect("rejoins");
    poll_and_process(&mut lab, "copier");
    assert_eq!(lost_duplicates_rows(&lab, "copy"), (0, 0, 9));
}

#[test]
fn transactional_settings_are_checked_and_change_nothing() {
    let mut lab = lab_with_orders(3);
    lab.create_topic("orders-out", TopicConfig::default())
        .expect("topic");
    let tx = |strategy, output: Option<&str>| ConsumerConfig {
        output: output.map(str::to_string),
        ..consumer("copier", "copy", strategy, SinkKind::KafkaTx, 3)
    };
    for bad in [
        tx(CommitStrategy::ManualBatch, None),
        tx(CommitStrategy::AutoTimer, Some("orders-out")),
        tx(CommitStrategy::ManualBatch, Some("orders")),
        tx(CommitStrategy::ManualBatch, Some("missing")),
        ConsumerConfig {
            output: Some("orders-out".into()),
            ..consumer("c1", "g", CommitStrategy::ManualBatch, SinkKind::Append, 3)
        },
    ] {
        assert!(lab.add_consumer(bad).is_err());
    }
    assert!(lab.consumers().is_empty() && lab.groups().is_empty() && lab.producers().is_empty());
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        3,
    ))
    .expect("consumer");
    assert!(matches!(
        lab.abort_transaction("c1"),
        Err(LabError::InvalidArgument(_))
    ));
}

/// Compaction keeps a tombstone for delete.retention.ms so late readers learn of the delete,
/// then removes it.
#[test]
fn tombstones_outlive_compaction_for_delete_retention() {
    let mut lab = Lab::default();
    lab.create_topic(
        "users",
        TopicConfig {
            cleanup_policy: offsetlab_engine::log::CleanupPolicy::Compact,
            segment_records: Some(2),
            delete_retention_ms: 3_600_000,
            ..TopicConfig::default()
        },
    )
    .expect("topic");
    let put = |lab: &mut Lab, key: &str, value: Option<&str>| {
        lab.produce(
            "users",
            &ProduceSpec {
                count: 1,
                key: Some(key.into()),
                value: value.map(str::to_string),
                ..ProduceSpec::default()
            },
        )
        .expect("produce");
    };
    put(&mut lab, "u-1", Some("a"));
    put(&mut lab, "u-1", Some("b"));
    put(&mut lab, "u-2", Some("c"));
    lab.produce(
        "users",
        &ProduceSpec {
            count: 1,
            key: Some("u-2".into()),
            tombstone: true,
            ..ProduceSpec::default()
        },
    )
    .expect("tombstone");
    put(&mut lab, "u-3", Some("d"));
    put(&mut lab, "u-3", Some("e"));
    let users = TopicPartition::new("users", 0);
    let keys = |lab: &Lab| {
        let mut v = Vec::new();
        lab.partition_log(&users)
            .expect("log")
            .read(0, 100, &mut |r| v.push((r.offset, r.value.is_none())));
        v
    };
    assert_eq!(
        lab.compact_topic("users").expect("compact"),
        2,
        "u-1@0 and u-2@2 superseded"
    );
    assert_eq!(keys(&lab), [(1, false), (3, true), (4, false), (5, false)]);
    lab.tick(3_600_000).expect("tick");
    assert_eq!(
        lab.compact_topic("users").expect("compact"),
        1,
        "the tombstone goes, and u-3@4"
    );
    assert_eq!(keys(&lab), [(1, false), (4, false), (5, false)]);
}

/// A Kafka client's records (the listener's Produce) land as they came: their own keys and
/// values, nulls included, at the log end of the partition they chose; a consumer in the lab
/// reads them like any other record. Writes to an internal topic or a missing partition are
/// refused and change nothing.
#[test]
fn records_a_client_sends_are_appended_verbatim() {
    use offsetlab_engine::lab::SentRecord;
    let mut lab = lab_with_orders(3);
    let sent = [
        SentRecord {
            key: Some("k-1".into()),
            value: Some("hello world".into()),
            ..SentRecord::default()
        },
        SentRecord {
            key: None,
            value: Some("no key".into()),
            ..SentRecord::default()
        },
        SentRecord {
            key: Some("k-1".into()),
            value: None,
            ..SentRecord::default()
        },
    ];
    assert_eq!(lab.send("orders", 0, &sent, "rdkafka").expect("send"), (3, 5));
    let mut seen = Vec::new();
    lab.partition_log(&tp()).expect("log").read(3, 10, &mut |r| {
        seen.push((r.offset, r.key.map(<[u8]>::to_vec), r.value.map(<[u8]>::to_vec)));
    });
    assert_eq!(
        seen,
        vec![
            (3, Some(b"k-1".to_vec()), Some(b"hello world".to_vec())),
            (4, None, Some(b"no key".to_vec())),
            (5, Some(b"k-1".to_vec()), None),
        ]
    );
    let last = lab.narrative().events().last().expect("event").text.clone();
    assert!(
        last.contains("client rdkafka produced 3 record(s) to orders-0 @3..5"),
        "{last}"
    );

    let before = lab.narrative().len();
    assert!(lab.send("__consumer_offsets", 0, &sent, "x").is_err());
    assert!(lab.send("orders", 1, &sent, "x").is_err());
    assert!(lab.send("nope", 0, &sent, "x").is_err());
    assert!(lab.send("orders", 0, &[], "x").is_err());
    assert_eq!(lab.partition_log(&tp()).expect("log").log_end_offset(), 6);
    assert_eq!(lab.narrative().len(), before);

    // A consumer in the lab reads them too.
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        100,
    ))
    .expect("consumer");
    poll_and_process(&mut lab, "c1");
    lab.commit("c1").expect("commit");
    assert_eq!(committed(&lab, "g"), Some(6));
}

/// A group of real clients, as the Kafka listener reports it: a rebalance gives it members and a
/// generation; a member's commit lands in `__consumer_offsets` and shows as the group's committed
/// offset and lag; an unknown member or an old generation is refused (the zombie is fenced),
/// the lab's own consumers cannot join it, and an offset reset waits until it is Empty.
#[test]
fn a_group_of_real_clients_commits_through_its_membership() {
    use offsetlab_engine::group::ExternalMember;
    let mut lab = lab_with_orders(12);
    let member = |id: &str, partitions: Vec<TopicPartition>| ExternalMember {
        id: id.into(),
        client_id: "rdkafka".into(),
        host: "/127.0.0.1".into(),
        partitions,
        ..ExternalMember::default()
    };
    lab.external_rebalance("copy", 1, "range", vec![member("rdkafka-1", vec![tp()])])
        .expect("rebalance");
    assert_eq!(lab.group("copy").expect("group").state().to_string(), "Stable");
    lab.external_commit(
        "copy",
        "rdkafka-1",
        1,
        &[(tp(), 8)],
        &Default::default(),
        &Default::default(),
    )
    .expect("commit");
    let view = figures(&lab, "copy");
    assert_eq!(
        (view.generation, view.members.clone()),
        (1, vec!["rdkafka-1".to_string()])
    );
    assert_eq!(view.committed.get("orders-0"), Some(&Some(8)));
    assert_eq!(view.lag.get("orders-0"), Some(&Some(4)));

    // A second member joins: generation 2; the first member's generation-1 commit is fenced.
    lab.external_rebalance(
        "copy",
        2,
        "range",
        vec![member("rdkafka-1", vec![tp()]), member("rdkafka-2", vec![])],
    )
    .expect("rebalance");
    let err = lab
        .external_commit(
            "copy",
            "rdkafka-1",
            1,
            &[(tp(), 12)],
            &Default::default(),
            &Default::default(),
        )
        .expect_err("stale");
    assert!(
        matches!(
            err,
            LabError::IllegalGeneration {
                generation: 1,
                current: 2,
                ..
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("ILLEGAL_GENERATION"), "{err}");
    let err = lab
        .external_commit(
            "copy",
            "ghost",
            2,
            &[(tp(), 12)],
            &Default::default(),
            &Default::default(),
        )
        .expect_err("unknown");
    assert!(matches!(err, LabError::UnknownMember { .. }), "{err}");
    assert!(err.to_string().contains("UNKNOWN_MEMBER_ID"), "{err}");
    assert!(
        lab.external_rebalance("copy", 2, "range", vec![]).is_err(),
        "generations move forward"
    );
    assert_eq!(committed(&lab, "copy"), Some(8));

    // Busy with real clients: no lab consumer, no reset.
    assert!(lab
        .add_consumer(consumer(
            "c9",
            "copy",
            CommitStrategy::ManualBatch,
            SinkKind::Append,
            10
        ))
        .is_err());
    assert!(lab
        .reset_offsets("copy", "orders", None, ResetSpec::ToEarliest, true)
        .is_err());
    // Everyone left: Empty, and a reset may run.
    lab.external_rebalance("copy", 3, "range", vec![]).expect("empty");
    assert_eq!(lab.group("copy").expect("group").state().to_string(), "Empty");
    lab.reset_offsets("copy", "orders", None, ResetSpec::ToEarliest, true)
        .expect("reset");
    assert_eq!(committed(&lab, "copy"), Some(0));
    // A group of the lab's own consumers does not take real clients.
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        10,
    ))
    .expect("consumer");
    assert!(lab.external_rebalance("g", 5, "range", vec![]).is_err());
}

/// A real client's transactions share the lab's transaction coordinator: writes are in the log at
/// once but behind the last stable offset; an abort leaves them skipped by read_committed; a
/// commit makes them visible and commits the offsets it carried; a fenced epoch is refused.
#[test]
fn a_real_clients_transaction_commits_or_aborts_with_its_offsets() {
    use offsetlab_engine::lab::SentRecord;
    let mut lab = lab_with_orders(4);
    lab.create_topic("out", TopicConfig::default()).expect("topic");
    let out = TopicPartition::new("out", 0);
    let rec = |k: &str| SentRecord {
        key: Some(k.into()),
        value: Some("v".into()),
        ..SentRecord::default()
    };
    let (pid, epoch) = lab.external_init_transactions("copy-loop", 60_000).expect("init");
    assert_eq!(epoch, 0);
    lab.external_txn_send("copy-loop", pid, epoch, &out, &[rec("a"), rec("b")])
        .expect("send");
    assert_eq!(
        lab.last_stable_offset(&out).expect("lso"),
        0,
        "the open transaction holds readers back"
    );
    lab.external_end_transaction("copy-loop", pid, epoch, false)
        .expect("abort");
    assert_eq!(
        lab.last_stable_offset(&out).expect("lso"),
        3,
        "two records and an ABORT marker"
    );

    // The next instance: a new epoch fences the old one.
    let (pid2, epoch2) = lab.external_init_transactions("copy-loop", 60_000).expect("init");
    assert_eq!((pid2, epoch2), (pid, 1));
    let err = lab
        .external_txn_send("copy-loop", pid, 0, &out, &[rec("zombie")])
        .expect_err("fenced");
    assert!(err.to_string().contains("PRODUCER_FENCED"), "{err}");
    lab.external_txn_send("copy-loop", pid, 1, &out, &[rec("c")])
        .expect("send");
    let metadata = [(tp(), "batch 4".to_string())].into_iter().collect();
    let leader_epochs = [(tp(), 0)].into_iter().collect();
    lab.external_txn_offsets(
        "copy-loop",
        pid,
        1,
        "copy",
        &[(tp(), 4)],
        &metadata,
        &leader_epochs,
    )
    .expect("offsets");
    assert_eq!(committed(&lab, "copy"), None, "offsets wait for the commit");
    lab.external_end_transaction("copy-loop", pid, 1, true)
        .expect("commit");
    assert_eq!(committed(&lab, "copy"), Some(4));
    // Committed with what the TxnOffsetCommit sent along, as an OffsetCommit's offsets are.
    let (_, kept) = lab.offsets().group_offsets("copy").next().expect("the commit");
    assert_eq!((kept.leader_epoch, kept.metadata.as_str()), (0, "batch 4"));
    assert_eq!(lab.last_stable_offset(&out).expect("lso"), 5);
    let txns = lab.partition_txns(&out).expect("txns");
    assert!(txns.is_aborted(0) && txns.is_aborted(1) && !txns.is_aborted(3));
    // A name of the lab's own consumers is not a real client's transactional.id.
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        10,
    ))
    .expect("consumer");
    assert!(lab.external_init_transactions("c1", 60_000).is_err());
}

/// Deletions follow the coordinator's rules: a group with members is not deleted, an active
/// member's topic keeps its offsets, and what is deleted becomes tombstones in
/// `__consumer_offsets`. A deleted topic takes its logs and every group's offsets for it.
#[test]
fn deletions_follow_the_coordinators_rules() {
    use offsetlab_engine::group::ExternalMember;
    let mut lab = lab_with_orders(12);
    lab.create_topic("scratch", TopicConfig::default())
        .expect("topic");
    let scratch = TopicPartition::new("scratch".to_string(), 0);
    let member = |partitions: Vec<TopicPartition>| ExternalMember {
        id: "rdkafka-1".into(),
        client_id: "rdkafka".into(),
        host: "/127.0.0.1".into(),
        partitions,
        ..ExternalMember::default()
    };
    lab.external_rebalance("copy", 1, "range", vec![member(vec![tp()])])
        .expect("rebalance");
    lab.external_commit(
        "copy",
        "rdkafka-1",
        1,
        &[(tp(), 8), (scratch.clone(), 0)],
        &Default::default(),
        &Default::default(),
    )
    .expect("commit");

    // Active: the group stays, and so do its offsets for the topic it reads.
    let err = lab.delete_group("copy").expect_err("not empty");
    assert!(matches!(err, LabError::GroupNotEmpty { .. }), "{err}");
    let err = lab.delete_offsets("copy", &[tp()]).expect_err("subscribed");
    assert!(matches!(err, LabError::GroupSubscribedToTopic { .. }), "{err}");
    assert_eq!(committed(&lab, "copy"), Some(8));
    // A topic it does not read: its offset goes, as a tombstone.
    let end = lab.offsets().log().log_end_offset();
    assert_eq!(
        lab.delete_offsets("copy", std::slice::from_ref(&scratch))
            .expect("deleted"),
        1
    );
    assert_eq!(lab.offsets().log().log_end_offset(), end + 1, "one tombstone");
    assert!(lab.offsets().fetch(&OffsetKey::new("copy", &scratch)).is_none());

    // Empty: the group and its offsets go; a second delete finds nothing.
    lab.external_rebalance("copy", 2, "range", vec![]).expect("empty");
    assert_eq!(lab.delete_group("copy").expect("deleted"), 1);
    assert!(lab.group("copy").is_err(), "gone");
    assert_eq!(committed(&lab, "copy"), None);
    assert!(matches!(lab.delete_group("copy"), Err(LabError::UnknownGroup(_))));

    // A group of the lab's own consumers, all gone: deleted, it keeps its generation count
    // (a transactional sink fences older generations) and its next member starts from
    // auto.offset.reset.
    lab.add_consumer(consumer(
        "c0",
        "lab-group",
        CommitStrategy::ManualBatch,
        SinkKind::Transactional,
        4,
    ))
    .expect("consumer");
    poll_and_process(&mut lab, "c0");
    lab.commit("c0").expect("commit");
    lab.crash("c0").expect("crash");
    lab.tick(45_000).expect("session timeout");
    let generation = lab.group("lab-group").expect("group").generation;
    assert!(lab.offsets().fetch(&OffsetKey::new("lab-group", &tp())).is_some());
    lab.delete_group("lab-group").expect("deleted");
    assert_eq!(
        lab.group("lab-group").expect("kept for its consumer").generation,
        generation
    );
    assert!(lab.offsets().fetch(&OffsetKey::new("lab-group", &tp())).is_none());
    lab.restart("c0").expect("restart");
    lab.poll("c0").expect("poll");
    assert!(lab.group("lab-group").expect("group").generation > generation);
    lab.process("c0", None)
        .expect("the transactional sink takes the new generation's writes");

    // A leader with stale metadata assigns a partition the lab does not have: left out, and
    // the rebalance (and its generation's commits) still lands.
    lab.external_rebalance(
        "stale",
        1,
        "range",
        vec![member(vec![tp(), TopicPartition::new("gone".to_string(), 0)])],
    )
    .expect("rebalance");
    lab.external_commit(
        "stale",
        "rdkafka-1",
        1,
        &[(tp(), 3)],
        &Default::default(),
        &Default::default(),
    )
    .expect("commit");

    // Topics: a lab consumer's topic stays; another goes with the offsets groups had for it.
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        10,
    ))
    .expect("consumer");
    assert!(lab.delete_topic("orders").is_err(), "the lab's consumer reads it");
    assert!(lab.delete_topic("__consumer_offsets").is_err());
    lab.external_rebalance("other", 1, "range", vec![member(vec![scratch.clone()])])
        .expect("rebalance");
    lab.external_commit(
        "other",
        "rdkafka-1",
        1,
        &[(scratch.clone(), 0)],
        &Default::default(),
        &Default::default(),
    )
    .expect("commit");
    lab.delete_topic("scratch").expect("deleted");
    assert!(lab.topic("scratch").is_err());
    assert!(lab.offsets().fetch(&OffsetKey::new("other", &scratch)).is_none());
    assert!(lab.view().is_ok(), "the figures survive the topic's deletion");
    // Re-created, it starts empty.
    lab.create_topic("scratch", TopicConfig::default())
        .expect("topic");
    assert_eq!(lab.partition_log(&scratch).expect("log").log_end_offset(), 0);
}

/// CreatePartitions: the topic grows, never shrinks; the group reading it rebalances at its next
/// poll and the new partitions are handed out; keyed records now hash over the new count.
#[test]
fn added_partitions_are_handed_out_after_a_rebalance_and_keys_hash_over_them() {
    let mut lab = lab_with_orders(4);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        10,
    ))
    .expect("consumer");
    poll_and_process(&mut lab, "c1");
    assert_eq!(lab.consumer("c1").expect("c1").assignment.len(), 1);
    lab.add_partitions("orders", 3).expect("grow to 3");
    assert!(lab.add_partitions("orders", 2).is_err(), "a topic never shrinks");
    assert!(lab.add_partitions("orders", 3).is_err(), "already 3");
    assert_eq!(
        lab.group("g").expect("g").state().to_string(),
        "PreparingRebalance"
    );
    lab.poll("c1").expect("rejoins");
    let c1 = lab.consumer("c1").expect("c1");
    assert_eq!(c1.assignment.len(), 3, "the new partitions are c1's");
    // Keys spread over all three partitions now.
    produce(&mut lab, "orders", 30);
    let ends: Vec<i64> = (0..3)
        .map(|p| {
            lab.partition_log(&TopicPartition::new("orders", p))
                .expect("log")
                .log_end_offset()
        })
        .collect();
    assert!(
        ends[1] > 0 && ends[2] > 0,
        "records reach the new partitions: {ends:?}"
    );
    assert_eq!(ends.iter().sum::<i64>(), 34);
}

/// A zombie's commitSync is sent even when the offsets equal what the new owner committed, and
/// the coordinator rejects it — as a real `commitSync()` is called and fails with
/// CommitFailedException — instead of being skipped as if nothing happened.
#[test]
fn a_zombie_commit_of_the_same_offset_is_sent_and_rejected() {
    let mut lab = lab_with_orders(8);
    let slow = |name: &str| ConsumerConfig {
        max_poll_interval_ms: 30_000,
        ..consumer(name, "g", CommitStrategy::ManualBatch, SinkKind::Append, 4)
    };
    lab.add_consumer(slow("z1")).expect("z1");
    lab.poll("z1").expect("z1 takes orders-0 and polls 0..3");
    lab.add_consumer(slow("z2")).expect("z2");
    lab.poll("z2").expect("z2 joins");
    lab.tick(31_000)
        .expect("z1 stalls past max.poll.interval.ms and is removed");
    poll_and_process(&mut lab, "z2");
    assert_eq!(committed(&lab, "g"), Some(4), "z2 took over and committed 4");
    let before = lab.narrative().len();
    lab.process("z1", None).expect("the zombie finishes its batch");
    let said: Vec<String> = lab.narrative().events()[before..]
        .iter()
        .map(|e| e.text.clone())
        .collect();
    assert!(
        said.iter()
            .any(|t| t.contains("commit from z1") && t.contains("rejected")),
        "{said:#?}"
    );
    assert_eq!(committed(&lab, "g"), Some(4));
    // Its rows repeat z2's because the partition moved in a rebalance: nothing restarted.
    let rows = lab.group("g").expect("g").sink.rows(0, 100).expect("rows");
    let zombie: Vec<_> = rows
        .iter()
        .filter(|r| r.consumer == "z1")
        .map(|r| (r.offset, r.reason))
        .collect();
    assert_eq!(
        zombie,
        (0..4)
            .map(|o| (o, DeliveryReason::RebalanceRedelivery))
            .collect::<Vec<_>>(),
        "{said:#?}"
    );
    assert!(
        said.iter().any(|t| t.contains("AGAIN: rebalance redelivery")),
        "{said:#?}"
    );
}

/// IncrementalAlterConfigs on a live topic: a shorter retention.ms applies from the next
/// retention check — closed segments older than it go, the active one stays; segment settings
/// are refused and nothing changes.
#[test]
fn a_shorter_retention_on_a_live_topic_deletes_at_the_next_check() {
    let mut lab = Lab::default();
    let config = TopicConfig {
        segment_records: Some(4),
        ..TopicConfig::default()
    };
    lab.create_topic("orders", config.clone()).expect("topic");
    produce(&mut lab, "orders", 12);
    lab.tick(2 * 3_600_000)
        .expect("two hours: a week's retention deletes nothing");
    let start = |lab: &Lab| lab.partition_log(&tp()).expect("log").log_start_offset();
    assert_eq!(start(&lab), 0);
    let hour = TopicConfig {
        retention_ms: Some(3_600_000),
        ..config.clone()
    };
    let bigger_segments = TopicConfig {
        segment_records: Some(100),
        ..hour.clone()
    };
    assert!(lab.alter_topic_config("orders", bigger_segments).is_err());
    assert_eq!(
        lab.topic("orders").expect("orders").config,
        config,
        "a refusal changes nothing"
    );
    lab.alter_topic_config("orders", hour).expect("retention.ms=1h");
    lab.tick(1_000).expect("the next check");
    assert_eq!(
        start(&lab),
        8,
        "the two closed segments are older than an hour; the active one stays"
    );
}

/// A real client's binary records reach the lab's own application byte for byte: two keys that
/// are not UTF-8 (the same replacement character if read as text) stay two order ids in the
/// upsert sink, and the rows hold the bytes sent.
#[test]
fn binary_keys_stay_distinct_in_the_sink() {
    use offsetlab_engine::lab::SentRecord;
    let mut lab = Lab::default();
    lab.create_topic("orders", TopicConfig::default()).expect("topic");
    let rec = |k: &[u8], v: &[u8]| SentRecord {
        key: Some(k.into()),
        value: Some(v.into()),
        ..SentRecord::default()
    };
    let framed: &[u8] = &[0, 0, 0, 0, 42, 0x02, 0xc8];
    lab.send(
        "orders",
        0,
        &[rec(&[0xff], framed), rec(&[0xfe], framed), rec(&[0xff], b"again")],
        "avro",
    )
    .expect("send");
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Upsert,
        10,
    ))
    .expect("consumer");
    lab.poll("c1").expect("poll");
    lab.process("c1", None).expect("process");
    let sink = &lab.group("g").expect("g").sink;
    let stats = sink.stats().expect("stats");
    assert_eq!((stats.rows, stats.distinct_keys), (2, 2));
    let rows = sink.rows(0, 10).expect("rows");
    let held: Vec<(&[u8], &[u8])> = rows
        .iter()
        .map(|r| (r.key.as_bytes(), r.value.as_bytes()))
        .collect();
    assert_eq!(held, [(&[0xff][..], &b"again"[..]), (&[0xfe][..], framed)]);
}

/// Offsets committed from outside the group are stored as given (kafkajs's `resetOffsets`
/// commits −2): the group is listed Empty with them before any member joins; a consumer takes
/// −2 for no committed offset and auto.offset.reset decides; an offset past the log end is met
/// by OFFSET_OUT_OF_RANGE at the next fetch. The group's first lab consumer brings its own sink.
#[test]
fn offsets_altered_from_outside_are_stored_as_given() {
    let mut lab = lab_with_orders(6);
    let none = std::collections::BTreeMap::new();
    lab.alter_offsets("tools", &[(tp(), -2)], &none, &Default::default())
        .expect("stored as given");
    assert_eq!(committed(&lab, "tools"), Some(-2));
    let view = lab.group_view("tools").expect("an offsets-only group is a group");
    assert_eq!(view.state, "Empty");
    assert!(lab.group("tools").expect("tools").offsets_only());
    let p = &view.partitions[0];
    assert_eq!((p.kafka_committed, p.committed, p.lag), (Some(-2), None, None));
    lab.add_consumer(consumer(
        "t1",
        "tools",
        CommitStrategy::ManualBatch,
        SinkKind::Upsert,
        10,
    ))
    .expect("the stand-in group takes the consumer's sink");
    assert_eq!(
        lab.poll("t1").expect("poll"),
        6,
        "−2 is no position: earliest → 0"
    );
    assert!(
        lab.narrative()
            .events()
            .iter()
            .any(|e| e.text.contains("committed offset -2") && e.text.contains("no position")),
        "the narrative says why"
    );
    lab.process("t1", None).expect("process");
    assert_eq!(committed(&lab, "tools"), Some(6));
    lab.close("t1").expect("close");
    lab.alter_offsets("tools", &[(tp(), 100)], &none, &Default::default())
        .expect("past the log end, as given");
    assert_eq!(committed(&lab, "tools"), Some(100));
    lab.restart("t1").expect("restart");
    lab.poll("t1").expect("poll");
    assert!(
        lab.narrative()
            .events()
            .iter()
            .any(|e| e.text.contains("out of range")),
        "the fetch meets OFFSET_OUT_OF_RANGE"
    );
    // While the group has a member, nobody outside it may move its offsets.
    let err = lab
        .alter_offsets("tools", &[(tp(), 0)], &none, &Default::default())
        .expect_err("refused");
    assert!(
        matches!(err, offsetlab_engine::LabError::GroupActive { .. }),
        "{err}"
    );
}

/// The audit (DESIGN.md): a rewind stops counting what it sends the group back over as lost —
/// the group will read it again — but the loss stays in view, as "lost before the rewind", with
/// how much of it was replayed since. By a seek and by an offset reset alike.
#[test]
fn a_rewind_keeps_the_loss_it_takes_back_in_view() {
    let lose_three = || {
        let mut lab = lab_with_orders(12);
        lab.add_consumer(consumer(
            "c1",
            "g",
            CommitStrategy::AutoTimer,
            SinkKind::Append,
            4,
        ))
        .expect("consumer");
        lab.poll("c1").expect("poll");
        lab.process("c1", Some(1)).expect("process one");
        lab.tick(5_000).expect("the timer commits 4 with 1..3 in flight");
        crash_and_restart(&mut lab, "c1");
        poll_and_process(&mut lab, "c1");
        let a = figures(&lab, "g").audit;
        assert_eq!((a.lost, a.lost_before_rewind), (3, 0));
        lab
    };
    // A seek back: nothing is lost while the consumer is about to read 1..3 again, and the three
    // stay in view; once read, they were replayed.
    let mut lab = lose_three();
    lab.seek("c1", SeekTarget::Earliest, None).expect("seek");
    let a = figures(&lab, "g").audit;
    assert_eq!((a.lost, a.lost_before_rewind, a.replayed_since_rewind), (0, 3, 0));
    for _ in 0..3 {
        poll_and_process(&mut lab, "c1");
    }
    let a = figures(&lab, "g").audit;
    assert_eq!((a.lost, a.lost_before_rewind, a.replayed_since_rewind), (0, 3, 3));
    // An offset reset of the stopped group does the same.
    let mut lab = lose_three();
    lab.close("c1").expect("close");
    lab.reset_offsets("g", "orders", None, ResetSpec::ToEarliest, true)
        .expect("reset");
    let a = figures(&lab, "g").audit;
    assert_eq!((a.lost, a.lost_before_rewind, a.replayed_since_rewind), (0, 3, 0));
    // A dry run takes nothing back.
    let mut dry = lose_three();
    dry.close("c1").expect("close");
    dry.reset_offsets("g", "orders", None, ResetSpec::ToEarliest, false)
        .expect("dry run");
    assert_eq!(figures(&dry, "g").audit.lost_before_rewind, 0);
}

/// 9 (KIP-211), as Apache Kafka 4.4 expires offsets (scenarios/oracle/offsets-expire-kip211.scn
/// checks it there): while a consumer group is Stable, the offsets of a topic no member
/// subscribes to expire `offsets.retention.minutes` after their commit, and those of the topics
/// it reads never do; once it is Empty, every offset expires that long after it became Empty —
/// one an admin committed since, too — and the group with nothing left is removed (Dead).
#[test]
fn offsets_expire_by_subscription_while_stable_and_from_the_moment_the_group_emptied() {
    const MINUTE: i64 = 60_000;
    let mut lab = lab_with_orders(4);
    topic(&mut lab, "legacy", 1);
    produce_to(&mut lab, "legacy", 0, 2);
    lab.set_offsets_retention(MINUTE).expect("1m");
    let legacy = TopicPartition::new("legacy", 0);
    let none = std::collections::BTreeMap::new();
    let stored =
        |lab: &Lab, tp: &TopicPartition| lab.offsets().fetch(&OffsetKey::new("g", tp)).map(|v| v.offset);
    lab.alter_offsets("g", &[(legacy.clone(), 2)], &none, &Default::default())
        .expect("an offset for a topic the group will not read");
    lab.add_consumer(ConsumerConfig {
        max_poll_interval_ms: 10 * MINUTE,
        ..consumer("c1", "g", CommitStrategy::ManualBatch, SinkKind::Append, 10)
    })
    .expect("c1");
    poll_and_process(&mut lab, "c1");
    lab.tick(MINUTE - 1).expect("tick");
    assert_eq!(stored(&lab, &legacy), Some(2));
    lab.tick(1).expect("tick");
    assert_eq!(stored(&lab, &legacy), None, "not subscribed: by its commit time");
    lab.tick(5 * MINUTE).expect("tick");
    assert_eq!(stored(&lab, &tp()), Some(4), "subscribed: never while Stable");
    assert_eq!(lab.group("g").expect("g").state_name(), "Stable");

    lab.close("c1").expect("the group is Empty from now");
    lab.tick(40_000).expect("tick");
    lab.alter_offsets("g", &[(legacy.clone(), 1)], &none, &Default::default())
        .expect("an admin's commit to the Empty group");
    lab.tick(MINUTE - 40_000 - 1).expect("tick");
    assert_eq!((stored(&lab, &tp()), stored(&lab, &legacy)), (Some(4), Some(1)));
    assert_eq!(lab.group("g").expect("g").state_name(), "Empty");
    lab.tick(1).expect("a minute after the group emptied");
    assert_eq!(
        (stored(&lab, &tp()), stored(&lab, &legacy)),
        (None, None),
        "counted from the moment the group became Empty, the admin's 20 s old commit too"
    );
    assert_eq!(lab.group("g").expect("kept for c1").state_name(), "Dead");
    assert!(matches!(lab.delete_group("g"), Err(LabError::UnknownGroup(_))));

    // A member brings the group back; with no offset it starts from auto.offset.reset.
    produce(&mut lab, "orders", 2);
    lab.restart("c1").expect("restart");
    assert_eq!(lab.group("g").expect("g").state_name(), "Stable");
    assert_eq!(lab.consumer("c1").expect("c1").assignment[&tp()].position, 0);

    // A group no member ever joined (offsets committed from outside): by the commit time.
    let mut lab = lab_with_orders(4);
    lab.set_offsets_retention(MINUTE).expect("1m");
    lab.alter_offsets("simple", &[(tp(), 1)], &none, &Default::default())
        .expect("commit");
    lab.tick(30_000).expect("tick");
    lab.alter_offsets("simple", &[(tp(), 2)], &none, &Default::default())
        .expect("commit again");
    lab.tick(MINUTE - 1).expect("tick");
    assert_eq!(committed(&lab, "simple"), Some(2));
    lab.tick(1).expect("tick");
    assert_eq!(committed(&lab, "simple"), None);
    assert!(lab.group("simple").is_err(), "removed with its last offset");
}

/// KIP-429: while a cooperative group rebalances, a member that has rejoined keeps fetching the
/// partitions it owns (it gives up only the moving ones, when the rebalance completes); an eager
/// member gave everything up when it rejoined and gets nothing until the group is Stable.
#[test]
fn a_cooperative_member_fetches_through_the_rebalance_round_and_an_eager_one_waits() {
    use offsetlab_engine::consumer::Assignor;
    for (assignor, fetches) in [(Assignor::CooperativeSticky, true), (Assignor::Range, false)] {
        let mut lab = Lab::default();
        lab.create_topic(
            "orders",
            TopicConfig {
                partitions: 3,
                ..TopicConfig::default()
            },
        )
        .expect("topic");
        for p in 0..3 {
            produce_to(&mut lab, "orders", p, 10);
        }
        let config = |name: &str| ConsumerConfig {
            assignor,
            ..consumer(name, "g", CommitStrategy::ManualBatch, SinkKind::Append, 3)
        };
        lab.add_consumer(config("c1")).expect("c1");
        lab.add_consumer(config("c2")).expect("c2");
        poll_and_process(&mut lab, "c1");
        poll_and_process(&mut lab, "c2");
        assert_eq!(lab.group("g").expect("g").state_name(), "Stable");
        let owned = lab.consumer("c1").expect("c1").assignment.len();
        lab.add_consumer(config("c3")).expect("c3 joins: a rebalance");
        let polled = lab.poll("c1").expect("c1 rejoins in its poll");
        assert_eq!(
            lab.group("g").expect("g").state_name(),
            "PreparingRebalance",
            "{assignor:?}: waiting for c2"
        );
        assert_eq!(polled > 0, fetches, "{assignor:?}: polled {polled}");
        let kept = lab.consumer("c1").expect("c1").assignment.len();
        assert_eq!(kept, if fetches { owned } else { 0 }, "{assignor:?}");
        // c2 rejoins: the group is Stable, one partition each; whatever c1 had fetched from a
        // partition that moved is dropped with it.
        lab.poll("c2").expect("c2");
        assert_eq!(lab.group("g").expect("g").state_name(), "Stable");
        let c1 = lab.consumer("c1").expect("c1");
        assert!(c1.in_flight.iter().all(|f| c1.assignment.contains_key(&f.tp)));
    }
}

/// The coordinator's cleanup (`offsets.retention.check.interval.ms`, Kafka's
/// `cleanupGroupMetadata`) removes an Empty group with no committed offset left at its next run,
/// however its offsets went: here an OffsetDelete of the last one, and a group whose member left
/// without committing. Never a group with a member or an offset; runs fall on multiples of the
/// interval of the lab's clock.
#[test]
fn the_cleanup_run_removes_an_empty_group_with_no_offset_left() {
    const SECOND: i64 = 1_000;
    let mut lab = lab_with_orders(4);
    lab.set_offsets_retention_check(10 * SECOND).expect("10s");
    assert!(
        lab.set_offsets_retention_check(0).is_err(),
        "a zero interval is refused"
    );
    assert_eq!(
        lab.offsets_retention_check_ms(),
        10 * SECOND,
        "and changes nothing"
    );
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        10,
    ))
    .expect("c1");
    poll_and_process(&mut lab, "c1");
    lab.tick(60 * SECOND)
        .expect("a Stable group with offsets is never removed");
    assert_eq!(lab.group("g").expect("g").state_name(), "Stable");
    lab.close("c1").expect("close");
    lab.tick(60 * SECOND)
        .expect("an Empty group with an offset stays");
    assert_eq!(lab.group("g").expect("g").state_name(), "Empty");
    let before_run = 10 * SECOND - 1 - lab.now().rem_euclid(10 * SECOND);
    lab.tick(before_run).expect("to one millisecond before a run");
    lab.delete_offsets("g", &[tp()]).expect("the last offset");
    assert_eq!(
        lab.group("g").expect("g").state_name(),
        "Empty",
        "until the cleanup runs"
    );
    lab.tick(1).expect("the run");
    assert_eq!(lab.group("g").expect("kept for c1").state_name(), "Dead");
    assert_eq!(figures(&lab, "g").state, "Dead");

    // A member that never commits: its group goes at the first run after it left.
    lab.add_consumer(consumer(
        "c2",
        "quiet",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        10,
    ))
    .expect("c2");
    lab.poll("c2").expect("poll, no commit");
    lab.tick(20 * SECOND).expect("a member: kept");
    assert_eq!(lab.group("quiet").expect("quiet").state_name(), "Stable");
    lab.close("c2").expect("close");
    assert_eq!(lab.group("quiet").expect("quiet").state_name(), "Empty");
    lab.tick(10 * SECOND).expect("one interval");
    assert_eq!(lab.group("quiet").expect("kept for c2").state_name(), "Dead");
}

/// DeleteGroups of a group the lab's consumers still name: the coordinator has it no more
/// (DescribeGroups says Dead, a second delete is GROUP_ID_NOT_FOUND, and so is an OffsetDelete)
/// until a member joins or an offset is committed for it.
#[test]
fn a_deleted_group_is_dead_until_a_member_or_a_commit_brings_it_back() {
    let mut lab = lab_with_orders(4);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        10,
    ))
    .expect("c1");
    poll_and_process(&mut lab, "c1");
    let err = lab.delete_group("g").expect_err("a member");
    assert_eq!(err.kafka_error(), Some("NON_EMPTY_GROUP"));
    lab.close("c1").expect("close");
    assert_eq!(lab.delete_group("g").expect("deleted"), 1);
    assert_eq!(lab.group("g").expect("kept for c1").state_name(), "Dead");
    assert_eq!(figures(&lab, "g").state, "Dead");
    let err = lab.delete_group("g").expect_err("gone");
    assert_eq!(err.kafka_error(), Some("GROUP_ID_NOT_FOUND"));
    let err = lab.delete_offsets("g", &[tp()]).expect_err("gone");
    assert_eq!(err.kafka_error(), Some("GROUP_ID_NOT_FOUND"));
    // An admin's commit creates it again, Empty.
    lab.alter_offsets("g", &[(tp(), 2)], &Default::default(), &Default::default())
        .expect("commit");
    assert_eq!(lab.group("g").expect("g").state_name(), "Empty");
    lab.restart("c1").expect("restart");
    assert_eq!(lab.group("g").expect("g").state_name(), "Stable");
    assert_eq!(lab.consumer("c1").expect("c1").assignment[&tp()].position, 2);
}

/// An OffsetCommit that names a member id and a generation, sent to a group of the lab's own
/// consumers, is checked as Kafka's coordinator checks it (scenarios/oracle/commit-fencing.scn
/// checks the same on Apache Kafka): a member the group does not have is UNKNOWN_MEMBER_ID,
/// another generation ILLEGAL_GENERATION, and nothing is written; the member's own id (or its
/// consumer's name) with the group's generation commits, with its metadata.
#[test]
fn a_commit_naming_a_member_is_fenced_in_a_group_of_lab_consumers() {
    let mut lab = lab_with_orders(6);
    lab.add_consumer(consumer(
        "c1",
        "g",
        CommitStrategy::ManualBatch,
        SinkKind::Append,
        3,
    ))
    .expect("c1");
    poll_and_process(&mut lab, "c1");
    let generation = lab.group("g").expect("g").generation;
    let none = std::collections::BTreeMap::new();
    let commit = |lab: &mut Lab, member: &str, generation: i32| {
        lab.external_commit("g", member, generation, &[(tp(), 5)], &none, &Default::default())
    };
    let err = commit(&mut lab, "ghost", generation).expect_err("unknown");
    assert_eq!(err.kafka_error(), Some("UNKNOWN_MEMBER_ID"), "{err}");
    let err = commit(&mut lab, "c1", generation + 6).expect_err("another generation");
    assert_eq!(err.kafka_error(), Some("ILLEGAL_GENERATION"), "{err}");
    assert_eq!(committed(&lab, "g"), Some(3));
    let mut metadata = std::collections::BTreeMap::new();
    metadata.insert(tp(), "explicit".to_string());
    lab.external_commit(
        "g",
        "c1#1",
        generation,
        &[(tp(), 4)],
        &metadata,
        &Default::default(),
    )
    .expect("the member's own commit");
    let v = lab.offsets().fetch(&OffsetKey::new("g", &tp())).expect("stored");
    assert_eq!((v.offset, v.metadata.as_str()), (4, "explicit"));
    lab.close("c1").expect("close");
    let err = commit(&mut lab, "c1", generation).expect_err("no member any more");
    assert_eq!(err.kafka_error(), Some("UNKNOWN_MEMBER_ID"), "{err}");
}
