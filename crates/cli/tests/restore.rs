//! What a user typed survives a restart exactly, and a lab that cannot be restored is never
//! replaced: `offsetlab serve` as a process, stopped with Ctrl-C or killed, started again on the
//! same data directory.

mod common;

use common::{act, http, ok_json, serve, Lab};
use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

fn get(lab: &Lab, path: &str) -> serde_json::Value {
    let res = http(&lab.addr, "GET", path, "").expect("get");
    ok_json(&res).unwrap_or_else(|| panic!("{path}: {res}"))
}

/// (key, value) of every record of partition 0 of `topic`.
fn records(lab: &Lab, topic: &str) -> Vec<(serde_json::Value, serde_json::Value)> {
    get(
        lab,
        &format!("/api/records?topic={topic}&partition=0&from=0&limit=1000"),
    )["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| (r["key"].clone(), r["value"].clone()))
        .collect()
}

/// Ctrl-C: the lab closes cleanly and exits.
fn stop(mut lab: Lab) {
    let status = Command::new("kill")
        .args(["-INT", &lab.child.id().to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
    let exit = lab.child.wait().expect("wait");
    assert!(exit.success(), "a clean stop: {exit:?}");
}

fn start(data: &str) -> Lab {
    serve(&["--data", data, "--http", "127.0.0.1:0"])
}

/// Every file under `dir` with its bytes: what "left exactly as it was" is checked against.
fn snapshot(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).expect("read_dir") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                out.insert(format!("{}/", p.display()), Vec::new());
                stack.push(p);
            } else {
                out.insert(p.display().to_string(), std::fs::read(&p).expect("read"));
            }
        }
    }
    out
}

/// Keys, values and ids with spaces, quotes of both kinds, `#`, `=`, brackets, tabs and
/// non-ASCII: accepted, restarted (cleanly and with kill -9), and still exactly what was typed.
#[test]
fn tricky_values_survive_a_restart_exactly() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let lines = [
        "topic t partitions=1",
        "produce t key='o 1'",
        r#"produce t key=o-2 value='"hello"'"#,
        r##"produce t key="it's" value=' {"a": "# not a comment"}'"##,
        "produce t key='a#b' value='[1, 2]'",
        r#"produce t key="tab\there \"q\" = [x] {y}" value="{\"é\":\"ü €\"}""#,
        "consumer c9 group='my group #1' topic=t instance-id='pod 1' reset=earliest sink=upsert",
        "poll c9",
        "process c9 count=all",
        "commit c9",
    ];
    // Paused, so the export after the refused batch and the restarts is the same text (a live
    // clock writes a `clock` line before each change, taken or not: `a_live_clock_…`).
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0", "--clock", "paused"]);
    let res = act(&lab, &lines);
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    let before = records(&lab, "t");
    assert_eq!(before[0].0, "o 1");
    assert_eq!(before[1].1, "\"hello\"");
    assert_eq!(before[2].0, "it's");
    assert_eq!(before[2].1, " {\"a\": \"# not a comment\"}");
    assert_eq!(before[3].0, "a#b");
    assert_eq!(before[4].0, "tab\there \"q\" = [x] {y}");
    let state = get(&lab, "/api/state");
    let group_before = state["groups"]["my group #1"].clone();
    assert_eq!(group_before["committed"]["t-0"], 5, "{state}");
    let export = http(&lab.addr, "GET", "/api/scenario", "").expect("export");
    stop(lab);

    let lab = start(&data);
    assert!(lab.banner.contains("lab restored: clean stop"), "{}", lab.banner);
    assert_eq!(records(&lab, "t"), before, "after a clean stop");
    assert_eq!(
        get(&lab, "/api/state")["groups"]["my group #1"]["committed"],
        group_before["committed"]
    );
    // An undo rebuilds the lab from its history: a batch whose second line fails.
    let res = act(&lab, &["produce t key=x", "poll nobody"]);
    assert!(res.starts_with("HTTP/1.1 422"), "{res}");
    assert_eq!(records(&lab, "t"), before, "after an undo");
    drop(lab); // kill -9

    let lab = start(&data);
    assert!(
        lab.banner.contains("lab restored: unclean stop"),
        "{}",
        lab.banner
    );
    assert_eq!(records(&lab, "t"), before, "after kill -9");
    let again = http(&lab.addr, "GET", "/api/scenario", "").expect("export");
    assert_eq!(
        again.split_once("\r\n\r\n").map(|(_, b)| b),
        export.split_once("\r\n\r\n").map(|(_, b)| b),
        "the export is the same"
    );
    // And the export replays to the same lab.
    let body = export
        .split_once("\r\n\r\n")
        .map(|(_, b)| b)
        .expect("body")
        .to_string();
    let fresh = tempfile::tempdir().expect("tempdir");
    let other = start(&fresh.path().display().to_string());
    let res = http(&other.addr, "POST", "/api/scenario", &body).expect("import");
    assert!(res.starts_with("HTTP/1.1 200"), "{res}");
    assert_eq!(records(&other, "t"), before, "an import of the export");
    assert_eq!(
        get(&other, "/api/state")["groups"]["my group #1"]["committed"],
        group_before["committed"]
    );
}

