//! Workshop mode over a real socket: learners as browsers are (a cookie each), the instructor
//! with and without the token, and what a learner could try against another's lab.

use offsetlab_web::workshop::{RateLimit, Room, Token, Workshop, WorkshopConfig};
use offsetlab_web::{router, AppState};
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

const TOKEN: &str = "an-instructors-token-for-tests";

struct Server {
    addr: std::net::SocketAddr,
    workshop: Arc<Workshop>,
    _dir: tempfile::TempDir,
}

async fn start(tune: impl FnOnce(&mut WorkshopConfig)) -> Server {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut config = WorkshopConfig::new(dir.path().join("workshop"));
    config.clock = Some(offsetlab_lab::session::ClockMode::Paused);
    tune(&mut config);
    let room = Room::open(config).expect("room");
    let workshop = Arc::new(Workshop {
        room,
        token: Token::parse(TOKEN).expect("token"),
        demo: None,
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let state = AppState::workshop(Arc::clone(&workshop), addr, &[]);
    tokio::spawn(async move {
        let _ = offsetlab_web::http::serve(
            listener,
            router(state),
            offsetlab_web::http::HttpLimits::default(),
            std::future::pending(),
        )
        .await;
    });
    Server {
        addr,
        workshop,
        _dir: dir,
    }
}

struct Answer {
    status: u16,
    head: String,
    body: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }
}

/// One request; `who` is extra header lines (a cookie, a token).
async fn send(addr: std::net::SocketAddr, method: &str, path: &str, body: Option<&str>, who: &str) -> Answer {
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n{who}Connection: close\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(request.as_bytes()).await.expect("write");
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out).await;
    let text = String::from_utf8_lossy(&out).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    // A chunked body (the server streams some): good enough to take the JSON between the sizes.
    let body = if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        body.lines()
            .filter(|l| !l.is_empty() && u64::from_str_radix(l.trim(), 16).is_err())
            .collect::<Vec<_>>()
            .join("")
    } else {
        body.to_string()
    };
    Answer {
        status: head
            .split_whitespace()
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0),
        head: head.to_string(),
        body,
    }
}

