//! `offsetlab serve` as a process: it refuses to listen beyond loopback unless asked, and a lab
//! restarted on the same data directory picks up its session.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

struct Lab {
    child: Child,
    addr: String,
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(args: &[&str]) -> Lab {
    let mut child = Command::new(env!("CARGO_BIN_EXE_offsetlab"))
        .arg("serve")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).expect("first line");
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address in {line:?}"))
        .to_string();
    Lab { child, addr }
}

fn http(addr: &str, method: &str, path: &str, body: &str) -> String {
    let mut s = TcpStream::connect(addr).expect("connect");
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).expect("write");
    let mut out = String::new();
    s.read_to_string(&mut out).expect("read");
    out
}

fn committed(addr: &str) -> serde_json::Value {
    let res = http(addr, "GET", "/api/state", "");
    let body = res.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    let v: serde_json::Value = serde_json::from_str(body).expect("state json");
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
        );
        assert!(res.starts_with("HTTP/1.1 200"), "{res}");
        assert_eq!(committed(&lab.addr), 4);
    }
    assert!(dir.path().join("session.scn").exists());
    let current = std::fs::read_to_string(dir.path().join("lab").join("current")).expect("current");
    let generation = dir
        .path()
        .join("lab")
        .join(format!("gen-{:06}", current.trim().parse::<u64>().expect("number")));
    assert!(
        generation.join("sinks").join("sink-analytics-prod.sqlite").exists(),
        "a real SQLite sink"
    );
    assert!(
        generation.join("logs").join("orders-0").join("00000000000000000000.log").exists(),
        "a real segment file"
    );
    assert!(generation.join("lab.json").exists(), "the lab's snapshot");
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0"]);
    assert_eq!(committed(&lab.addr), 4, "the lab was restored from disk after the kill");
}
