//! A long tick jumps over the timer firings that cannot change anything: a century of a 1 ms
//! auto-commit timer ends exactly where stepping through it would, and at once.

use offsetlab_engine::consumer::ConsumerConfig;
use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::narrative::EventKind;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy};
use offsetlab_engine::Lab;

const DAY: i64 = 86_400_000;

/// A topic of 12 orders and a librdkafka-style consumer with a 1 ms auto-commit timer that has
/// polled (its stored offsets are ahead of what is committed).
fn lab() -> Lab {
    let mut lab = Lab::default();
    lab.create_topic("orders", TopicConfig::default()).expect("topic");
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
    c.auto_commit_interval_ms = 1;
    c.max_poll_records = 4;
    c.auto_offset_reset = AutoOffsetReset::Earliest;
    lab.add_consumer(c).expect("consumer");
    lab.poll("c1").expect("poll");
    lab
}

/// Everything a front end shows, but the narrative (whose runs of refusals are told per tick).
fn figures(lab: &Lab) -> serde_json::Value {
    serde_json::to_value(lab.view().expect("view")).expect("json")
}

#[test]
fn a_century_of_a_one_millisecond_timer_ends_where_stepping_would() {
    let mut one = lab();
    one.tick(36_500 * DAY).expect("a century");
    // The same century in days, and the first hour of it in milliseconds-sized steps.
    let mut days = lab();
    for _ in 0..36_500 {
        days.tick(DAY).expect("a day");
    }
    assert_eq!(figures(&one), figures(&days));
    let mut hour = lab();
    hour.tick(3_600_000).expect("an hour");
    let mut steps = lab();
    for _ in 0..3_600 {
        steps.tick(1_000).expect("a second");
    }
    assert_eq!(figures(&hour), figures(&steps));
    // What happened: the timer committed what poll stored (4), the consumer left its group
    // when max.poll.interval.ms passed without a poll, and seven days later, the group Empty,
    // its offsets expired and the coordinator removed it (Dead) — after which every firing is
    // refused, told as one event.
    let view = figures(&one);
    assert_eq!(view["groups"]["g"]["state"], "Dead", "{}", view["groups"]["g"]);
    let narrative = one.narrative().events();
    assert!(
        narrative.len() < 100,
        "a century is a few events, not 3·10¹² ({})",
        narrative.len()
    );
    assert!(
        narrative
            .iter()
            .any(|e| e.kind == EventKind::Refused && e.text.contains("commit(s) from c1#1 rejected")),
        "{:#?}",
        narrative.iter().map(|e| &e.text).collect::<Vec<_>>()
    );
}
