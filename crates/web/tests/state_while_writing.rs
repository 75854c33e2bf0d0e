//! The page's view does not wait behind writes: `GET /api/state` answered while another thread
//! holds the lab's write path in the middle of a change (as a long scenario line or a Produce's
//! save holds it) — with the state before that change, never part of it — and `/api/events`
//! announcing a version only once its state is built, so the page's request for it is answered
//! at once too.
//!
//! Nothing here waits for time: the holder keeps the write path until it is told the requests
//! were answered, so a request that waited for it would never be answered — the timeouts only
//! turn such a hang into a failure.

use offsetlab_lab::session::{Session, SinkBackend};
use offsetlab_lab::LabHandle;
use offsetlab_web::{router, AppState};
use std::sync::mpsc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// Long enough for any request on any machine; one that waits for the write path never ends.
const HANG: Duration = Duration::from_secs(30);

/// The lab's HTTP server on a free port, and its lab.
async fn start() -> (std::net::SocketAddr, LabHandle) {
    let session = Session::new(SinkBackend::Memory, offsetlab_scenario::LAB_SCENARIO).expect("seed");
    let lab = LabHandle::new(session);
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let state = AppState::new(lab.clone(), addr, &[]);
    tokio::spawn(async move {
        let _ = offsetlab_web::http::serve(
            listener,
            router(state),
            offsetlab_web::http::HttpLimits::default(),
            std::future::pending(),
        )
        .await;
    });
    (addr, lab)
}

/// `GET path`: the status and the JSON body.
async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, serde_json::Value) {
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    let answer = async {
        let mut s = TcpStream::connect(addr).await.expect("connect");
        s.write_all(request.as_bytes()).await.expect("write");
        let mut out = Vec::new();
        let _ = s.read_to_end(&mut out).await;
        String::from_utf8_lossy(&out).into_owned()
    };
    let text = tokio::time::timeout(HANG, answer)
        .await
        .expect("answered while the write path is held");
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or_default();
    (status, serde_json::from_str(body).unwrap_or_default())
}

/// A thread holding the write path: the lab locked, `lines` applied and not yet let go.
struct Holder {
    release: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Holder {
    fn start(lab: &LabHandle, lines: &[&str]) -> Self {
        let lab = lab.clone();
        let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
        let (held, holding) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut s = lab.lock_for_change();
            s.apply_lines(&lines).expect("the lines apply");
            held.send(()).expect("the test waits");
            let _ = released.recv();
            lab.changed(&mut s).expect("saved");
        });
        holding.recv().expect("the holder holds the write path");
        Self { release, thread }
    }

    fn release(self) {
        let _ = self.release.send(());
        self.thread.join().expect("the holder let go");
    }
}

/// The records `orders` holds, as the state's figures show them.
fn orders_end(state: &serde_json::Value) -> Option<i64> {
    state["topics"]
        .as_array()?
        .iter()
        .find(|t| t["name"] == "orders")?["partitions"][0]["log_end_offset"]
        .as_i64()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_view_is_served_while_a_long_line_holds_the_write_path() {
    let (addr, lab) = start().await;
    let (status, before) = get(addr, "/api/state").await;
    assert_eq!(status, 200);
    let version = before["version"].as_u64().expect("a version");
    assert_eq!(orders_end(&before), Some(12), "{before}");
    let holder = Holder::start(&lab, &["produce orders count=5 partition=0"]);
    // Asked as a tool asks (the state at the version the lab has): the state before the change.
    let (status, held) = get(addr, "/api/state").await;
    assert_eq!(status, 200);
    assert_eq!(held["version"].as_u64(), Some(version));
    assert_eq!(orders_end(&held), Some(12), "none of the change in progress");
    holder.release();
    let (_, after) = get(addr, "/api/state").await;
    assert!(after["version"].as_u64() > Some(version));
    assert_eq!(orders_end(&after), Some(17));
}

/// Reads the event stream until a `state` event of at least `version`; its version.
async fn announced(events: &mut TcpStream, seen: &mut String, version: u64) -> u64 {
    let read = async {
        loop {
            let newest = seen
                .split("event: state\ndata: {\"version\":")
                .skip(1)
                .filter_map(|rest| rest.split('}').next()?.parse::<u64>().ok())
                .max();
            if let Some(v) = newest.filter(|v| *v >= version) {
                return v;
            }
            let mut chunk = [0u8; 4096];
            let n = events.read(&mut chunk).await.expect("the event stream");
            assert!(n > 0, "the event stream ended");
            seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    };
    tokio::time::timeout(HANG, read).await.expect("announced")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_told_a_version_is_sent_its_state_while_the_write_path_is_held() {
    let (addr, lab) = start().await;
    let mut events = TcpStream::connect(addr).await.expect("connect");
    let request = format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\n\r\n");
    events.write_all(request.as_bytes()).await.expect("subscribe");
    let mut seen = String::new();
    // The stream is open once its headers came back: a change after that is announced.
    let open = async {
        while !seen.contains("\r\n\r\n") {
            let mut chunk = [0u8; 1024];
            let n = events.read(&mut chunk).await.expect("headers");
            assert!(n > 0);
            seen.push_str(&String::from_utf8_lossy(&chunk[..n]));
        }
    };
    tokio::time::timeout(HANG, open).await.expect("the stream opened");
    let version = lab.view().version();
    Holder::start(&lab, &["produce orders count=2 partition=0"]).release();
    let told = announced(&mut events, &mut seen, version + 1).await;
    // A change in progress holds the write path; the page asks for what it was told.
    let holder = Holder::start(&lab, &["produce orders count=5 partition=0", "tick 1s"]);
    let (status, state) = get(addr, &format!("/api/state?min_version={told}")).await;
    assert_eq!(status, 200);
    assert_eq!(state["version"].as_u64(), Some(told));
    assert_eq!(orders_end(&state), Some(14));
    holder.release();
    let told_again = announced(&mut events, &mut seen, told + 1).await;
    let (_, state) = get(addr, &format!("/api/state?min_version={told_again}")).await;
    assert_eq!(orders_end(&state), Some(19));
    let (status, refused) = get(addr, "/api/state?min_version=soon").await;
    assert_eq!(status, 400, "{refused}");
}
