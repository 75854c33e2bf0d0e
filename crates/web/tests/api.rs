//! The HTTP API over a real socket: what a browser (or an attacker's page) can send.

use offsetlab_web::session::{Session, SinkBackend};
use offsetlab_web::{router, AppState};
use std::sync::{Arc, Mutex};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn start() -> std::net::SocketAddr {
    let session = Session::new(SinkBackend::Memory, offsetlab_scenario::LAB_SCENARIO).expect("seed");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let state = AppState::new(Arc::new(Mutex::new(session)), addr, false);
    tokio::spawn(async move {
        let _ = axum::serve(listener, router(state)).await;
    });
    addr
}

/// Sends one raw HTTP/1.1 request and returns (status, body).
async fn raw(addr: std::net::SocketAddr, request: String) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn get(_addr: std::net::SocketAddr, host: &str, path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n")
}

fn post(addr: std::net::SocketAddr, path: &str, body: &str, extra: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn a_foreign_host_is_refused_dns_rebinding() {
    let addr = start().await;
    let (status, body) = raw(addr, get(addr, "attacker.example:7070", "/api/state")).await;
    assert_eq!(status, 403);
    assert!(body.contains("is not this lab"), "{body}");
    let (status, _) = raw(
        addr,
        get(addr, &format!("localhost:{}", addr.port()), "/api/state"),
    )
    .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_foreign_origin_cannot_drive_the_lab() {
    let addr = start().await;
    let req = post(
        addr,
        "/api/actions",
        r#"{"lines":["crash c1"]}"#,
        "Origin: http://attacker.example\r\n",
    );
    let (status, body) = raw(addr, req).await;
    assert_eq!(status, 403, "{body}");
    let same = post(
        addr,
        "/api/actions",
        r#"{"lines":["poll c1"]}"#,
        &format!("Origin: http://{addr}\r\n"),
    );
    assert_eq!(raw(addr, same).await.0, 200);
}

#[tokio::test]
async fn bad_requests_get_json_errors() {
    let addr = start().await;
    let (status, body) = raw(addr, post(addr, "/api/actions", "{not json", "")).await;
    assert_eq!(status, 400);
    let v: serde_json::Value = serde_json::from_str(&body).expect("json error");
    assert!(
        v["error"]
            .as_str()
            .is_some_and(|e| e.contains("malformed request body")),
        "{v}"
    );
    let (status, body) = raw(
        addr,
        post(addr, "/api/actions", r#"{"lines":["poll c1","tick -5s"]}"#, ""),
    )
    .await;
    assert_eq!(status, 400);
    let v: serde_json::Value = serde_json::from_str(&body).expect("json error");
    assert_eq!(v["line"], 2);
    let (status, body) = raw(addr, get(addr, &addr.to_string(), "/api/nothing")).await;
    assert_eq!(status, 404);
    assert!(body.contains("no such endpoint"));
}

#[tokio::test]
async fn bodies_are_bounded() {
    let addr = start().await;
    let huge = format!(
        r#"{{"lines":["{}"]}}"#,
        "x".repeat(offsetlab_web::MAX_BODY_BYTES + 10)
    );
    let (status, _) = raw(addr, post(addr, "/api/actions", &huge, "")).await;
    assert_eq!(status, 413);
}

#[tokio::test]
async fn records_are_paged_never_the_whole_log() {
    let addr = start().await;
    let (status, _) = raw(
        addr,
        post(
            addr,
            "/api/actions",
            r#"{"lines":["produce orders count=5000"]}"#,
            "",
        ),
    )
    .await;
    assert_eq!(status, 200);
    let (status, body) = raw(
        addr,
        get(
            addr,
            &addr.to_string(),
            "/api/records?topic=orders&partition=0&from=100&limit=100000",
        ),
    )
    .await;
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    let records = v["records"].as_array().expect("records");
    assert_eq!(records.len(), offsetlab_web::MAX_PAGE);
    assert_eq!(records[0]["offset"], 100);
    assert_eq!(v["log_end_offset"], 5012);
    let (status, _) = raw(addr, get(addr, &addr.to_string(), "/api/records?topic=nope")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn state_is_the_run_json_plus_page_extras_and_export_round_trips() {
    let addr = start().await;
    let lines = r#"{"lines":["poll c1","process c1 count=all","tick 5s"]}"#;
    assert_eq!(raw(addr, post(addr, "/api/actions", lines, "")).await.0, 200);
    let (_, body) = raw(addr, get(addr, &addr.to_string(), "/api/state")).await;
    let v: serde_json::Value = serde_json::from_str(&body).expect("json");
    let g = &v["groups"]["analytics-prod"];
    assert_eq!(g["committed"]["orders-0"], 4);
    assert_eq!(g["sink"]["rows"], 4);
    for extra in ["version", "narrative", "sink_rows", "consumer_offsets_records"] {
        assert!(v.get(extra).is_some(), "{extra}");
    }
    let (status, text) = raw(addr, get(addr, &addr.to_string(), "/api/scenario")).await;
    assert_eq!(status, 200);
    let replayed = offsetlab_scenario::runner::run_source(&text).expect("export replays");
    let view = replayed.lab.view().expect("view");
    assert_eq!(serde_json::to_value(&view.groups).expect("json"), v["groups"]);
}