/// Joins as `name`; the cookie header line to send as that learner.
async fn join(addr: std::net::SocketAddr, name: &str) -> String {
    let a = send(
        addr,
        "POST",
        "/api/workshop/join",
        Some(&serde_json::json!({ "name": name }).to_string()),
        "",
    )
    .await;
    assert_eq!(a.status, 201, "{}", a.body);
    let cookie = a
        .head
        .lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .expect("a cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().expect("pair");
    let id = pair.split_once('=').expect("id").1;
    assert_eq!(id.len(), 32, "128 bits of hex: {id}");
    format!("Cookie: {pair}\r\n")
}

async fn act(addr: std::net::SocketAddr, who: &str, lines: &[&str]) -> Answer {
    send(
        addr,
        "POST",
        "/api/actions",
        Some(&serde_json::json!({ "lines": lines }).to_string()),
        who,
    )
    .await
}

async fn state(addr: std::net::SocketAddr, who: &str) -> Value {
    let a = send(addr, "GET", "/api/state", None, who).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

fn instructor() -> String {
    format!("Authorization: Bearer {TOKEN}\r\n")
}

fn lost(state: &Value) -> u64 {
    state["groups"]["analytics-prod"]["audit"]["lost"]
        .as_u64()
        .expect("lost")
}

#[tokio::test]
async fn two_learners_have_separate_labs_and_neither_can_reach_the_others() {
    let s = start(|_| {}).await;
    let ada = join(s.addr, "Ada").await;
    let bob = join(s.addr, "Bob").await;
    assert_ne!(ada, bob);
    // Ada crashes her consumer after the auto-commit timer committed a polled batch.
    for lines in [&["poll c1"][..], &["tick 5s"], &["crash c1"]] {
        assert_eq!(act(s.addr, &ada, lines).await.status, 200);
    }
    let ada_state = state(s.addr, &ada).await;
    assert!(lost(&ada_state) > 0, "{}", ada_state["groups"]);
    let bob_before = state(s.addr, &bob).await;
    assert_eq!(lost(&bob_before), 0);
    assert_eq!(
        bob_before["history_lines"].as_u64(),
        Some(4),
        "Bob's lab is still the seed"
    );

    // No cookie, a forged id, a malformed one, a cookie that names another's number: refused,
    // nothing changed anywhere.
    let forged = format!("Cookie: offsetlab_learner={}\r\n", "0".repeat(32));
    let malformed = "Cookie: offsetlab_learner=../../etc\r\n".to_string();
    for who in ["", forged.as_str(), malformed.as_str()] {
        let a = act(s.addr, who, &["crash c1"]).await;
        assert_eq!(a.status, 401, "{}", a.body);
        assert_eq!(a.json()["join"], true);
        assert_eq!(send(s.addr, "GET", "/api/state", None, who).await.status, 401);
    }
    // A learner asking for another learner's lab through the instructor's API: refused.
    for path in [
        "/api/instructor/learners/2/state",
        "/api/instructor/learners/2/scenario",
        "/api/instructor/room",
    ] {
        let a = send(s.addr, "GET", path, None, &ada).await;
        assert_eq!(a.status, 401, "{path}: {}", a.body);
    }
    let bob_after = state(s.addr, &bob).await;
    assert_eq!(bob_after["version"], bob_before["version"]);
    assert_eq!(bob_after["groups"], bob_before["groups"]);
    assert_eq!(state(s.addr, &ada).await["version"], ada_state["version"]);
    // Each export is its own lab's.
    let export = send(s.addr, "GET", "/api/scenario", None, &ada).await;
    assert!(export.body.contains("crash c1"), "{}", export.body);
    assert!(!send(s.addr, "GET", "/api/scenario", None, &bob)
        .await
        .body
        .contains("crash c1"));
}

#[tokio::test]
async fn a_full_room_refuses_a_join_and_changes_nothing() {
    let s = start(|c| c.max_learners = 2).await;
    let ada = join(s.addr, "Ada").await;
    join(s.addr, "Bob").await;
    let a = send(s.addr, "POST", "/api/workshop/join", Some(r#"{"name":"Cy"}"#), "").await;
    assert_eq!(a.status, 503, "{}", a.body);
    assert!(
        a.json()["error"].as_str().unwrap_or("").contains("room is full"),
        "{}",
        a.body
    );
    assert!(!a.head.to_ascii_lowercase().contains("set-cookie"));
    assert_eq!(s.workshop.room.len(), 2);
    // Joining again from a browser that joined keeps its lab.
    let again = send(
        s.addr,
        "POST",
        "/api/workshop/join",
        Some(r#"{"name":"Ada 2"}"#),
        &ada,
    )
    .await;
    assert_eq!((again.status, again.json()["number"].as_u64()), (200, Some(1)));
    // A bad name: refused, nobody added.
    let s2 = start(|_| {}).await;
    for name in ["", "   ", "a\u{7}b", &"x".repeat(65)] {
        let a = send(
            s2.addr,
            "POST",
            "/api/workshop/join",
            Some(&serde_json::json!({ "name": name }).to_string()),
            "",
        )
        .await;
        assert_eq!(a.status, 400, "{name:?}: {}", a.body);
    }
    assert!(s2.workshop.room.is_empty());
}

#[tokio::test]
async fn a_cap_refuses_the_change_naming_it_and_nothing_changes() {
    let s = start(|c| {
        c.caps.records = 100;
        c.caps.consumers = 2;
        c.max_request_bytes = 4096;
    })
    .await;
    let ada = join(s.addr, "Ada").await;
    let before = state(s.addr, &ada).await;
    let a = act(
        s.addr,
        &ada,
        &["produce orders count=10", "produce orders count=80"],
    )
    .await;
    assert_eq!(a.status, 403, "{}", a.body);
    let e = a.json();
    assert!(e["error"].as_str().unwrap_or("").contains("records cap"), "{e}");
    assert_eq!(e["line"], 2);
    let a = act(
        s.addr,
        &ada,
        &[
            "consumer c2 group=g topic=orders",
            "consumer c3 group=g topic=orders",
        ],
    )
    .await;
    assert_eq!(a.status, 403);
    assert!(a.body.contains("consumers cap"), "{}", a.body);
    // An import too large for the lab, and a request body past the learner's limit.
    let big = "topic t\nproduce t count=101\n";
    let a = send(s.addr, "POST", "/api/scenario", Some(big), &ada).await;
    assert_eq!(a.status, 403, "{}", a.body);
    let huge = format!("# {}\n", "x".repeat(5000));
    assert_eq!(
        send(s.addr, "POST", "/api/scenario", Some(&huge), &ada)
            .await
            .status,
        413
    );
    let after = state(s.addr, &ada).await;
    assert_eq!(after["version"], before["version"]);
    assert_eq!(after["topics"], before["topics"]);
    // Within the caps all is well (`__consumer_offsets` counts too: the seed's reset and
    // group records).
    assert_eq!(act(s.addr, &ada, &["produce orders count=80"]).await.status, 200);
}

#[tokio::test]
async fn the_instructor_sees_every_learner_their_step_and_the_quiz_tallies() {
    let s = start(|_| {}).await;
    let ada = join(s.addr, "Ada <script>alert(1)</script>").await;
    let bob = join(s.addr, "Bob").await;
    let steps = offsetlab_scenario::lessons::steps(&offsetlab_scenario::lessons::LESSONS[1]).len();
    let number = offsetlab_scenario::lessons::LESSONS[1].number();
    let report = serde_json::json!({ "lesson": number, "step": 2, "steps": steps }).to_string();
    assert_eq!(
        send(s.addr, "POST", "/api/workshop/progress", Some(&report), &ada)
            .await
            .status,
        200
    );
    // A step the lesson does not have, a lesson that does not exist: refused.
    let bad = serde_json::json!({ "lesson": number, "step": steps + 1, "steps": steps }).to_string();
    assert_eq!(
        send(s.addr, "POST", "/api/workshop/progress", Some(&bad), &ada)
            .await
            .status,
        400
    );
    assert_eq!(
        send(
            s.addr,
            "POST",
            "/api/workshop/progress",
            Some(r#"{"lesson":999}"#),
            &ada
        )
        .await
        .status,
        400
    );
    for (who, choice) in [(&ada, 0), (&bob, 1)] {
        let q = serde_json::json!({ "question": 1, "choice": choice }).to_string();
        assert_eq!(
            send(s.addr, "POST", "/api/workshop/quiz", Some(&q), who)
                .await
                .status,
            200
        );
    }
    assert_eq!(
        send(
            s.addr,
            "POST",
            "/api/workshop/quiz",
            Some(r#"{"question":1,"choice":99}"#),
            &bob
        )
        .await
        .status,
        400
    );
    assert_eq!(act(s.addr, &bob, &["poll c1"]).await.status, 200);

    for wrong in [
        "",
        "Authorization: Bearer nope\r\n",
        "Authorization: Bearer an-instructors-token-for-test\r\n",
    ] {
        let a = send(s.addr, "GET", "/api/instructor/room", None, wrong).await;
        assert_eq!(a.status, 401, "{}", a.body);
    }
    let room = send(s.addr, "GET", "/api/instructor/room", None, &instructor()).await;
    assert_eq!(room.status, 200, "{}", room.body);
    let room = room.json();
    let learners = room["learners"].as_array().expect("learners");
    assert_eq!(learners.len(), 2);
    assert_eq!(
        learners[0]["name"], "Ada <script>alert(1)</script>",
        "kept as typed; the page shows it as text"
    );
    assert_eq!(learners[0]["progress"]["step"], 2);
    assert_eq!(learners[1]["last_action"], "poll c1");
    assert_eq!(learners[1]["figures"][0]["group"], "analytics-prod");
    assert_eq!(room["quiz"]["1"]["0"], 1);
    assert_eq!(room["quiz"]["1"]["1"], 1);
    assert!(
        !room.to_string().contains(&ada[26..58]),
        "the instructor never sees a learner's id"
    );
    // The instructor reads a learner's lab without changing it.
    let a = send(
        s.addr,
        "GET",
        "/api/instructor/learners/2/state",
        None,
        &instructor(),
    )
    .await;
    assert_eq!(a.status, 200);
    assert_eq!(a.json()["version"], state(s.addr, &bob).await["version"]);
    assert_eq!(
        send(
            s.addr,
            "GET",
            "/api/instructor/learners/9/state",
            None,
            &instructor()
        )
        .await
        .status,
        404
    );
}

#[tokio::test]
async fn a_push_reaches_every_learner_once() {
    let s = start(|c| c.caps.records = 50).await;
    let ada = join(s.addr, "Ada").await;
    let bob = join(s.addr, "Bob").await;
    let a = send(
        s.addr,
        "POST",
        "/api/instructor/push",
        Some(r#"{"lesson":2}"#),
        &instructor(),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let seq = a.json()["seq"].as_u64().expect("seq");
    for who in [&ada, &bob] {
        let me = send(s.addr, "GET", "/api/workshop/me", None, who).await.json();
        assert_eq!(me["push"]["lesson"], 2, "{me}");
    }
    // Claimed once: a second tab (or a second ask) does not apply it again.
    let claim = serde_json::json!({ "seq": seq }).to_string();
    let first = send(s.addr, "POST", "/api/workshop/push-claim", Some(&claim), &ada).await;
    assert_eq!(
        (first.status, first.json()["claimed"].as_bool()),
        (200, Some(true)),
        "{}",
        first.body
    );
    let again = send(s.addr, "POST", "/api/workshop/push-claim", Some(&claim), &ada).await;
    assert_eq!(again.json()["claimed"], false);
    let none = send(
        s.addr,
        "POST",
        "/api/workshop/push-claim",
        Some(r#"{"seq":99}"#),
        &ada,
    )
    .await;
    assert_eq!(none.status, 400);
    assert!(send(s.addr, "GET", "/api/workshop/me", None, &ada).await.json()["push"].is_null());
    assert_eq!(
        send(s.addr, "GET", "/api/workshop/me", None, &bob).await.json()["push"]["seq"],
        seq
    );
    // Refused pushes: a learner, a lesson that does not exist, a scenario that does not parse
    // or that would pass the caps, two things at once.
    assert_eq!(
        send(
            s.addr,
            "POST",
            "/api/instructor/push",
            Some(r#"{"lesson":2}"#),
            &ada
        )
        .await
        .status,
        401
    );
    for (body, status) in [
        (r#"{"lesson":99}"#, 400),
        (r#"{"scenario":"topic orders\nfrobnicate"}"#, 400),
        (r#"{"scenario":"topic orders\nproduce orders count=51"}"#, 403),
        (r#"{"lesson":1,"scenario":"topic t"}"#, 400),
        // Parses, fits the caps, and fails when it runs: refused for the instructor, not pushed.
        (r#"{"scenario":"topic orders\npoll nosuch"}"#, 422),
        (
            r#"{"scenario":"topic orders\nproduce orders count=3\nexpect topic=orders log-end-offset=4"}"#,
            422,
        ),
    ] {
        let a = send(s.addr, "POST", "/api/instructor/push", Some(body), &instructor()).await;
        assert_eq!(a.status, status, "{body}: {}", a.body);
    }
    assert_eq!(s.workshop.room.push().map(|p| p.seq), Some(seq));
}

#[tokio::test]
async fn an_evicted_lab_comes_back_as_it_was() {
    let s = start(|_| {}).await;
    let ada = join(s.addr, "Ada").await;
    for lines in [&["poll c1"][..], &["process c1 count=2"], &["tick 5s"]] {
        assert_eq!(act(s.addr, &ada, lines).await.status, 200);
    }
    // The learner chose a live clock; the server's --clock (paused here) is for new labs only.
    let live = send(s.addr, "POST", "/api/clock", Some(r#"{"mode":"live"}"#), &ada).await;
    assert_eq!(live.status, 200, "{}", live.body);
    let before = state(s.addr, &ada).await;
    assert_eq!(s.workshop.room.resident(), 1);
    let room = Arc::clone(&s.workshop);
    assert_eq!(
        tokio::task::spawn_blocking(move || room.room.evict_all())
            .await
            .expect("evict"),
        1
    );
    assert_eq!(s.workshop.room.resident(), 0);
    let after = state(s.addr, &ada).await;
    assert_eq!(s.workshop.room.resident(), 1);
    for key in [
        "groups",
        "topics",
        "consumers",
        "history_lines",
        "sink_rows",
        "clock_mode",
    ] {
        assert_eq!(after[key], before[key], "{key}");
    }
    // Newer than what the learner's page last saw, or the page would ignore it.
    assert!(
        after["version"].as_u64() > before["version"].as_u64(),
        "{} after {}",
        after["version"],
        before["version"]
    );
    // And it goes on from there.
    assert_eq!(act(s.addr, &ada, &["commit c1"]).await.status, 200);
}

#[tokio::test]
async fn a_restarted_server_has_every_learner_back() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = WorkshopConfig::new(dir.path().join("workshop"));
    let room = Room::open(config.clone()).expect("room");
    let ada = room.join("Zoë \"#1\"").expect("join");
    room.join("Bob").expect("join");
    let lines = {
        let lab = room.lab(&ada).expect("lab");
        let mut s = lab.lock();
        s.apply_lines(&["poll c1".to_string()]).expect("poll");
        lab.changed(&mut s).expect("saved");
        s.history_len()
    };
    room.close_all();
    let id = ada.id.as_str().to_string();
    drop(room);
    let room = Room::open(config.clone()).expect("reopened");
    assert_eq!(room.len(), 2);
    let back = room.find(&id).expect("the same id");
    assert_eq!((back.number, back.name()), (1, "Zoë \"#1\"".to_string()));
    let lab = room.lab(&back).expect("lab");
    assert_eq!(lab.lock().history_len(), lines);
    room.close_all();
    drop(room);
    // A learner's file that does not read sets that learner aside, naming the file, and the
    // room opens for the others; nothing of theirs is dropped or changed.
    std::fs::write(back.dir.join("learner.json"), b"{ not json").expect("write");
    let room = Room::open(config.clone()).expect("the room opens for the others");
    assert_eq!(room.len(), 1, "Bob is back");
    assert!(room.find(&id).is_none(), "Zoë's id opens no lab");
    assert!(
        room.is_unreadable(&id),
        "and is known as set aside, not as a stranger"
    );
    let aside = room.unreadable();
    assert_eq!(aside.len(), 1);
    assert!(aside[0].problem.contains("learner.json"), "{}", aside[0].problem);
    let shown = aside[0].for_instructor().to_string();
    assert!(
        shown.contains("learner.json") && !shown.contains(&id),
        "no id for the instructor: {shown}"
    );
    assert_eq!(
        std::fs::read(back.dir.join("learner.json")).expect("kept"),
        b"{ not json",
        "the file is left as it was"
    );
    let bob = room.join("Cy").expect("a new learner joins meanwhile");
    assert_eq!(bob.number, 3, "after the highest number the room knows");
    room.close_all();
    drop(room);
    // A learner's file deleted beside their lab: set aside and named, not dropped in silence.
    std::fs::remove_file(back.dir.join("learner.json")).expect("rm");
    let room = Room::open(config).expect("reopened");
    assert!(room.is_unreadable(&id));
    assert!(
        room.unreadable()[0].problem.contains("missing"),
        "{:?}",
        room.unreadable()
    );
    assert!(back.dir.exists(), "the lab is still there");
}

#[tokio::test]
async fn a_learner_past_their_rate_gets_429_and_others_do_not() {
    let s = start(|c| {
        c.rate = RateLimit {
            per_second: 1.0,
            burst: 3.0,
        }
    })
    .await;
    let ada = join(s.addr, "Ada").await;
    let bob = join(s.addr, "Bob").await;
    let mut statuses = Vec::new();
    for _ in 0..5 {
        statuses.push(send(s.addr, "GET", "/api/state", None, &ada).await.status);
    }
    assert_eq!(&statuses[..3], &[200, 200, 200]);
    let refused = send(s.addr, "GET", "/api/state", None, &ada).await;
    assert_eq!(refused.status, 429, "{statuses:?}");
    assert!(refused.head.to_ascii_lowercase().contains("retry-after"));
    assert!(refused.body.contains("too many requests"));
    assert_eq!(send(s.addr, "GET", "/api/state", None, &bob).await.status, 200);
}

#[tokio::test]
async fn a_server_without_a_workshop_says_so() {
    let session = offsetlab_lab::Session::new(
        offsetlab_lab::SinkBackend::Memory,
        offsetlab_scenario::LAB_SCENARIO,
    )
    .expect("seed");
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let state = AppState::new(offsetlab_lab::LabHandle::new(session), addr, &[]);
    tokio::spawn(async move {
        let _ = offsetlab_web::http::serve(
            listener,
            router(state),
            offsetlab_web::http::HttpLimits::default(),
            std::future::pending(),
        )
        .await;
    });
    assert_eq!(
        send(addr, "GET", "/api/workshop/me", None, "").await.json()["workshop"],
        false
    );
    assert_eq!(
        send(addr, "POST", "/api/workshop/join", Some(r#"{"name":"x"}"#), "")
            .await
            .status,
        404
    );
    assert_eq!(
        send(addr, "GET", "/api/instructor/room", None, &instructor())
            .await
            .status,
        404
    );
    assert_eq!(send(addr, "GET", "/api/state", None, "").await.status, 200);
}

#[tokio::test]
async fn the_instructor_never_holds_a_learners_id() {
    let s = start(|_| {}).await;
    let ada = join(s.addr, "Ada").await;
    let id = ada.trim_end().rsplit('=').next().expect("id").to_string();
    assert_eq!(id.len(), 32);
    // Her own state may say where her lab lives; the instructor's answers never do.
    assert!(send(s.addr, "GET", "/api/state", None, &ada)
        .await
        .body
        .contains(&id));
    for path in [
        "/api/instructor/room",
        "/api/instructor/learners/1/state",
        "/api/instructor/learners/1/scenario",
    ] {
        let a = send(s.addr, "GET", path, None, &instructor()).await;
        assert_eq!(a.status, 200, "{path}");
        assert!(!a.body.contains(&id), "{path} holds the id");
    }
}

#[tokio::test]
async fn what_a_line_appends_on_its_own_is_capped_too_and_the_batch_undone() {
    // 12 orders; 7 processed is 7 outputs, within 19 records — but the commit's marker is the
    // 20th, which no line says beforehand: the batch is undone once it ran.
    let s = start(|c| c.caps.records = 19).await;
    let ada = join(s.addr, "Ada").await;
    // A kafka-tx consumer copies what it processes into its output topic, with markers.
    let setup = [
        "topic out",
        "consumer tx group=g topic=orders sink=kafka-tx output=out commit=manual-batch reset=earliest max-poll=12",
        "poll tx",
    ];
    assert_eq!(act(s.addr, &ada, &setup).await.status, 200);
    let before = state(s.addr, &ada).await;
    let a = act(s.addr, &ada, &["process tx count=7", "commit tx"]).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(a.body.contains("records cap"), "{}", a.body);
    let after = state(s.addr, &ada).await;
    assert_eq!(
        after["topics"], before["topics"],
        "undone: the output topic is as it was"
    );
    assert_eq!(after["history_lines"], before["history_lines"]);

    // Rewinding and reading again writes the sink again: capped.
    let s = start(|c| c.caps.sink_writes = 20).await;
    let bob = join(s.addr, "Bob").await;
    let round = [
        "poll c1",
        "process c1 count=all",
        "poll c1",
        "process c1 count=all",
        "poll c1",
        "process c1 count=all",
    ];
    assert_eq!(act(s.addr, &bob, &round).await.status, 200);
    let seek = ["seek c1 to=earliest"];
    assert_eq!(
        act(s.addr, &bob, &seek).await.status,
        200,
        "{}",
        act(s.addr, &bob, &seek).await.body
    );
    let a = act(s.addr, &bob, &round).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(a.body.contains("sink-writes cap"), "{}", a.body);
}

#[tokio::test]
async fn big_values_are_capped_by_bytes() {
    let s = start(|c| c.caps.bytes = 1 << 20).await;
    let ada = join(s.addr, "Ada").await;
    // A value is JSON text; on the line, a quoted string.
    let json = serde_json::to_string(&"v".repeat(10_000)).expect("json");
    let value = serde_json::to_string(&json).expect("quoted");
    let line = format!("produce orders count=200 value={value}");
    let a = act(s.addr, &ada, &[&line]).await;
    assert_eq!(a.status, 403, "{}", &a.body[..a.body.len().min(300)]);
    assert!(a.body.contains("bytes cap"));
    let line = format!("produce orders count=20 value={value}");
    assert_eq!(act(s.addr, &ada, &[&line]).await.status, 200);
}

#[tokio::test]
async fn labs_in_memory_stay_within_max_resident() {
    let s = start(|c| c.max_resident = 1).await;
    // Nothing holds Ada's lab once her join is answered: Bob's join evicts it at once.
    let ada = join(s.addr, "Ada").await;
    let bob = join(s.addr, "Bob").await;
    assert_eq!(
        s.workshop.room.resident(),
        1,
        "Ada's idle lab made room for Bob's"
    );
    assert_eq!(act(s.addr, &ada, &["poll c1"]).await.status, 200);
    assert_eq!(s.workshop.room.resident(), 1);
    assert_eq!(act(s.addr, &bob, &["poll c1"]).await.status, 200);
    assert_eq!(s.workshop.room.resident(), 1);
    assert_eq!(
        state(s.addr, &ada).await["history_lines"],
        state(s.addr, &bob).await["history_lines"]
    );
}

#[tokio::test]
async fn a_learners_event_streams_are_bounded() {
    let s = start(|_| {}).await;
    let ada = join(s.addr, "Ada").await;
    let mut open = Vec::new();
    for _ in 0..offsetlab_web::workshop::MAX_STREAMS_PER_LEARNER {
        let mut c = TcpStream::connect(s.addr).await.expect("connect");
        let req = format!("GET /api/events HTTP/1.1\r\nHost: {}\r\n{ada}\r\n", s.addr);
        c.write_all(req.as_bytes()).await.expect("write");
        let mut head = [0u8; 12];
        c.read_exact(&mut head).await.expect("head");
        assert_eq!(&head, b"HTTP/1.1 200");
        open.push(c);
    }
    let ninth = send(s.addr, "GET", "/api/events", None, &ada).await;
    assert_eq!(ninth.status, 429, "{}", ninth.body);
    // Another learner's streams are their own.
    let bob = join(s.addr, "Bob").await;
    let mut c = TcpStream::connect(s.addr).await.expect("connect");
    let req = format!("GET /api/events HTTP/1.1\r\nHost: {}\r\n{bob}\r\n", s.addr);
    c.write_all(req.as_bytes()).await.expect("write");
    let mut head = [0u8; 12];
    c.read_exact(&mut head).await.expect("head");
    assert_eq!(&head, b"HTTP/1.1 200");
    drop(open);
}

#[tokio::test]
async fn what_the_page_does_works_in_a_learners_lab() {
    let s = start(|_| {}).await;
    let ada = join(s.addr, "Ada").await;
    let bob = join(s.addr, "Bob").await;
    // The explorer's worst crash of a cell, loaded as her lab.
    let a = send(
        s.addr,
        "POST",
        "/api/explore/replay",
        Some(r#"{"strategy":"auto-timer","sink":"append"}"#),
        &ada,
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    let lost = a.json()["groups"]
        .as_object()
        .and_then(|g| g.values().next())
        .and_then(|g| g["audit"]["lost"].as_u64());
    assert!(lost > Some(0), "{}", a.body);
    // Her export, imported into Bob's lab, is the same lab; hers is untouched by his.
    let export = send(s.addr, "GET", "/api/scenario", None, &ada).await.body;
    let imported = send(s.addr, "POST", "/api/scenario", Some(&export), &bob).await;
    assert_eq!(imported.status, 200, "{}", imported.body);
    let (hers, his) = (state(s.addr, &ada).await, state(s.addr, &bob).await);
    assert_eq!(hers["groups"], his["groups"]);
    // A lesson starts in an empty lab and its steps run.
    assert_eq!(
        send(s.addr, "POST", "/api/scenario", Some(""), &bob).await.status,
        200
    );
    for step in offsetlab_scenario::lessons::steps(&offsetlab_scenario::lessons::LESSONS[0]) {
        let lines: Vec<&str> = step.lines.iter().map(String::as_str).collect();
        let a = act(s.addr, &bob, &lines).await;
        assert_eq!(a.status, 200, "{:?}: {}", step.lines, a.body);
    }
    assert_eq!(state(s.addr, &ada).await["version"], hers["version"]);
}

#[tokio::test]
async fn polls_groups_compactions_and_long_requests_are_bounded() {
    let s = start(|c| {
        c.caps.records = 30;
        c.caps.groups = 2;
    })
    .await;
    let ada = join(s.addr, "Ada").await;
    // Each poll after a rewind hands out copies of the log again: in flight, capped by records.
    let setup = ["consumer big group=g2 topic=orders max-poll=1000 reset=earliest"];
    assert_eq!(act(s.addr, &ada, &setup).await.status, 200);
    let again = [
        "poll big",
        "seek big to=earliest",
        "poll big",
        "seek big to=earliest",
        "poll big",
    ];
    let a = act(s.addr, &ada, &again).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(
        a.body.contains("in-flight cap") && a.body.contains("--cap-records"),
        "{}",
        a.body
    );
    // A third group, however it is made.
    let a = act(
        s.addr,
        &ada,
        &["reset-offsets g3 topic=orders to-earliest execute"],
    )
    .await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(a.body.contains("groups cap"), "{}", a.body);
    // One compaction per request.
    let two = ["compact orders", "compact orders"];
    let a = act(s.addr, &ada, &two).await;
    assert_eq!(a.status, 403, "{}", a.body);
    assert!(
        a.body.contains("one compact or delete-records line per request"),
        "{}",
        a.body
    );
    // At most a hundred lines.
    let many: Vec<&str> = std::iter::repeat_n("tick 1ms", 101).collect();
    let a = act(s.addr, &ada, &many).await;
    assert_eq!(a.status, 400, "{}", a.body);
    assert!(a.body.contains("at most 100 lines"));
}

#[tokio::test]
async fn a_lab_at_its_history_cap_still_follows_its_clock_and_a_closed_room_opens_nothing() {
    let s = start(|c| c.caps.history_lines = 6).await;
    let ada = join(s.addr, "Ada").await;
    let live = send(s.addr, "POST", "/api/clock", Some(r#"{"mode":"live"}"#), &ada).await;
    assert_eq!(live.status, 200, "{}", live.body);
    let mut last = 200;
    for _ in 0..4 {
        last = act(s.addr, &ada, &["tick 1ms"]).await.status;
    }
    assert_eq!(last, 403, "the history cap is reached");
    // The clock's own lines are not refused for the history's length.
    let paused = send(s.addr, "POST", "/api/clock", Some(r#"{"mode":"paused"}"#), &ada).await;
    assert_eq!(paused.status, 200, "{}", paused.body);
    assert_eq!(paused.json()["clock_mode"], "paused");

    let room = Arc::clone(&s.workshop);
    tokio::task::spawn_blocking(move || room.room.close_all())
        .await
        .expect("close");
    let a = act(s.addr, &ada, &["tick 1ms"]).await;
    assert_eq!(a.status, 503, "{}", a.body);
    let joined = send(
        s.addr,
        "POST",
        "/api/workshop/join",
        Some(r#"{"name":"late"}"#),
        "",
    )
    .await;
    assert_eq!(joined.status, 503, "{}", joined.body);
}

#[tokio::test]
async fn joins_faster_than_a_class_arrives_are_refused() {
    let s = start(|c| {
        c.join_rate = RateLimit {
            per_second: 0.5,
            burst: 2.0,
        }
    })
    .await;
    join(s.addr, "Ada").await;
    join(s.addr, "Bob").await;
    let a = send(s.addr, "POST", "/api/workshop/join", Some(r#"{"name":"Cy"}"#), "").await;
    assert_eq!(a.status, 429, "{}", a.body);
    assert!(a.body.contains("joining at once"), "{}", a.body);
    assert_eq!(s.workshop.room.len(), 2, "nobody added");
}

fn room_learner(room: &Value, number: u64) -> Value {
    room["learners"]
        .as_array()
        .and_then(|l| l.iter().find(|l| l["number"] == number))
        .cloned()
        .unwrap_or(Value::Null)
}

async fn room(addr: std::net::SocketAddr) -> Value {
    let a = send(addr, "GET", "/api/instructor/room", None, &instructor()).await;
    assert_eq!(a.status, 200, "{}", a.body);
    a.json()
}

async fn labelled(addr: std::net::SocketAddr, who: &str, lines: &[&str], label: &str) -> Answer {
    let body = serde_json::json!({ "lines": lines, "label": label }).to_string();
    send(addr, "POST", "/api/actions", Some(&body), who).await
}

#[tokio::test]
async fn an_action_is_named_as_the_learner_pressed_it() {
    let s = start(|_| {}).await;
    let ada = join(s.addr, "Ada").await;
    let a = labelled(s.addr, &ada, &["poll c1", "tick 1s"], "  Crash mid-batch ").await;
    assert_eq!(a.status, 200, "{}", a.body);
    let ada_in_room = room_learner(&room(s.addr).await, 1);
    assert_eq!(ada_in_room["last_label"], "Crash mid-batch");
    assert_eq!(
        ada_in_room["last_action"], "poll c1 +1 more",
        "the lines kept as detail"
    );

    // Too long, or with control characters: refused, nothing changed, nothing noted.
    let before = state(s.addr, &ada).await["version"].clone();
    for bad in ["x".repeat(81), "Crash\nmid-batch".into(), "a\u{202E}b".into()] {
        let a = labelled(s.addr, &ada, &["poll c1"], &bad).await;
        assert_eq!(a.status, 400, "{bad:?}: {}", a.body);
        assert!(
            a.json()["error"].as_str().unwrap_or("").contains("label"),
            "{}",
            a.body
        );
    }
    assert_eq!(state(s.addr, &ada).await["version"], before);
    assert_eq!(
        room_learner(&room(s.addr).await, 1)["last_label"],
        "Crash mid-batch"
    );
    assert_eq!(
        labelled(s.addr, &ada, &["poll c1"], &"é".repeat(80)).await.status,
        200
    );

    // A change the page did not name shows its lines, as before.
    assert_eq!(act(s.addr, &ada, &["poll c1"]).await.status, 200);
    let ada_in_room = room_learner(&room(s.addr).await, 1);
    assert_eq!(
        (
            ada_in_room["last_label"].clone(),
            ada_in_room["last_action"].clone()
        ),
        (Value::Null, "poll c1".into())
    );

    // Outside a workshop a label is checked the same way, and changes nothing else.
    let lab = offsetlab_lab::LabHandle::new(
        offsetlab_lab::Session::new(offsetlab_lab::SinkBackend::Memory, "").expect("session"),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let addr = listener.local_addr().expect("addr");
    let app = router(AppState::new(lab, addr, &[]));
    tokio::spawn(async move {
        let _ = offsetlab_web::http::serve(
            listener,
            app,
            offsetlab_web::http::HttpLimits::default(),
            std::future::pending(),
        )
        .await;
    });
    assert_eq!(
        labelled(addr, "", &["topic t partitions=1"], "Make a topic")
            .await
            .status,
        200
    );
    assert_eq!(
        labelled(addr, "", &["topic u partitions=1"], &"x".repeat(81))
            .await
            .status,
        400
    );
}

#[tokio::test]
async fn labels_completed_lessons_and_the_guided_step_survive_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = WorkshopConfig::new(dir.path().join("workshop"));
    let room = Room::open(config.clone()).expect("room");
    let ada = room.join("Ada").expect("join");
    ada.update(|a| {
        a.last_label = Some("Rewind to earliest".into());
        a.completed.insert(1);
        a.guided = Some(2);
    })
    .expect("saved");
    room.close_all();
    let id = ada.id.as_str().to_string();
    drop(room);
    let room = Room::open(config).expect("reopened");
    let a = room.find(&id).expect("the same id").activity();
    assert_eq!(a.last_label.as_deref(), Some("Rewind to earliest"));
    assert_eq!(a.completed.into_iter().collect::<Vec<_>>(), vec![1]);
    assert_eq!(a.guided, Some(2));
    room.close_all();
}

#[tokio::test]
async fn the_room_summary_counts_learners_per_step_and_who_finished() {
    let s = start(|_| {}).await;
    let lesson = &offsetlab_scenario::lessons::LESSONS[0];
    let (n, steps) = (lesson.number(), offsetlab_scenario::lessons::steps(lesson).len());
    let mut who = Vec::new();
    for name in ["Ada", "Bob", "Cy", "Di"] {
        who.push(join(s.addr, name).await);
    }
    let report = |lesson: Option<u32>, step: usize, guided: Option<u32>| {
        let mut r = serde_json::json!({ "lesson": lesson, "step": step, "steps": steps });
        if let Some(g) = guided {
            r["guided"] = g.into();
        }
        r.to_string()
    };
    let progress = |who: &str, body: String| {
        let who = who.to_string();
        async move {
            send(s.addr, "POST", "/api/workshop/progress", Some(&body), &who)
                .await
                .status
        }
    };
    assert_eq!(progress(&who[0], report(Some(n), 1, Some(0))).await, 200);
    assert_eq!(progress(&who[1], report(Some(n), 1, None)).await, 200);
    // Cy finishes lesson 1, then goes back to free play: she finished it all the same.
    assert_eq!(progress(&who[2], report(Some(n), steps, Some(3))).await, 200);
    assert_eq!(progress(&who[2], report(None, 0, None)).await, 200);
    // The guided step is the furthest reached: a report of an earlier one keeps it.
    assert_eq!(progress(&who[0], report(Some(n), 1, Some(2))).await, 200);
    assert_eq!(progress(&who[0], report(Some(n), 1, Some(1))).await, 200);
    // A guided step past the end, a lesson there is not: refused, nothing kept.
    assert_eq!(progress(&who[3], report(None, 0, Some(4))).await, 400);
    assert_eq!(
        progress(&who[3], r#"{"lesson": 12, "step": 0, "steps": 1}"#.into()).await,
        400
    );
    assert_eq!(
        progress(&who[3], r#"{"lesson": null, "guided": -1}"#.into()).await,
        400
    );

    let r = room(s.addr).await;
    let summary = &r["summary"];
    assert_eq!(summary["learners"], 4);
    assert_eq!(summary["free_play"], 2, "Cy and Di: {summary}");
    assert_eq!(summary["untouched"], 1, "Di never did anything");
    let one = &summary["lessons"][0];
    assert_eq!(
        (one["lesson"].as_u64(), one["steps"].as_u64()),
        (Some(u64::from(n)), Some(steps as u64))
    );
    assert_eq!(one["on_step"], serde_json::json!({ "1": 2 }));
    assert_eq!(one["finished"], serde_json::json!([3]));
    assert!(one["title"].as_str().is_some_and(|t| !t.is_empty()));
    assert_eq!(summary["guided"]["on_step"], serde_json::json!({ "2": 1 }));
    assert_eq!(summary["guided"]["finished"], serde_json::json!([3]));
    assert_eq!(room_learner(&r, 3)["completed"], serde_json::json!([n]));
    assert_eq!(room_learner(&r, 1)["guided"], 2);
    assert_eq!(room_learner(&r, 4)["untouched"], true);
}

/// The header lines of the instructor's read-only view of learner `n`.
fn viewing(n: &str) -> String {
    format!("{}X-Offsetlab-Learner: {n}\r\n", instructor())
}

#[tokio::test]
async fn the_instructor_views_a_learners_lab_through_their_page_read_only() {
    let s = start(|c| {
        c.rate = RateLimit {
            per_second: 1.0,
            burst: 3.0,
        }
    })
    .await;
    let ada = join(s.addr, "Ada").await;
    let bob = join(s.addr, "Bob").await;
    assert_eq!(act(s.addr, &bob, &["poll c1"]).await.status, 200);
    let id = bob.trim_end().rsplit('=').next().expect("id").to_string();
    let bobs = state(s.addr, &bob).await;

    // Learner 2's lab, whoever's cookie comes along (the instructor joined as Ada), and never
    // counted against Bob's rate (three a second here).
    for _ in 0..5 {
        let a = send(
            s.addr,
            "GET",
            "/api/state",
            None,
            &format!("{}{ada}", viewing("2")),
        )
        .await;
        assert_eq!(a.status, 200, "{}", a.body);
        assert_eq!(a.json()["version"], bobs["version"]);
        assert!(!a.body.contains(&id), "the instructor never holds a learner's id");
        assert!(
            a.body.contains("<learner 2>"),
            "where the lab lives, the id taken out"
        );
    }
    let records = send(
        s.addr,
        "GET",
        "/api/records?topic=orders&partition=0&from=0&limit=5",
        None,
        &viewing("2"),
    )
    .await;
    assert_eq!(records.status, 200, "{}", records.body);
    assert_eq!(records.json()["records"].as_array().map(Vec::len), Some(5));
    // The answer was rewritten: its length is the new one.
    let length = records.head.lines().find_map(|l| {
        l.to_ascii_lowercase()
            .strip_prefix("content-length: ")
            .map(str::to_string)
    });
    assert!(
        length
            .as_ref()
            .is_none_or(|n| *n == records.body.len().to_string()),
        "{length:?}"
    );
    assert_eq!(
        send(s.addr, "GET", "/api/scenario", None, &viewing("2"))
            .await
            .status,
        200
    );
    assert_eq!(
        send(s.addr, "HEAD", "/api/state", None, &viewing("2"))
            .await
            .status,
        200
    );
    let me = send(s.addr, "GET", "/api/workshop/me", None, &viewing("2"))
        .await
        .json();
    assert_eq!(
        (me["learner"]["number"].clone(), me["read_only"].clone()),
        (2.into(), true.into())
    );
    assert_eq!(me["push"], Value::Null);
    assert_eq!(
        send(s.addr, "GET", "/api/state", None, &bob).await.status,
        200,
        "Bob's own rate untouched"
    );

    // Nothing a viewer sends changes a lab, the room or a learner's file.
    for (method, path, body) in [
        ("POST", "/api/actions", r#"{"lines":["crash c1"]}"#),
        ("POST", "/api/reset", ""),
        ("POST", "/api/clock", r#"{"mode":"live"}"#),
        ("POST", "/api/scenario", "topic t partitions=1"),
        ("POST", "/api/workshop/progress", r#"{"lesson":null}"#),
        ("POST", "/api/workshop/quiz", r#"{"question":0,"choice":0}"#),
        ("POST", "/api/workshop/join", r#"{"name":"Eve"}"#),
        ("DELETE", "/api/instructor/learners/2", ""),
        ("PUT", "/api/state", ""),
    ] {
        let a = send(s.addr, method, path, Some(body), &viewing("2")).await;
        assert_eq!(a.status, 403, "{method} {path}: {}", a.body);
        assert_eq!(
            a.json()["error"],
            "read-only: the instructor views this lab",
            "{method} {path}"
        );
    }
    let after = send(s.addr, "GET", "/api/state", None, &viewing("2"))
        .await
        .json();
    assert_eq!(after["version"], bobs["version"]);
    assert_eq!(s.workshop.room.len(), 2, "nobody joined, nobody removed");
    assert!(room_learner(&room(s.addr).await, 2)["quiz_answered"] == 0);

    // A bad token, a learner the room does not have, a number that is not one.
    for who in [
        "X-Offsetlab-Learner: 2\r\n".to_string(),
        "Authorization: Bearer nope\r\nX-Offsetlab-Learner: 2\r\n".into(),
    ] {
        for method in ["GET", "POST"] {
            let a = send(s.addr, method, "/api/state", None, &format!("{who}{bob}")).await;
            assert_eq!(a.status, 401, "{method} {who:?}: {}", a.body);
            assert!(!a.body.contains("\"version\""));
        }
    }
    assert_eq!(
        send(s.addr, "GET", "/api/state", None, &viewing("9"))
            .await
            .status,
        404
    );
    for bad in ["two", "-1", "", "1, 2"] {
        assert_eq!(
            send(s.addr, "GET", "/api/state", None, &viewing(bad))
                .await
                .status,
            400,
            "{bad:?}"
        );
    }
    let twice = format!("{}X-Offsetlab-Learner: 1\r\n", viewing("2"));
    assert_eq!(send(s.addr, "GET", "/api/state", None, &twice).await.status, 400);
}

#[tokio::test]
async fn a_removed_learner_frees_their_seat_and_their_cookie_opens_nothing() {
    let s = start(|c| c.max_learners = 2).await;
    let ada = join(s.addr, "Ada").await;
    let bob = join(s.addr, "Bob").await;
    assert_eq!(act(s.addr, &ada, &["poll c1"]).await.status, 200);
    let full = send(s.addr, "POST", "/api/workshop/join", Some(r#"{"name":"Cy"}"#), "").await;
    assert_eq!(full.status, 503, "{}", full.body);

    // Only the instructor removes, and only a learner the room has.
    for who in ["", "Authorization: Bearer nope\r\n", &ada] {
        assert_eq!(
            send(s.addr, "DELETE", "/api/instructor/learners/1", None, who)
                .await
                .status,
            401
        );
    }
    assert_eq!(
        send(
            s.addr,
            "DELETE",
            "/api/instructor/learners/7",
            None,
            &instructor()
        )
        .await
        .status,
        404
    );
    assert_eq!(
        send(
            s.addr,
            "DELETE",
            "/api/instructor/learners/0",
            None,
            &instructor()
        )
        .await
        .status,
        404
    );

    let a = send(
        s.addr,
        "DELETE",
        "/api/instructor/learners/1",
        None,
        &instructor(),
    )
    .await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["removed"], serde_json::json!([1]));
    assert!(!a.body.contains(&ada[26..58]), "no id in the answer");
    // Her cookie opens nothing, and her page is told to join again.
    for (method, path) in [("GET", "/api/state"), ("POST", "/api/workshop/progress")] {
        let refused = send(s.addr, method, path, Some(r#"{"lesson":null}"#), &ada).await;
        assert_eq!(refused.status, 401, "{path}: {}", refused.body);
        assert_eq!(refused.json()["join"], true);
    }
    assert_eq!(
        send(s.addr, "GET", "/api/state", None, &viewing("1"))
            .await
            .status,
        404
    );
    // Her directory is moved aside whole, not deleted.
    let dir = &s.workshop.room.config().dir;
    let id = ada.trim_end().rsplit('=').next().expect("id");
    assert!(!dir.join("learners").join(id).exists());
    assert!(dir.join("removed").join(id).join("learner.json").exists());
    assert!(dir.join("removed").join(id).join("lab").exists());

    // The room has a seat; a newcomer gets a number nobody had.
    let cy = send(s.addr, "POST", "/api/workshop/join", Some(r#"{"name":"Cy"}"#), "").await;
    assert_eq!(
        (cy.status, cy.json()["number"].as_u64()),
        (201, Some(3)),
        "{}",
        cy.body
    );
    let r = room(s.addr).await;
    let numbers: Vec<u64> = r["learners"]
        .as_array()
        .expect("learners")
        .iter()
        .filter_map(|l| l["number"].as_u64())
        .collect();
    assert_eq!(numbers, vec![2, 3]);
    assert_eq!(
        state(s.addr, &bob).await["groups"]["analytics-prod"]["audit"]["lost"],
        0
    );
}

#[tokio::test]
async fn a_flooded_room_is_cleared_of_learners_who_never_did_anything() {
    let s = start(|c| c.max_learners = 6).await;
    let ada = join(s.addr, "Ada").await;
    let bob = join(s.addr, "Bob").await;
    for n in 0..4 {
        join(s.addr, &format!("bot {n}")).await;
    }
    assert_eq!(act(s.addr, &ada, &["poll c1"]).await.status, 200);
    let q = r#"{"question":0,"choice":1}"#;
    assert_eq!(
        send(s.addr, "POST", "/api/workshop/quiz", Some(q), &bob)
            .await
            .status,
        200
    );
    assert_eq!(room(s.addr).await["summary"]["untouched"], 4);

    // Idle for a minute: nobody yet (they all just joined).
    let body = |m: u64| serde_json::json!({ "idle_minutes": m }).to_string();
    let path = "/api/instructor/remove-untouched";
    let a = send(s.addr, "POST", path, Some(&body(1)), &instructor()).await;
    assert_eq!(
        (a.status, a.json()["removed"].clone()),
        (200, serde_json::json!([])),
        "{}",
        a.body
    );
    assert_eq!(send(s.addr, "POST", path, Some(&body(0)), "").await.status, 401);
    assert_eq!(
        send(s.addr, "POST", path, Some(&body(100_000)), &instructor())
            .await
            .status,
        400
    );
    assert_eq!(
        send(s.addr, "POST", path, Some("{}"), &instructor()).await.status,
        400
    );

    let a = send(s.addr, "POST", path, Some(&body(0)), &instructor()).await;
    assert_eq!(a.status, 200, "{}", a.body);
    assert_eq!(a.json()["removed"], serde_json::json!([3, 4, 5, 6]));
    let r = room(s.addr).await;
    assert_eq!(
        r["learners"].as_array().map(Vec::len),
        Some(2),
        "Ada acted, Bob answered the quiz"
    );
    assert_eq!(r["summary"]["untouched"], 0);
    assert!(state(s.addr, &ada).await["version"].is_u64());
}

#[tokio::test]
async fn a_removed_learners_number_is_not_given_again_after_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = WorkshopConfig::new(dir.path().join("workshop"));
    let room = Room::open(config.clone()).expect("room");
    room.join("Ada").expect("join");
    let bob = room.join("Bob").expect("join");
    room.remove(2).expect("removed");
    assert!(
        room.lab(&bob).is_err(),
        "a removed learner's lab is not opened again"
    );
    assert!(
        bob.update(|a| a.guided = Some(1)).is_err(),
        "nor their file written"
    );
    room.close_all();
    drop(room);
    let room = Room::open(config).expect("reopened");
    assert_eq!(room.len(), 1);
    assert_eq!(room.join("Cy").expect("join").number, 3);
    room.close_all();
}

/// A learner's lab whose log tail a crash tore: the restore that opens it again names the
/// partition and the offsets lost to the instructor (`recovered` in the room), with no id.
#[tokio::test]
async fn a_learners_torn_log_is_shown_to_the_instructor() {
    let dir = tempfile::tempdir().expect("tempdir");
    let config = WorkshopConfig::new(dir.path().join("workshop"));
    let room = Room::open(config.clone()).expect("room");
    let ada = room.join("Ada").expect("join");
    {
        let lab = room.lab(&ada).expect("lab");
        let mut s = lab.lock();
        s.apply_lines(&[
            "topic torn partitions=1".to_string(),
            "produce torn count=20".to_string(),
        ])
        .expect("produced");
        lab.changed(&mut s).expect("saved");
    }
    room.close_all();
    let id = ada.id.as_str().to_string();
    drop(room);
    // A power cut: the stop was not clean, and the segment's last 30 bytes never reached the disk.
    let root = ada.dir.join("lab");
    let current = std::fs::read_to_string(root.join("current")).expect("current");
    let logs = root
        .join(format!("gen-{:06}", current.trim().parse::<u64>().expect("n")))
        .join("logs");
    let _ = std::fs::remove_file(logs.join(".clean-shutdown"));
    let segment = logs.join("torn-0/00000000000000000000.log");
    let len = std::fs::metadata(&segment).expect("segment").len();
    std::fs::OpenOptions::new()
        .write(true)
        .open(&segment)
        .and_then(|f| f.set_len(len - 30))
        .expect("cut");
    let room = Room::open(config).expect("reopened");
    let back = room.find(&id).expect("Ada");
    assert!(
        back.recovered().is_empty(),
        "nothing known before the lab is opened"
    );
    room.lab(&back).expect("the lab opens");
    let shown = serde_json::to_string(&back.recovered()).expect("json");
    let recovered = back.recovered();
    let [r] = recovered.as_slice() else {
        panic!("one loss: {shown}");
    };
    assert_eq!(
        (r.loss.topic.as_str(), r.loss.partition, r.loss.to),
        ("torn", 0, 20)
    );
    assert!(r.loss.from < 20, "{r}");
    assert!(!shown.contains(&id), "no id for the instructor: {shown}");
    assert!(shown.contains("torn-0/cut/"), "where the cut bytes are: {shown}");
}
