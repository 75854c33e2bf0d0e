//! `offsetlab serve --workshop` as an instructor starts it: what it prints, the Kafka listener
//! off unless asked for, the instructor's own lab when it is, a token file, and the refusals.

#[macro_use]
mod common;

use common::{offsetlab, serve};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};

/// One request with extra header lines; the raw response.
fn http(addr: &str, method: &str, path: &str, body: &str, extra: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out
}

fn token_of(banner: &str) -> String {
    banner
        .split("#token=")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no token in {banner:?}"))
        .to_string()
}

#[test]
fn a_workshop_prints_the_instructors_url_and_runs_no_kafka_listener_unless_asked() {
    // Started as an instructor would, without --kafka: the listener is off.
    let mut child = Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .args(["serve", "--workshop", "--ephemeral", "--http", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let mut banner = String::new();
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    while !banner.contains("Ctrl-C") {
        let mut line = String::new();
        if reader.read_line(&mut line).expect("banner") == 0 {
            break;
        }
        banner.push_str(&line);
    }
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        banner.contains("offsetlab workshop on http://127.0.0.1:"),
        "{banner}"
    );
    assert!(banner.contains("0 of at most 100 learners joined"), "{banner}");
    assert_eq!(token_of(&banner).len(), 32, "a 128-bit token: {banner}");
    assert!(
        !banner.contains("Kafka listener"),
        "off in workshop mode: {banner}"
    );

    // With --kafka, the listener serves the instructor's own lab, which the room shows as 0.
    let lab = serve(&[
        "--workshop",
        "--ephemeral",
        "--http",
        "127.0.0.1:0",
        "--kafka",
        "127.0.0.1:0",
    ]);
    assert!(
        lab.banner.contains("serving the instructor's lab"),
        "{}",
        lab.banner
    );
    let auth = format!("Authorization: Bearer {}\r\n", token_of(&lab.banner));
    let room = http(&lab.addr, "GET", "/api/instructor/room", "", &auth);
    assert!(
        room.starts_with("HTTP/1.1 200") && room.contains("\"demo\":true"),
        "{room}"
    );
    let own = http(&lab.addr, "GET", "/api/instructor/learners/0/state", "", &auth);
    assert!(
        own.starts_with("HTTP/1.1 200") && own.contains("analytics-prod"),
        "{own}"
    );
    // The page's lab endpoints are the learners': without joining, refused.
    assert!(http(&lab.addr, "GET", "/api/state", "", "").starts_with("HTTP/1.1 401"));
}

#[test]
fn an_instructor_token_file_is_the_token_and_a_bad_one_stops_the_start() {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("token");
    std::fs::write(&file, "  our-class-token-2026-12 \n").expect("write");
    let path = file.display().to_string();
    let data = dir.path().join("data").display().to_string();
    let lab = serve(&[
        "--workshop",
        "--data",
        &data,
        "--http",
        "127.0.0.1:0",
        "--instructor-token-file",
        &path,
    ]);
    assert!(
        !lab.banner.contains("#token="),
        "a token from a file is not printed: {}",
        lab.banner
    );
    assert!(lab.banner.contains(&path), "{}", lab.banner);
    let room = http(
        &lab.addr,
        "GET",
        "/api/instructor/room",
        "",
        "Authorization: Bearer our-class-token-2026-12\r\n",
    );
    assert!(room.starts_with("HTTP/1.1 200"), "{room}");
    drop(lab);

    std::fs::write(&file, "short").expect("write");
    let out = offsetlab(&[
        "serve",
        "--workshop",
        "--data",
        &data,
        "--http",
        "127.0.0.1:0",
        "--instructor-token-file",
        &path,
    ]);
    assert_eq!(out.status.code(), Some(3));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--instructor-token-file") && err.contains("16 to 256"),
        "{err}"
    );
    let missing = dir.path().join("nope").display().to_string();
    let out = offsetlab(&[
        "serve",
        "--workshop",
        "--data",
        &data,
        "--instructor-token-file",
        &missing,
    ]);
    assert_eq!(out.status.code(), Some(3));
}

#[test]
fn workshop_flags_need_the_workshop_and_a_remote_room_needs_allow_remote() {
    let out = offsetlab(&["serve", "--max-learners", "5", "--ephemeral"]);
    assert_eq!(out.status.code(), Some(2), "a usage error");
    assert!(String::from_utf8_lossy(&out.stderr).contains("--workshop"));
    let out = offsetlab(&["serve", "--workshop", "--ephemeral", "--http", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--allow-remote"));
}

#[test]
fn learners_come_back_after_the_server_restarts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    let args = [
        "--workshop",
        "--data",
        &data,
        "--http",
        "127.0.0.1:0",
        "--clock",
        "paused",
    ];
    let lab = serve(&args);
    let joined = http(&lab.addr, "POST", "/api/workshop/join", r#"{"name":"Ada"}"#, "");
    let cookie = joined
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .expect("a cookie")
        .to_string();
    let who = format!("Cookie: {cookie}\r\n");
    let polled = http(
        &lab.addr,
        "POST",
        "/api/actions",
        r#"{"lines":["poll c1"]}"#,
        &who,
    );
    assert!(polled.starts_with("HTTP/1.1 200"), "{polled}");
    // kill -9: nothing closed cleanly.
    drop(lab);
    let lab = serve(&args);
    assert!(
        lab.banner.contains("1 of at most 100 learners joined"),
        "{}",
        lab.banner
    );
    let state = http(&lab.addr, "GET", "/api/scenario", "", &who);
    assert!(
        state.starts_with("HTTP/1.1 200") && state.contains("poll c1"),
        "{state}"
    );
}
