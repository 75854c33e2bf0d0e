//! Drives the `offsetlab` binary as a user would.

use std::path::PathBuf;
use std::process::{Command, Output};

fn offsetlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args(args)
        .current_dir(repo_root())
        .output()
        .expect("run offsetlab")
}

fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn json(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| panic!("not JSON ({e}): {}", stdout(o)))
}

fn write_scenario(dir: &tempfile::TempDir, text: &str) -> String {
    let path = dir.path().join("s.scn");
    std::fs::write(&path, text).expect("write");
    path.display().to_string()
}

#[test]
fn every_lesson_file_passes_with_memory_and_sqlite_sinks() {
    let mut lessons: Vec<_> = std::fs::read_dir(repo_root().join("lessons"))
        .expect("lessons dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "scn"))
        .collect();
    lessons.sort();
    assert!(lessons.len() >= 7, "{lessons:?}");
    for lesson in lessons {
        let path = lesson.display().to_string();
        let mem = offsetlab(&["run", &path, "--json"]);
        assert!(mem.status.success(), "{path}: {}", stderr(&mem));
        let dir = tempfile::tempdir().expect("tempdir");
        let db = dir.path().display().to_string();
        let sql = offsetlab(&["run", &path, "--json", "--sqlite", &db]);
        assert!(sql.status.success(), "{path} with SQLite: {}", stderr(&sql));
        assert_eq!(
            json(&mem)["groups"],
            json(&sql)["groups"],
            "{path}: both sinks give the same figures"
        );
    }
}

#[test]
fn run_json_has_the_documented_keys() {
    let o = offsetlab(&["run", "lessons/01-auto-commit-timer-loses.scn", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v = json(&o);
    let g = &v["groups"]["analytics-prod"];
    assert_eq!(g["committed"]["orders-0"], 12);
    assert_eq!(g["log_end_offset"]["orders-0"], 12);
    assert_eq!(g["lag"]["orders-0"], 0);
    assert_eq!(g["sink"]["rows"], 9);
    assert_eq!(g["sink"]["distinct_keys"], 9);
    assert_eq!(g["audit"]["lost"], 3);
    assert_eq!(g["audit"]["duplicates"], 0);
    assert_eq!(g["audit"]["duplicate_rows"], 0);
    assert_eq!(g["audit"]["redeliveries"], 0);
}

#[test]
fn run_prints_the_narrative_and_the_final_table() {
    let o = offsetlab(&["run", "lessons/02-commit-after-duplicates.scn"]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(out.contains("$ crash c1"), "{out}");
    assert!(out.contains("crashed (kill -9)"), "{out}");
    assert!(out.contains("AGAIN: crash redelivery"), "{out}");
    assert!(out.contains("silently lost: 0   duplicates: 3"), "{out}");
}

#[test]
fn a_malformed_line_fails_with_its_line_number_and_nothing_runs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_scenario(
        &dir,
        "topic orders\nproduce orders count=3\nprocess c1 count=-2\npoll c1\n",
    );
    let o = offsetlab(&["run", &path]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(
        err.contains(":3: process: count=-2: must not be negative"),
        "{err}"
    );
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
}

#[test]
fn a_rejected_action_names_its_line() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_scenario(&dir, "topic orders\npoll ghost\n");
    let o = offsetlab(&["run", &path, "--json"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(":2: unknown consumer 'ghost'"),
        "{}",
        stderr(&o)
    );
    let v = json(&o);
    assert_eq!(v["line"], 2);
    assert_eq!(v["error"], "unknown consumer 'ghost'");
}

#[test]
fn resetting_an_active_group_is_refused_in_kafkas_words() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_scenario(
        &dir,
        "topic orders\nproduce orders count=3\nconsumer c1 group=g topic=orders\nreset-offsets g topic=orders to-earliest execute\n",
    );
    let o = offsetlab(&["run", &path]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains(":4: Assignments can only be reset if the group 'g' is inactive, but the current state is Stable."),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_failing_expect_exits_1_with_expected_and_actual() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write_scenario(
        &dir,
        "topic orders\nproduce orders count=3\nexpect topic=orders log-end-offset=4\n",
    );
    let o = offsetlab(&["run", &path]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(":3: expectation failed: log-end-offset expected 4, got 3"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_missing_file_is_an_io_error() {
    let o = offsetlab(&["run", "does/not/exist.scn"]);
    assert_eq!(o.status.code(), Some(3));
}

#[test]
fn lessons_are_listed_and_runnable_by_number() {
    let o = offsetlab(&["lessons", "--json"]);
    assert!(o.status.success());
    let v = json(&o);
    let numbers: Vec<i64> = v
        .as_array()
        .expect("array")
        .iter()
        .filter_map(|l| l["number"].as_i64())
        .collect();
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]);
    let o = offsetlab(&["lessons", "3"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("upsert"));
    assert_eq!(offsetlab(&["lessons", "99"]).status.code(), Some(2));
}

#[test]
fn explore_json_makes_the_labs_claim() {
    let o = offsetlab(&["explore", "--json"]);
    assert!(o.status.success(), "{}", stderr(&o));
    let cells = json(&o);
    let cells = cells.as_array().expect("array");
    assert_eq!(cells.len(), 20);
    for c in cells {
        for key in [
            "strategy",
            "sink",
            "crash_points",
            "max_lost",
            "max_duplicates",
            "max_duplicate_rows",
        ] {
            assert!(c.get(key).is_some(), "{key} in {c}");
        }
        let (strategy, sink) = (
            c["strategy"].as_str().unwrap_or(""),
            c["sink"].as_str().unwrap_or(""),
        );
        let lost = c["max_lost"].as_u64().unwrap_or(u64::MAX);
        match (strategy, sink) {
            (_, "transactional") => assert_eq!((lost, c["max_duplicates"].as_u64()), (0, Some(0)), "{c}"),
            ("before-process" | "auto-timer", _) => assert!(lost > 0, "{c}"),
            _ => assert_eq!(lost, 0, "{c}"),
        }
        if sink == "upsert" {
            assert_eq!(c["max_duplicate_rows"], 0, "{c}");
        }
    }
}

#[test]
fn explore_accepts_a_scenario_file() {
    let o = offsetlab(&[
        "explore",
        "lessons/02-commit-after-duplicates.scn",
        "--consumer",
        "c1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("manual-record"));
    let o = offsetlab(&[
        "explore",
        "lessons/02-commit-after-duplicates.scn",
        "--consumer",
        "nobody",
    ]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn the_tour_and_seed_run_in_the_terminal() {
    let o = offsetlab(&["tour"]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(stdout(&o).contains("silently lost: 3"), "{}", stdout(&o));
    let seed = offsetlab(&["seed"]);
    assert!(stdout(&seed).contains("consumer c1 group=analytics-prod"));
}

#[test]
fn help_teaches() {
    let o = offsetlab(&["--help"]);
    let out = stdout(&o);
    assert!(
        out.contains("position") && out.contains("__consumer_offsets"),
        "{out}"
    );
    assert!(out.contains("Exit codes"), "{out}");
}
