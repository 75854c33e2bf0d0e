//! Round trips of the web lab's API with a 10-million-record topic, over a real socket.
//!
//! Starts the server in-process (in-memory sinks), produces ten million orders, then times the
//! requests a learner's clicks make: an action (`POST /api/actions`, which answers with the new
//! state) and a page of the log (`GET /api/records`). Prints p50 / p95 / p99 / max.
//! Run with `cargo bench -p offsetlab-web`; figures go to docs/BENCHMARKS.md.

use offsetlab_lab::session::{Session, SinkBackend};
use offsetlab_web::{router, AppState};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const RECORDS: u64 = 10_000_000;
const ROUNDS: usize = 200;

async fn request(addr: std::net::SocketAddr, req: &str) -> (u16, usize) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(req.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.expect("read");
    let status = String::from_utf8_lossy(&out[..12.min(out.len())])
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (status, out.len())
}

fn post(addr: std::net::SocketAddr, body: &str) -> String {
    format!(
        "POST /api/actions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

fn report(what: &str, mut times: Vec<Duration>, bytes: usize) {
    times.sort();
    let at = |q: f64| times[((times.len() as f64 * q) as usize).min(times.len() - 1)].as_secs_f64() * 1000.0;
    println!(
        "{what:<58} p50 {:>6.2} ms  p95 {:>6.2} ms  p99 {:>6.2} ms  max {:>6.2} ms  ({} requests, {} bytes each)",
        at(0.50), at(0.95), at(0.99), at(1.0), times.len(), bytes
    );
}

#[tokio::main]
async fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo test --benches` asks benches to list themselves
    }
    let session = Session::new(SinkBackend::Memory, offsetlab_scenario::LAB_SCENARIO).expect("seed");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let state = AppState::new(offsetlab_lab::LabHandle::new(session), addr, &[]);
    tokio::spawn(async move {
        let _ = axum::serve(listener, router(state)).await;
    });

    let t = Instant::now();
    let (status, _) = request(
        addr,
        &post(
            addr,
            &format!(r#"{{"lines":["produce orders count={RECORDS}"]}}"#),
        ),
    )
    .await;
    assert_eq!(status, 200);
    println!(
        "produce {RECORDS} orders in one action: {:.2} s",
        t.elapsed().as_secs_f64()
    );

    let mut actions = Vec::with_capacity(ROUNDS);
    let mut size = 0;
    for i in 0..ROUNDS {
        let body = if i % 2 == 0 {
            r#"{"lines":["poll c1"]}"#
        } else {
            r#"{"lines":["process c1 count=all","tick 1s"]}"#
        };
        let t = Instant::now();
        let (status, bytes) = request(addr, &post(addr, body)).await;
        actions.push(t.elapsed());
        assert_eq!(status, 200);
        size = bytes;
    }
    report(
        "POST /api/actions (poll / process+tick), state in reply",
        actions,
        size,
    );

    let mut pages = Vec::with_capacity(ROUNDS);
    for i in 0..ROUNDS {
        let from = (i as u64 * 49_999) % RECORDS;
        let req = format!("GET /api/records?topic=orders&partition=0&from={from}&limit=48 HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        let t = Instant::now();
        let (status, bytes) = request(addr, &req).await;
        pages.push(t.elapsed());
        assert_eq!(status, 200);
        size = bytes;
    }
    report(
        "GET /api/records (a window of 48 anywhere in the log)",
        pages,
        size,
    );

    let mut states = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let req = format!("GET /api/state HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        let t = Instant::now();
        let (status, bytes) = request(addr, &req).await;
        states.push(t.elapsed());
        assert_eq!(status, 200);
        size = bytes;
    }
    report("GET /api/state", states, size);

    // The group jumps to the end of the 10M log: the audit now spans ten million offsets.
    let (status, _) = request(
        addr,
        &post(addr, r#"{"lines":["seek c1 to=latest","commit c1","poll c1"]}"#),
    )
    .await;
    assert_eq!(status, 200);
    let mut far = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let t = Instant::now();
        let (status, bytes) = request(addr, &post(addr, r#"{"lines":["tick 1s"]}"#)).await;
        far.push(t.elapsed());
        assert_eq!(status, 200);
        size = bytes;
    }
    report("POST /api/actions after skipping 10M records (tick)", far, size);
}
