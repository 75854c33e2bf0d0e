//! `offsetlab bench workshop`: a classroom on one machine, measured.
//!
//! 1. **The room's memory.** `--idle` learners join (each gets the seed lab, on disk and in
//!    memory); the process's resident memory is read before, with every lab in memory, and once
//!    every lab is evicted (written to disk, dropped). Then a sample of evicted learners asks
//!    for its state over HTTP — the request that brings a lab back — and the time is kept.
//! 2. **A class at work.** `--learners` learners, each with its live updates open (the page's
//!    event stream), replay a lesson through the HTTP API at the same time: the lesson's start
//!    (an empty lab), then every step as a request of its own, one every `--pace` per learner,
//!    the learners' first steps spread over one pace. Every action's latency is kept; any answer
//!    but 200 is an error.
//!
//! The server is `serve --workshop`'s (the same room, router and HTTP server) in this process,
//! its labs in a temporary directory; the clients are plain HTTP/1.1 over loopback, one
//! connection per request, as a browser without keep-alive would be.

use crate::exit;
use offsetlab_scenario::lessons::{self, LESSONS};
use offsetlab_web::workshop::{Room, Token, Workshop, WorkshopConfig};
use serde::Serialize;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[derive(Debug, Serialize)]
struct Figures {
    idle_learners: usize,
    rss_before_mb: f64,
    rss_all_resident_mb: f64,
    rss_all_evicted_mb: f64,
    resident_kb_per_learner: f64,
    evicted_kb_per_learner: f64,
    join_ms_p50: f64,
    restore_samples: usize,
    restore_ms_p50: f64,
    restore_ms_p95: f64,
    restore_ms_max: f64,
    learners: usize,
    pace_ms: u64,
    actions: usize,
    errors: usize,
    first_error: Option<String>,
    action_ms_p50: f64,
    action_ms_p95: f64,
    action_ms_p99: f64,
    action_ms_max: f64,
    actions_per_s: f64,
    live_update_events: u64,
    wall_s: f64,
}

pub fn run(learners: usize, idle: usize, pace: Duration, json: bool) -> u8 {
    let _ = offsetlab_storage::raise_descriptor_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            crate::style::say_error!("cannot start the runtime: {e}");
            return exit::IO_ERROR;
        }
    };
    match runtime.block_on(measure(learners, idle, pace, json)) {
        Ok(f) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&f).unwrap_or_default());
            } else {
                print(&f);
            }
            if f.errors > 0 {
                exit::EXPECTATION_FAILED
            } else {
                exit::OK
            }
        }
        Err(e) => {
            crate::style::say_error!("{e:#}");
            exit::IO_ERROR
        }
    }
}

fn print(f: &Figures) {
    println!(
        "the room's memory: {} learners joined, each with the seed lab",
        f.idle_learners
    );
    println!(
        "  resident memory {:.1} MB before, {:.1} MB with every lab in memory, {:.1} MB once every lab is evicted",
        f.rss_before_mb, f.rss_all_resident_mb, f.rss_all_evicted_mb
    );
    println!(
        "  per learner: {:.0} KB with the lab in memory, {:.1} KB evicted",
        f.resident_kb_per_learner, f.evicted_kb_per_learner
    );
    println!(
        "  a join (lab created, seed built, saved): {:.1} ms (p50)",
        f.join_ms_p50
    );
    println!(
        "  bringing an evicted lab back (GET /api/state), {} samples: p50 {:.1} ms, p95 {:.1} ms, max {:.1} ms",
        f.restore_samples, f.restore_ms_p50, f.restore_ms_p95, f.restore_ms_max
    );
    println!(
        "a class at work: {} learners replaying a lesson at once, live updates open, one action every {} ms each",
        f.learners, f.pace_ms
    );
    println!(
        "  {} actions in {:.1} s ({:.0}/s), {} errors{}",
        f.actions,
        f.wall_s,
        f.actions_per_s,
        f.errors,
        f.first_error
            .as_ref()
            .map(|e| format!(" (first: {e})"))
            .unwrap_or_default()
    );
    println!(
        "  action latency: p50 {:.1} ms, p95 {:.1} ms, p99 {:.1} ms, max {:.1} ms; {} live-update events delivered",
        f.action_ms_p50, f.action_ms_p95, f.action_ms_p99, f.action_ms_max, f.live_update_events
    );
}

