//! `offsetlab serve` as a process: it refuses to listen beyond loopback unless asked, and a lab
//! restarted on the same data directory picks up its session.

mod common;

use common::{http, ok_json, serve};
use std::process::Command;

fn committed(addr: &str) -> serde_json::Value {
    let v = ok_json(&http(addr, "GET", "/api/state", "").expect("state")).expect("200");
    v["groups"]["analytics-prod"]["committed"]["orders-0"].clone()
}

#[test]
fn it_listens_on_loopback_only_unless_told_otherwise() {
    let out = Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args(["serve", "--ephemeral", "--http", "0.0.0.0:0"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
}

#[test]
fn a_restarted_lab_picks_up_its_session() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    {
        let lab = serve(&["--data", &data, "--http", "127.0.0.1:0"]);
        assert_eq!(committed(&lab.addr), 0);
        let res = http(
            &lab.addr,
            "POST",
            "/api/actions",
            r#"{"lines":["poll c1","process c1 count=all","tick 5s"]}"#,
        )
        .expect("actions");
        assert!(res.starts_with("HTTP/1.1 200"), "{res}");
        assert_eq!(committed(&lab.addr), 4);
    }
    assert!(
        !dir.path().join("session.scn").exists(),
        "the history lives in the generation, appended to, not rewritten beside it"
    );
    let current = std::fs::read_to_string(dir.path().join("lab").join("current")).expect("current");
    let generation = dir.path().join("lab").join(format!(
        "gen-{:06}",
        current.trim().parse::<u64>().expect("number")
    ));
    assert!(
        generation
            .join("sinks")
            .join("sink-analytics-prod.sqlite")
            .exists(),
        "a real SQLite sink"
    );
    assert!(
        generation
            .join("logs")
            .join("orders-0")
            .join("00000000000000000000.log")
            .exists(),
        "a real segment file"
    );
    assert!(
        generation.join("lab.json.0").exists() && generation.join("lab.json.1").exists(),
        "the lab's snapshot, in two slots"
    );
    let history = std::fs::read_to_string(generation.join("history.scenario")).expect("history");
    assert!(
        history.ends_with("poll c1\nprocess c1 count=all\ntick 5s\n"),
        "the history ends with the last action: {history}"
    );
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0"]);
    assert_eq!(
        committed(&lab.addr),
        4,
        "the lab was restored from disk after the kill"
    );
    assert!(
        lab.banner.contains("lab restored: unclean stop"),
        "{}",
        lab.banner
    );
}
