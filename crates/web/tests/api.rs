//! The HTTP API over a real socket: what a browser (or an attacker's page) can send.

use offsetlab_lab::session::{Session, SinkBackend};
use offsetlab_web::{router, AppState};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

async fn start() -> std::net::SocketAddr {
    start_with(&[]).await
}

/// The lab's own HTTP server (`offsetlab_web::http`) on a free port, answering `public_hosts`
/// besides its loopback names.
async fn start_with(public_hosts: &[String]) -> std::net::SocketAddr {
    let session = Session::new(SinkBackend::Memory, offsetlab_scenario::LAB_SCENARIO).expect("seed");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let state = AppState::new(offsetlab_lab::LabHandle::new(session), addr, public_hosts);
    tokio::spawn(async move {
        let _ = offsetlab_web::http::serve(
            listener,
            router(state),
            offsetlab_web::http::HttpLimits::default(),
            std::future::pending(),
        )
        .await;
    });
    addr
}

/// Sends one raw HTTP/1.1 request and returns the whole response.
async fn raw_response(addr: std::net::SocketAddr, request: String) -> String {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    // Nothing more to send: a server waiting for a body it refused sees the end at once.
    let _ = s.shutdown().await;
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    String::from_utf8_lossy(&out).into_owned()
}

/// Sends one raw HTTP/1.1 request and returns (status, body).
async fn raw(addr: std::net::SocketAddr, request: String) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    // Nothing more to send: a server waiting for a body it refused sees the end at once.
    let _ = s.shutdown().await;
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

/// No page may frame the lab (clickjacking), and every error — axum's own included — has a
/// JSON body.
#[tokio::test]
async fn every_response_forbids_framing_and_every_error_is_json() {
    let addr = start().await;
    let page = raw_response(addr, get(addr, &addr.to_string(), "/")).await;
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    let head = page
        .split("\r\n\r\n")
        .next()
        .unwrap_or_default()
        .to_ascii_lowercase();
    assert!(head.contains("x-frame-options: deny"), "{head}");
    assert!(
        head.contains("content-security-policy: frame-ancestors 'none'"),
        "{head}"
    );
    let cases = [
        format!("PUT /api/state HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"),
        get(addr, &addr.to_string(), "/api/records?topic=orders&partition=x"),
        get(addr, &addr.to_string(), &format!("/api/records?topic={}", "t".repeat(20_000))),
        format!("POST /api/actions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: text/plain\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi"),
        format!("POST /api/actions HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 9000000\r\nConnection: close\r\n\r\n{{"),
    ];
    for request in cases {
        let (status, body) = raw(addr, request.clone()).await;
        assert!(status >= 400, "{status} for {}", &request[..40]);
        let json: serde_json::Value = serde_json::from_str(&body)
            .unwrap_or_else(|e| panic!("{status} has no JSON body ({e}): {body:?}"));
        assert!(json["error"].is_string(), "{json}");
    }
}

/// Two `Host` headers are refused, whatever the first says.
#[tokio::test]
async fn a_second_host_header_is_refused() {
    let addr = start().await;
    let request = format!(
        "GET /api/state HTTP/1.1\r\nHost: {addr}\r\nHost: attacker.example\r\nConnection: close\r\n\r\n"
    );
    let (status, body) = raw(addr, request).await;
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("more than one Host"), "{body}");
}

/// With `--public-host`, the lab answers that name — and still no other.
#[tokio::test]
async fn a_public_host_is_answered_and_no_other() {
    let addr = start_with(&["Lab.Example".to_string(), "10.0.0.5:8080".to_string()]).await;
    let port = addr.port();
    for (host, want) in [
        (format!("lab.example:{port}"), 200),
        ("10.0.0.5:8080".to_string(), 200),
        (format!("10.0.0.5:{port}"), 403),
        (format!("attacker.example:{port}"), 403),
    ] {
        let (status, _) = raw(addr, get(addr, &host, "/api/state")).await;
        assert_eq!(status, want, "{host}");
    }
}

/// A refused line is named in its error, not echoed whole; a value of a window is cut, and the
/// record is there whole at its own address.
#[tokio::test]
async fn large_things_come_back_small_unless_asked_for_whole() {
    let addr = start().await;
    let long_line = format!("produce orders key={}", "k".repeat(200_000));
    let body = serde_json::json!({ "lines": ["poll c1", long_line, "bogus"] }).to_string();
    let (status, response) = raw(addr, post(addr, "/api/actions", &body, "")).await;
    assert_eq!(status, 400, "{}", &response[..response.len().min(300)]);
    assert!(response.len() < 2_000, "an error of {} bytes", response.len());
    let value = "v".repeat(100_000);
    let line = format!(r#"produce orders key=big value="\"{value}\"""#);
    let body = serde_json::json!({ "lines": [line] }).to_string();
    let (status, _) = raw(addr, post(addr, "/api/actions", &body, "")).await;
    assert_eq!(status, 200);
    let (status, page) = raw(
        addr,
        get(
            addr,
            &addr.to_string(),
            "/api/records?topic=orders&from=12&limit=1",
        ),
    )
    .await;
    assert_eq!(status, 200);
    let page: serde_json::Value = serde_json::from_str(&page).expect("json");
    let r = &page["records"][0];
    assert!(r["value"].as_str().is_some_and(|v| v.len() <= 4096), "cut");
    assert_eq!(r["value_bytes"], 100_002);
    let (status, whole) = raw(
        addr,
        get(addr, &addr.to_string(), "/api/record?topic=orders&offset=12"),
    )
    .await;
    assert_eq!(status, 200);
    let whole: serde_json::Value = serde_json::from_str(&whole).expect("json");
    assert_eq!(whole["value"].as_str().map(str::len), Some(100_002));
    let (status, _) = raw(
        addr,
        get(addr, &addr.to_string(), "/api/record?topic=orders&offset=99"),
    )
    .await;
    assert_eq!(status, 404);
}