/// A workshop server in this process: the room, the router, the HTTP server on a free port.
async fn start(dir: &std::path::Path, max: usize) -> anyhow::Result<(SocketAddr, Arc<Workshop>)> {
    let mut config = WorkshopConfig::new(dir.to_path_buf());
    config.max_learners = max;
    config.max_resident = max + 1;
    config.clock = Some(offsetlab_lab::session::ClockMode::Paused);
    // A class's pages, not the bench's pace, are what the rate limit is for.
    config.rate.per_second = 1000.0;
    config.rate.burst = 1000.0;
    config.join_rate = config.rate;
    let room = Room::open(config)?;
    let workshop = Arc::new(Workshop {
        room,
        token: Token::random().map_err(|e| anyhow::anyhow!("{e}"))?,
        demo: None,
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let state = offsetlab_web::AppState::workshop(Arc::clone(&workshop), addr, &[]);
    let limits = offsetlab_web::http::HttpLimits {
        max_connections: 4 * max + 64,
        ..offsetlab_web::http::HttpLimits::default()
    };
    tokio::spawn(async move {
        let _ = offsetlab_web::http::serve(
            listener,
            offsetlab_web::router(state),
            limits,
            std::future::pending(),
        )
        .await;
    });
    Ok((addr, workshop))
}

/// One request, one connection: the status and body.
async fn request(
    addr: SocketAddr,
    method: &str,
    path: &str,
    body: &str,
    cookie: &str,
) -> anyhow::Result<(u16, String)> {
    let mut s = TcpStream::connect(addr).await?;
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nCookie: {cookie}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).await?;
    let text = String::from_utf8_lossy(&out);
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((status, body))
}

/// Joins as `name` over HTTP: the cookie pair to send.
async fn join(addr: SocketAddr, name: &str) -> anyhow::Result<String> {
    let mut s = TcpStream::connect(addr).await?;
    let body = serde_json::json!({ "name": name }).to_string();
    let req = format!(
        "POST /api/workshop/join HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).await?;
    let text = String::from_utf8_lossy(&out);
    text.lines()
        .find_map(|l| l.strip_prefix("set-cookie: "))
        .and_then(|c| c.split(';').next())
        .map(str::to_string)
        .ok_or_else(|| anyhow::anyhow!("join refused: {text}"))
}

/// The page's event stream, read until the bench ends: how many events arrived.
async fn listen(addr: SocketAddr, cookie: String, events: Arc<std::sync::atomic::AtomicU64>) {
    let Ok(mut s) = TcpStream::connect(addr).await else {
        return;
    };
    let req = format!("GET /api/events HTTP/1.1\r\nHost: {addr}\r\nCookie: {cookie}\r\n\r\n");
    if s.write_all(req.as_bytes()).await.is_err() {
        return;
    }
    let mut buf = vec![0u8; 8192];
    while let Ok(n) = s.read(&mut buf).await {
        if n == 0 {
            return;
        }
        let seen = buf[..n].windows(12).filter(|w| w == b"event: state").count() as u64;
        events.fetch_add(seen, std::sync::atomic::Ordering::Relaxed);
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn measure(learners: usize, idle: usize, pace: Duration, json: bool) -> anyhow::Result<Figures> {
    let dir = tempfile::tempdir()?;
    let room = room_memory(&dir.path().join("idle"), idle, json).await?;
    let ClassAtWork {
        latencies,
        errors,
        wall,
        events,
    } = class_at_work(&dir.path().join("class"), learners, pace, json).await?;
    let RoomMemory {
        rss_before,
        rss_resident,
        rss_evicted,
        joins,
        restores,
    } = room;
    let mb_to_kb = |mb: f64| mb * 1024.0 / idle.max(1) as f64;
    Ok(Figures {
        idle_learners: idle,
        rss_before_mb: rss_before,
        rss_all_resident_mb: rss_resident,
        rss_all_evicted_mb: rss_evicted,
        resident_kb_per_learner: mb_to_kb(rss_resident - rss_before),
        evicted_kb_per_learner: mb_to_kb(rss_evicted - rss_before),
        join_ms_p50: percentile(&joins, 0.5),
        restore_samples: restores.len(),
        restore_ms_p50: percentile(&restores, 0.5),
        restore_ms_p95: percentile(&restores, 0.95),
        restore_ms_max: restores.last().copied().unwrap_or(0.0),
        learners,
        pace_ms: pace.as_millis() as u64,
        actions: latencies.len(),
        errors: errors.len(),
        first_error: errors
            .first()
            .map(|e| offsetlab_lab::clip::clip(e, 300).into_owned()),
        action_ms_p50: percentile(&latencies, 0.5),
        action_ms_p95: percentile(&latencies, 0.95),
        action_ms_p99: percentile(&latencies, 0.99),
        action_ms_max: latencies.last().copied().unwrap_or(0.0),
        actions_per_s: latencies.len() as f64 / wall.as_secs_f64().max(1e-9),
        live_update_events: events,
        wall_s: wall.as_secs_f64(),
    })
}

/// What the room's memory came to: RSS before, with every lab resident, with every lab evicted;
/// each join's and a sample of restores' latencies (ms, sorted).
struct RoomMemory {
    rss_before: f64,
    rss_resident: f64,
    rss_evicted: f64,
    joins: Vec<f64>,
    restores: Vec<f64>,
}

/// The room's memory (part 1): `idle` learners join, their labs are evicted, some come back.
async fn room_memory(dir: &std::path::Path, idle: usize, json: bool) -> anyhow::Result<RoomMemory> {
    let (addr, workshop) = start(dir, idle).await?;
    let rss_before = crate::bench_cmd::rss_mb();
    let bar = crate::bench_cmd::bar(idle as u64, "learners joining", json);
    let mut joins = Vec::with_capacity(idle);
    let mut cookies = Vec::with_capacity(idle);
    for i in 0..idle {
        let t = Instant::now();
        cookies.push(join(addr, &format!("learner {i}")).await?);
        joins.push(ms(t.elapsed()));
        bar.inc(1);
    }
    bar.finish_and_clear();
    let rss_resident = crate::bench_cmd::rss_mb();
    let w = Arc::clone(&workshop);
    let evicted = tokio::task::spawn_blocking(move || w.room.evict_all()).await?;
    anyhow::ensure!(evicted == idle, "only {evicted} of {idle} labs could be evicted");
    let rss_evicted = crate::bench_cmd::rss_mb();
    let samples = idle.min(100);
    let mut restores = Vec::with_capacity(samples);
    for cookie in cookies
        .iter()
        .step_by((idle / samples.max(1)).max(1))
        .take(samples)
    {
        let t = Instant::now();
        let (status, body) = request(addr, "GET", "/api/state", "", cookie).await?;
        anyhow::ensure!(status == 200, "an evicted lab did not come back: {status} {body}");
        restores.push(ms(t.elapsed()));
    }
    let w = Arc::clone(&workshop);
    tokio::task::spawn_blocking(move || w.room.close_all()).await?;
    joins.sort_by(f64::total_cmp);
    restores.sort_by(f64::total_cmp);

    Ok(RoomMemory {
        rss_before,
        rss_resident,
        rss_evicted,
        joins,
        restores,
    })
}

/// A class at work: every action's latency (ms, sorted), the errors, the wall time, and the
/// live-update events the learners' streams received.
struct ClassAtWork {
    latencies: Vec<f64>,
    errors: Vec<String>,
    wall: Duration,
    events: u64,
}

/// A class at work (part 2): `learners` replay a lesson each, an action every `pace`, their starts
/// spread over one pace, each listening to its lab's events.
async fn class_at_work(
    dir: &std::path::Path,
    learners: usize,
    pace: Duration,
    json: bool,
) -> anyhow::Result<ClassAtWork> {
    let (addr, _class) = start(dir, learners).await?;
    let mut cookies = Vec::with_capacity(learners);
    for i in 0..learners {
        cookies.push(join(addr, &format!("student {i}")).await?);
    }
    let events = Arc::new(std::sync::atomic::AtomicU64::new(0));
    for cookie in &cookies {
        tokio::spawn(listen(addr, cookie.clone(), Arc::clone(&events)));
    }
    let total: usize = (0..learners)
        .map(|i| {
            lessons::steps(&LESSONS[i % LESSONS.len()])
                .iter()
                .map(|s| s.lines.len())
                .sum::<usize>()
                + 1
        })
        .sum();
    let bar = crate::bench_cmd::bar(total as u64, "lesson steps replayed", json);
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(learners);
    for (i, cookie) in cookies.into_iter().enumerate() {
        let lesson = &LESSONS[i % LESSONS.len()];
        let lines: Vec<String> = lessons::steps(lesson).into_iter().flat_map(|s| s.lines).collect();
        let offset = pace.mul_f64(i as f64 / learners.max(1) as f64);
        let bar = bar.clone();
        tasks.push(tokio::spawn(learner(addr, cookie, lines, offset, pace, bar)));
    }
    let mut latencies = Vec::with_capacity(total);
    let mut errors = Vec::new();
    for t in tasks {
        let (l, e) = t.await?;
        latencies.extend(l);
        errors.extend(e);
    }
    let wall = started.elapsed();
    bar.finish_and_clear();
    latencies.sort_by(f64::total_cmp);
    // The last events in flight.
    tokio::time::sleep(Duration::from_millis(200)).await;
    Ok(ClassAtWork {
        latencies,
        errors,
        wall,
        events: events.load(std::sync::atomic::Ordering::Relaxed),
    })
}

/// One learner of the class: from `offset`, the lesson's start then each of its lines, one
/// every `pace`; each action's latency, and what failed.
async fn learner(
    addr: SocketAddr,
    cookie: String,
    lines: Vec<String>,
    offset: Duration,
    pace: Duration,
    bar: indicatif::ProgressBar,
) -> (Vec<f64>, Vec<String>) {
    tokio::time::sleep(offset).await;
    let mut next = tokio::time::Instant::now();
    let mut latencies = Vec::with_capacity(lines.len() + 1);
    let mut errors = Vec::new();
    // The lesson's start: an empty lab, then its steps.
    let actions = std::iter::once(None).chain(lines.iter().map(Some));
    for line in actions {
        tokio::time::sleep_until(next).await;
        next += pace;
        let t = Instant::now();
        let answer = match line {
            None => request(addr, "POST", "/api/scenario", "", &cookie).await,
            Some(l) => {
                let body = serde_json::json!({ "lines": [l] }).to_string();
                request(addr, "POST", "/api/actions", &body, &cookie).await
            }
        };
        latencies.push(ms(t.elapsed()));
        bar.inc(1);
        match answer {
            Ok((200, _)) => {}
            Ok((status, body)) => {
                errors.push(format!("{status} on `{}`: {body}", line.map_or("(start)", |l| l)))
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    (latencies, errors)
}
