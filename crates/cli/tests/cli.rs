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
    assert_eq!(numbers, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]);
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
    assert!(stdout(&o).contains("3 lost (offsets 5..7)"), "{}", stdout(&o));
    let seed = offsetlab(&["seed"]);
    assert!(stdout(&seed).contains("consumer c1 group=analytics-prod"));
}

/// `offsetlab ARGS` run in `dir` with `env` set (and the colour variables of the test's own
/// environment removed), stdin not a terminal.
fn offsetlab_in(dir: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut c = Command::new(env!("CARGO_BIN_EXE_offsetlab"));
    c.args(args).current_dir(dir).stdin(std::process::Stdio::null());
    for v in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"] {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    c.output().expect("run offsetlab")
}

/// `offsetlab ARGS` on a pseudo-terminal (util-linux's `script`), with `env` set: what it
/// printed there. `None` when `script` is not installed.
fn offsetlab_on_a_terminal(args: &[&str], env: &[(&str, &str)]) -> Option<String> {
    offsetlab_on_a_terminal_typing(args, env, "")
}

/// [`offsetlab_on_a_terminal`], with `typed` typed ahead on the terminal's keyboard.
fn offsetlab_on_a_terminal_typing(args: &[&str], env: &[(&str, &str)], typed: &str) -> Option<String> {
    use std::io::Write as _;
    let quote = |a: &str| format!("'{}'", a.replace('\'', r"'\''"));
    let line: Vec<String> = std::iter::once(env!("CARGO_BIN_EXE_offsetlab"))
        .chain(args.iter().copied())
        .map(quote)
        .collect();
    let mut c = Command::new("script");
    c.args(["-qec", &line.join(" "), "/dev/null"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .env("TERM", "xterm-256color");
    for v in ["NO_COLOR", "CLICOLOR", "CLICOLOR_FORCE"] {
        c.env_remove(v);
    }
    c.envs(env.iter().copied());
    let mut child = match c.spawn() {
        Ok(child) => child,
        // Never skipped: a missing tool fails the test, naming it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            panic!("the terminal tests need `script` (util-linux; Debian's bsdutils): {e}")
        }
        Err(e) => panic!("script: {e}"),
    };
    if let Some(mut keyboard) = child.stdin.take() {
        keyboard.write_all(typed.as_bytes()).expect("type");
    }
    let o = child.wait_with_output().expect("script");
    assert!(o.status.success(), "script {line:?}: {}", stderr(&o));
    Some(stdout(&o))
}

const ESC: &str = "\u{1b}[";

#[test]
fn colour_on_a_terminal_unless_no_color_and_never_into_a_pipe() {
    let dir = tempfile::tempdir().expect("tempdir");
    let lesson = ["lessons", "1"];
    if let Some(out) = offsetlab_on_a_terminal(&lesson, &[]) {
        assert!(out.contains(ESC), "no colour on a terminal: {out}");
        // The loss in red, the crash in bold red, the passing expect in green.
        assert!(out.contains("\u{1b}[31m"), "{out}");
        assert!(out.contains("\u{1b}[32m✓ holds"), "{out}");
        let out = offsetlab_on_a_terminal(&lesson, &[("NO_COLOR", "1")]).unwrap_or_default();
        assert!(!out.contains(ESC), "NO_COLOR=1 on a terminal: {out}");
        let out = offsetlab_on_a_terminal(&["lessons", "1", "--color", "never"], &[]).unwrap_or_default();
        assert!(!out.contains(ESC), "--color never on a terminal: {out}");
        // The flag is the user's word for this run: it beats the environment.
        let out = offsetlab_on_a_terminal(&["--color=always", "lessons", "1"], &[("NO_COLOR", "1")])
            .unwrap_or_default();
        assert!(out.contains(ESC), "--color always with NO_COLOR: {out}");
    }
    let piped = offsetlab_in(dir.path(), &lesson, &[]);
    assert!(piped.status.success(), "{}", stderr(&piped));
    assert!(!stdout(&piped).contains(ESC), "{}", stdout(&piped));
    let forced = offsetlab_in(dir.path(), &["lessons", "1", "--color", "always"], &[]);
    assert!(stdout(&forced).contains("\u{1b}[31m"), "{}", stdout(&forced));
    let forced = offsetlab_in(dir.path(), &lesson, &[("CLICOLOR_FORCE", "1")]);
    assert!(
        stdout(&forced).contains(ESC),
        "CLICOLOR_FORCE=1: {}",
        stdout(&forced)
    );
    // A figure reads as plain text too: colour never moves a column.
    let plain = stdout(&piped);
    let coloured = stdout(&offsetlab_in(
        dir.path(),
        &["lessons", "1", "--color", "always"],
        &[],
    ));
    assert_eq!(strip_ansi(&coloured), plain);
    assert!(plain.contains("silently lost: 3   duplicates: 0"), "{plain}");
}

#[test]
fn json_and_errors_into_a_pipe_stay_plain_even_when_colour_is_forced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = offsetlab_in(dir.path(), &["lessons", "1", "--json", "--color", "always"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stdout(&o).contains(ESC), "{}", stdout(&o));
    assert_eq!(json(&o)["groups"]["analytics-prod"]["audit"]["lost"], 3);
    let o = offsetlab_in(dir.path(), &["lessons", "--json", "--color", "always"], &[]);
    assert!(!stdout(&o).contains(ESC), "{}", stdout(&o));
    let o = offsetlab_in(dir.path(), &["run", "missing.scn"], &[]);
    assert_eq!(o.status.code(), Some(3));
    assert!(
        stderr(&o).starts_with("error: cannot read missing.scn"),
        "{}",
        stderr(&o)
    );
    let o = offsetlab_in(dir.path(), &["run", "missing.scn", "--color", "always"], &[]);
    assert!(stderr(&o).contains("\u{1b}[1m\u{1b}[31merror:"), "{}", stderr(&o));
    let o = offsetlab_in(dir.path(), &["--color", "sometimes", "lessons"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

/// `text` without its SGR escapes (`ESC [ … m`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('\u{1b}') {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        rest = rest.find('m').map_or("", |m| &rest[m + 1..]);
    }
    out.push_str(rest);
    out
}

fn lesson_title(n: &str) -> String {
    offsetlab_scenario::lessons::find(n)
        .map(|l| l.title())
        .unwrap_or_else(|| panic!("lesson {n}"))
}

#[test]
fn a_lesson_runs_by_word_or_file_name_from_any_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let title = lesson_title("3");
    for lesson in ["upsert", "03-upsert-converges", "03", "3"] {
        let o = offsetlab_in(dir.path(), &["lessons", lesson], &[]);
        assert_eq!(o.status.code(), Some(0), "{lesson}: {}", stderr(&o));
        assert!(stdout(&o).contains(&title), "{lesson}: {}", stdout(&o));
        assert!(stdout(&o).contains("✓ holds"), "{lesson}: {}", stdout(&o));
    }
    let o = offsetlab_in(dir.path(), &["run", "--lesson", "upsert", "--json"], &[]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(json(&o)["groups"]["analytics-prod"]["sink"]["duplicate_rows"], 0);
    let o = offsetlab_in(dir.path(), &["lessons", "upsert", "--source"], &[]);
    assert_eq!(
        stdout(&o),
        offsetlab_scenario::lessons::find("3").map_or("", |l| l.source)
    );
    // A lesson's file outside a checkout: the error says the lesson is built in.
    let o = offsetlab_in(dir.path(), &["run", "lessons/03-upsert-converges.scn"], &[]);
    assert_eq!(o.status.code(), Some(3));
    assert!(stderr(&o).contains("`offsetlab lessons 3`"), "{}", stderr(&o));
}

#[test]
fn an_ambiguous_or_unknown_lesson_exits_2_saying_what_to_do() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = offsetlab_in(dir.path(), &["lessons", "crash"], &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = stderr(&o);
    assert!(err.contains("'crash' fits"), "{err}");
    for n in ["1", "2"] {
        assert!(err.contains(&lesson_title(n)), "lesson {n} is a candidate: {err}");
    }
    assert!(stdout(&o).is_empty(), "nothing ran: {}", stdout(&o));
    let o = offsetlab_in(dir.path(), &["lessons", "nosuchword"], &[]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("`offsetlab lessons` lists them"),
        "{}",
        stderr(&o)
    );
    let o = offsetlab_in(dir.path(), &["run", "--lesson", "nosuchword"], &[]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn the_lesson_list_suggests_commands_that_work_anywhere() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = offsetlab_in(dir.path(), &["lessons"], &[]);
    assert!(o.status.success());
    let out = stdout(&o);
    assert!(!out.contains("offsetlab run lessons/"), "{out}");
    assert!(out.contains("`offsetlab lessons 3`"), "{out}");
    assert!(out.contains(&lesson_title("11")), "{out}");
    // Every command the list suggests runs from here.
    for suggested in [&["lessons", "upsert"][..], &["run", "--lesson", "3", "--json"]] {
        let o = offsetlab_in(dir.path(), suggested, &[]);
        assert!(o.status.success(), "{suggested:?}: {}", stderr(&o));
    }
}

#[test]
fn the_tour_without_a_terminal_prints_every_step_and_exits_0() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = offsetlab_in(dir.path(), &["tour"], &[]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let out = stdout(&o);
    let at = |what: &str| {
        out.find(what)
            .unwrap_or_else(|| panic!("{what:?} is missing from the tour:\n{out}"))
    };
    // Three steps in order, each question before its answer.
    let steps = [at("① "), at("② "), at("③ ")];
    assert!(steps.windows(2).all(|w| w[0] < w[1]), "{out}");
    assert!(
        at("? How many of the 12 orders") < at("3 lost (offsets 5..7)"),
        "{out}"
    );
    assert!(at("? And how many duplicate rows") < at("0 lost, 1 record applied twice, 0 duplicate rows"));
    assert!(at("commit=auto-timer") < steps[1] && at("commit=manual-batch") > steps[1]);
    assert!(at("21 rows > 12 distinct orders") > steps[2], "{out}");
    assert!(at("12 rows = 12 distinct orders") > steps[2], "{out}");
    at("http://127.0.0.1:7070");
    at("offsetlab lessons");
    assert!(!out.contains("[Enter"), "nothing waits without a terminal: {out}");
    // Each step fits one screen.
    for w in steps.windows(2) {
        assert!(out[w[0]..w[1]].lines().count() <= 20, "{}", &out[w[0]..w[1]]);
    }
}

#[test]
fn the_tour_on_a_terminal_asks_and_says_whether_a_guess_was_right() {
    // Step ①: 3, then Enter; step ②: 1 lost, 0 duplicate rows, then Enter; Enter to the recap.
    let typed = "3\n\n1\n0\n\n\n";
    let Some(out) = offsetlab_on_a_terminal_typing(&["tour"], &[("NO_COLOR", "1")], typed) else {
        return;
    };
    for said in [
        "You said 3: right.",
        "You said 1; it is 0.",
        "You said 0: right.",
        "[Enter: step ②]",
        "What you saw",
    ] {
        assert!(out.contains(said), "{said:?} missing:\n{out}");
    }
    assert!(!out.contains(ESC), "NO_COLOR=1: {out}");
}
