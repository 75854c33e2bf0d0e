//! The live clock's contract with the engine: catching up only when [`Lab::next_deadline`] says
//! a timer is due ends exactly where one long tick ends, and the deadline names the instant
//! something would change — never a steady timer's firing.

use offsetlab_engine::consumer::ConsumerConfig;
use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy};
use offsetlab_engine::Lab;

const DAY: i64 = 86_400_000;

fn lab() -> Lab {
    let mut lab = Lab::default();
    let config = TopicConfig {
        segment_records: Some(4),
        retention_ms: Some(3 * DAY),
        ..TopicConfig::default()
    };
    lab.create_topic("orders", config).expect("topic");
    lab.produce(
        "orders",
        &ProduceSpec {
            count: 12,
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
    let mut c = ConsumerConfig::new("c1", "g", "orders");
    c.strategy = CommitStrategy::AutoTimer;
    c.max_poll_records = 4;
    c.auto_offset_reset = AutoOffsetReset::Earliest;
    lab.add_consumer(c).expect("consumer");
    lab
}

fn figures(lab: &Lab) -> serde_json::Value {
    serde_json::to_value(lab.view().expect("view")).expect("json")
}

#[test]
fn catching_up_at_each_deadline_ends_where_one_tick_ends() {
    for horizon in [1_000, 5_000, 6_000, 400_000, 4 * DAY, 12 * DAY] {
        let mut ticked = lab();
        ticked.poll("c1").expect("poll");
        let target = ticked.now() + horizon;
        ticked.tick(horizon).expect("tick");

        let mut live = lab();
        live.poll("c1").expect("poll");
        let mut catch_ups = 0;
        while let Some(due) = live.next_deadline().filter(|&d| d <= target) {
            assert!(due >= live.now(), "a deadline is never in the past");
            live.advance_clock_to(due.max(live.now())).expect("catch up");
            catch_ups += 1;
            assert!(catch_ups < 100, "deadlines move on once reached");
        }
        live.advance_clock_to(target).expect("to the target");
        assert_eq!(figures(&live), figures(&ticked), "after {horizon} ms");
    }
}

#[test]
fn a_steady_timer_is_no_deadline_and_retention_is() {
    let mut lab = lab();
    // c1 has polled nothing: its timer would commit nothing. The one deadline is retention's:
    // the oldest closed segment goes once its newest record is older than retention.ms.
    let start = lab.now();
    let retention = start + 3 * DAY + 1;
    let due = lab.next_deadline().expect("a deadline");
    assert!(due > start, "nothing is due yet");
    // max.poll.interval.ms comes first (c1 joined and never polled), then retention.
    lab.advance_clock_to(due).expect("catch up");
    let mut seen = vec![due];
    while let Some(d) = lab.next_deadline().filter(|&d| d <= retention) {
        lab.advance_clock_to(d).expect("catch up");
        seen.push(d);
    }
    assert_eq!(seen.last(), Some(&retention), "{seen:?}");
    let view = figures(&lab);
    assert_eq!(
        view["topics"][0]["partitions"][0]["log_start_offset"], 8,
        "{view}"
    );
}

#[test]
fn the_clock_never_goes_back() {
    let mut lab = lab();
    lab.tick(5_000).expect("tick");
    let before = figures(&lab);
    let err = lab.advance_clock_to(lab.now() - 1).expect_err("earlier");
    assert!(err.to_string().contains("never goes backwards"), "{err}");
    assert_eq!(figures(&lab), before, "refused: nothing changed");
}

/// `cleanup.policy=compact,delete` (Kafka Streams' windowed changelogs): the cleaner keeps the
/// latest record per key, and retention still deletes whole old segments.
#[test]
fn compact_and_delete_both_apply() {
    use offsetlab_engine::log::CleanupPolicy;
    assert_eq!(
        CleanupPolicy::from_list("delete, compact"),
        Ok(CleanupPolicy::CompactDelete)
    );
    assert_eq!(CleanupPolicy::from_list("compact"), Ok(CleanupPolicy::Compact));
    assert!(CleanupPolicy::from_list("compact,shred").is_err());
    let mut lab = Lab::default();
    let config = TopicConfig {
        segment_records: Some(2),
        retention_ms: Some(DAY),
        cleanup_policy: CleanupPolicy::CompactDelete,
        ..TopicConfig::default()
    };
    lab.create_topic("windows", config).expect("topic");
    let spec = ProduceSpec {
        count: 6,
        key: Some("k".into()),
        ..ProduceSpec::default()
    };
    lab.produce("windows", &spec).expect("produce");
    assert!(
        lab.compact_topic("windows").expect("compacts") > 0,
        "superseded records go"
    );
    lab.tick(2 * DAY).expect("tick");
    let view = figures(&lab);
    let start = view["topics"][0]["partitions"][0]["log_start_offset"]
        .as_i64()
        .expect("start");
    assert!(start >= 4, "retention deleted the old closed segments: {view}");
}