/// `offsetlab ARGS` that must refuse to start and exit: a server that starts instead is killed
/// after [`REFUSAL`] and fails the test with what it printed, rather than hang the suite (it did
/// once, unexplained: a `serve` that should have refused a corrupted history started).
fn refused_start(args: &[&str]) -> std::process::Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("run offsetlab");
    let until = std::time::Instant::now() + REFUSAL;
    while std::time::Instant::now() < until {
        if child.try_wait().expect("try_wait").is_some() {
            return child.wait_with_output().expect("output");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let out = child.wait_with_output().expect("output");
    panic!(
        "offsetlab {args:?} started instead of refusing within {REFUSAL:?}: stdout {:?}, stderr {:?}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// How long a start that must be refused may take to exit.
const REFUSAL: std::time::Duration = std::time::Duration::from_secs(30);

/// A history that cannot be read back stops the start: the file and line are named, the data
/// directory is left byte for byte as it was, and the seed never takes the lab's place.
#[test]
fn a_lab_that_cannot_be_restored_is_never_replaced() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let lab = start(&data);
    assert!(act(&lab, &["topic mine", "produce mine count=3"]).starts_with("HTTP/1.1 200"));
    stop(lab);
    let current = std::fs::read_to_string(dir.path().join("lab/current")).expect("current");
    let generation = dir.path().join(format!(
        "lab/gen-{:06}",
        current.trim().parse::<u64>().expect("number")
    ));
    let history = generation.join("history.scenario");
    let text = std::fs::read_to_string(&history).expect("history");
    let line = text
        .lines()
        .position(|l| l.starts_with("produce mine"))
        .expect("the line")
        + 1;
    // The same length, so the snapshot's byte count still holds: only the line is wrong.
    std::fs::write(
        &history,
        text.replace("produce mine count=3", "produce mine cxunt=3"),
    )
    .expect("corrupt");
    // Starting the lab on that data directory: refused every time.
    let start = || {
        refused_start(&[
            "serve",
            "--data",
            &data,
            "--http",
            "127.0.0.1:0",
            "--kafka",
            "off",
        ])
    };
    let before = snapshot(dir.path());
    let out = start();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "it refused to start");
    assert!(err.contains("history.scenario"), "{err}");
    assert!(err.contains(&format!("line {line}")), "{err}");
    assert!(err.contains("unknown option 'cxunt'"), "{err}");
    assert!(err.contains("--reset-data"), "{err}");
    assert_eq!(
        snapshot(dir.path()),
        before,
        "nothing in the data directory changed"
    );
    // A snapshot slot garbled the same way: also refused, also untouched.
    std::fs::write(&history, &text).expect("repair");
    for slot in ["lab.json.0", "lab.json.1"] {
        std::fs::write(generation.join(slot), b"garbage").expect("garble");
    }
    let before = snapshot(dir.path());
    let out = start();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("lab.json"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(snapshot(dir.path()), before);
    // The way out is asked for by name.
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0", "--reset-data"]);
    let topics: Vec<String> = get(&lab, "/api/state")["topics"]
        .as_array()
        .expect("topics")
        .iter()
        .map(|t| t["name"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(topics, ["orders"], "a new lab, from the seed");
}

/// Generations an interrupted undo or import left behind are removed at the next start.
#[test]
fn abandoned_generations_are_removed_at_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let lab = start(&data);
    assert!(act(&lab, &["produce orders count=2"]).starts_with("HTTP/1.1 200"));
    drop(lab);
    let stray = dir.path().join("lab/gen-999999");
    std::fs::create_dir_all(stray.join("logs/orders-0")).expect("stray");
    std::fs::write(
        stray.join("logs/orders-0/00000000000000000000.log"),
        vec![0u8; 4096],
    )
    .expect("stray");
    let lab = start(&data);
    assert!(!stray.exists(), "{}", lab.banner);
    assert!(
        lab.banner
            .contains("gen-999999: an abandoned generation, removed"),
        "{}",
        lab.banner
    );
    assert_eq!(records(&lab, "orders").len(), 14);
}

/// Copies a directory tree (the fixture is never started in place: a start changes files).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for e in std::fs::read_dir(from).expect("read_dir") {
        let e = e.expect("entry");
        let target = to.join(e.file_name());
        if e.path().is_dir() {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy");
        }
    }
}

/// A data directory written by offsetlab 0.1.0 (`tests/fixtures/lab-0.1.0/data`: topics made by
/// the page and by kcat, a `.hidden` topic, stored client batches with headers, a compacted
/// topic, deleted records, lab consumers with every sink, a real client's group, odd keys and
/// group ids) restores to the same lab: the same export, line for line, and the same state.
/// A deliberate change to what the state shows updates `state.json` (start that version on a
/// copy of `data`, `GET /api/state`, drop `version` and `storage.dir`); the export may only
/// change together with a migration.
#[test]
fn a_lab_written_by_0_1_0_restores_to_the_same_lab() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lab-0.1.0");
    let dir = tempfile::tempdir().expect("tempdir");
    copy_tree(&fixture.join("data"), dir.path());
    let lab = start(&dir.path().display().to_string());
    assert!(lab.banner.contains("lab restored"), "{}", lab.banner);
    let export = http(&lab.addr, "GET", "/api/scenario", "").expect("export");
    let body = export.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    let expected = std::fs::read_to_string(fixture.join("export.scenario")).expect("export");
    assert_eq!(body, expected, "the export of the restored lab");
    let mut state = get(&lab, "/api/state");
    let o = state.as_object_mut().expect("object");
    o.remove("version");
    o.get_mut("storage")
        .and_then(|s| s.as_object_mut())
        .expect("storage")
        .remove("dir");
    // The restart adds one line to the narrative: that it restarted.
    let events = o["narrative"]["events"].as_array_mut().expect("events");
    let last = events.pop().expect("the restart's event");
    assert!(
        last["text"].as_str().is_some_and(|t| t.contains("restarted")),
        "{last}"
    );
    let total = o["narrative"]["total"].as_u64().expect("total");
    o.get_mut("narrative").expect("narrative")["total"] = (total - 1).into();
    let expected: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture.join("state.json")).expect("state"))
            .expect("json");
    assert_eq!(state, expected, "the state of the restored lab");
}
