//! The share groups in the lab's view (`offsetlab run --json`, `GET /api/state`): the story of
//! `scenarios/share-groups.scn` stopped at three instants, and its JSON read as the page reads it.

use offsetlab_scenario::runner::run_source;
use serde_json::{json, Value};

const STORY: &str = include_str!("../../../scenarios/share-groups.scn");

/// The view's JSON after the story's lines up to and including the first line that starts with
/// `until` (after `skip` earlier ones), its `expect` lines left out.
fn view_after(until: &str, skip: usize) -> Value {
    let mut seen = 0;
    let mut lines = Vec::new();
    for line in STORY.lines() {
        if line.starts_with("expect") {
            continue;
        }
        lines.push(line);
        if line.starts_with(until) {
            if seen == skip {
                break;
            }
            seen += 1;
        }
    }
    let runner = run_source(&lines.join("\n")).unwrap_or_else(|e| panic!("{e}"));
    serde_json::to_value(runner.lab.view().expect("a view")).expect("JSON")
}

fn record(p: &Value, offset: i64) -> &Value {
    p["records"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["offset"] == offset))
        .unwrap_or_else(|| panic!("offset {offset} in the window: {p}"))
}

#[test]
fn two_members_split_the_partition_each_record_owned_and_locked() {
    let v = view_after("share-poll s2", 0);
    let g = &v["share_groups"]["workers"];
    assert_eq!(g["state"], "Stable");
    let members: Vec<&str> = g["members"]
        .as_array()
        .expect("members")
        .iter()
        .filter_map(|m| m["id"].as_str())
        .collect();
    assert_eq!(members, ["s1#1", "s2#1"]);
    assert_eq!(g["config"]["delivery_count_limit"], 3);
    assert_eq!(g["config"]["auto_offset_reset"], "earliest");
    assert_eq!(g["config"]["record_lock_duration_ms"], 30_000);
    let p = &g["partitions"][0];
    assert_eq!(
        (p["topic"].as_str(), p["partition"].as_i64()),
        (Some("orders"), Some(0))
    );
    assert_eq!((p["spso"].as_i64(), p["speo"].as_i64()), (Some(0), Some(6)));
    assert_eq!(
        (p["in_flight"].as_u64(), p["acquired"].as_u64()),
        (Some(6), Some(6))
    );
    assert_eq!(p["log_end_offset"], 8);
    let clock = v["clock_ms"].as_i64().expect("clock");
    for (o, owner) in [(0, "s1#1"), (2, "s1#1"), (3, "s2#1"), (5, "s2#1")] {
        let r = record(p, o);
        assert_eq!(r["state"], "acquired", "{r}");
        assert_eq!(r["owner"], owner, "{r}");
        assert_eq!(r["delivery_count"], 1, "{r}");
        assert_eq!(r["lock_expires_at"].as_i64(), Some(clock + 30_000), "{r}");
    }
    let held: Vec<i64> = v["share_consumers"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "s2"))
        .map(|c| {
            c["held"]
                .as_array()
                .expect("held")
                .iter()
                .filter_map(|h| h["offset"].as_i64())
                .collect()
        })
        .expect("s2");
    assert_eq!(held, [3, 4, 5]);
}

#[test]
fn after_the_crash_the_killed_members_records_come_back_at_once_counted() {
    let v = view_after("share-poll s2", 1);
    let g = &v["share_groups"]["workers"];
    let s1 = &g["members"][0];
    assert_eq!(s1["id"], "s1#1");
    let crashed = s1["crashed_at"].as_i64().expect("s1 crashed");
    assert_eq!(s1["session_expires_at"].as_i64(), Some(crashed + 45_000));
    assert_eq!(v["clock_ms"].as_i64(), Some(crashed), "no lock had to expire");
    let p = &g["partitions"][0];
    assert_eq!((p["spso"].as_i64(), p["speo"].as_i64()), (Some(0), Some(6)));
    assert_eq!(
        (p["acquired"].as_u64(), p["acknowledged"].as_u64()),
        (Some(3), Some(3))
    );
    let r = record(p, 0);
    assert_eq!((&r["owner"], &r["delivery_count"]), (&json!("s2#1"), &json!(2)));
    assert_eq!(r["applied"], 1, "s1 had applied it before it crashed");
    assert_eq!(record(p, 4)["state"], "acknowledged");
    assert_eq!(record(p, 4)["owner"], Value::Null);
    assert_eq!(g["audit"]["redelivered_records"], 3);
}

#[test]
fn at_the_end_the_window_is_empty_the_poison_record_archived_and_the_log_whole() {
    let v = serde_json::to_value(
        run_source(STORY)
            .unwrap_or_else(|e| panic!("{e}"))
            .lab
            .view()
            .expect("a view"),
    )
    .expect("JSON");
    let g = &v["share_groups"]["workers"];
    let p = &g["partitions"][0];
    assert_eq!((p["spso"].as_i64(), p["speo"].as_i64()), (Some(10), Some(10)));
    assert_eq!(p["records"], json!([]));
    let done = p["completed"].as_array().expect("completed");
    assert_eq!(done.len(), 10, "every record behind the SPSO: {p}");
    let poison = &done[2];
    assert_eq!(poison["offset"], 2);
    assert_eq!(poison["state"], "archived");
    assert_eq!(poison["archive_reason"], "delivery-limit");
    assert_eq!(poison["delivery_count"], 3);
    assert_eq!(poison["applied"], 0);
    assert!(done
        .iter()
        .filter(|r| r["offset"] != 2)
        .all(|r| r["state"] == "acknowledged"));
    let a = &g["audit"];
    for (k, want) in [
        ("lost", 1),
        ("duplicates", 2),
        ("deliveries", 11),
        ("archived", 1),
        // 0 and 1 after the crash, 2 twice more, 8 and 9 after the stuck member's locks.
        ("redelivered_records", 5),
        ("redeliveries", 6),
    ] {
        assert_eq!(a[k], want, "{k} in {a}");
    }
    assert_eq!(p["audit"], *a, "one partition: its audit is the group's");
    // The log kept every record, and a consumer group read them all from 0.
    assert_eq!(v["topics"][0]["partitions"][0]["log_start_offset"], 0);
    assert_eq!(v["groups"]["audit"]["committed"]["orders-0"], 10);
    assert_eq!(v["groups"]["audit"]["audit"]["deliveries"], 10);
}

#[test]
fn a_lab_without_share_groups_shows_none() {
    let runner =
        run_source("topic orders partitions=1\nproduce orders count=2\n").unwrap_or_else(|e| panic!("{e}"));
    let v = serde_json::to_value(runner.lab.view().expect("a view")).expect("JSON");
    assert_eq!(
        (&v["share_groups"], &v["share_consumers"]),
        (&json!({}), &json!([]))
    );
}
