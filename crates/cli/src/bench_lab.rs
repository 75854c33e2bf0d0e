//! `offsetlab bench lab`: what the web lab's session costs where a user can make it expensive —
//! a century-long tick beside a 1 ms auto-commit timer while other requests wait for the lab,
//! and saving after every action on a lab whose narrative is long.
//!
//! The session is the one `offsetlab serve` runs (durable, in a temporary directory); "other
//! requests" are a thread that takes the session's lock and builds the page's state, as
//! `GET /api/state` does, every millisecond.

use crate::exit;
use offsetlab_lab::session::{Session, SinkBackend};
use offsetlab_storage::lock;
use offsetlab_storage::FlushPolicy;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Debug, Serialize)]
struct Figures {
    /// `tick 36500d` with an `interval=1ms` auto-commit consumer.
    century_tick_ms: f64,
    /// The longest a state request waited for the lab meanwhile, and how many were served.
    longest_wait_during_tick_ms: f64,
    state_requests_during_tick: u64,
    /// 100 actions (each applied and saved) on a fresh lab, and on one with a long narrative.
    fresh_100_actions_ms: f64,
    long_narrative_events: usize,
    long_narrative_100_actions_ms: f64,
    /// long / fresh.
    long_narrative_ratio: f64,
}

fn durable(dir: &std::path::Path) -> SinkBackend {
    SinkBackend::Durable {
        root: dir.to_path_buf(),
        flush: FlushPolicy::Never,
    }
}

fn lines(ls: &[&str]) -> Vec<String> {
    ls.iter().map(|s| s.to_string()).collect()
}

/// Applies `line` and saves, as one request of the page does.
fn act(s: &mut Session, line: &[String]) -> anyhow::Result<()> {
    s.apply_lines(line)
        .map_err(|e| anyhow::anyhow!("{}: {}", e.text, e.error))?;
    s.save()?;
    Ok(())
}

/// The century tick, with a reader thread measuring how long it waits for the lab.
fn century(dir: &std::path::Path) -> anyhow::Result<(f64, f64, u64)> {
    let mut s = Session::new(
        durable(dir),
        "topic orders\nproduce orders count=12\nconsumer c9 group=fast topic=orders commit=auto-timer interval=1ms reset=earliest max-poll=4\npoll c9\n",
    )
    .map_err(|e| anyhow::anyhow!("{}", e.error))?;
    s.save()?;
    let session = Arc::new(Mutex::new(s));
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (session, done) = (Arc::clone(&session), Arc::clone(&done));
        std::thread::spawn(move || {
            let (mut longest, mut served) = (Duration::ZERO, 0u64);
            while !done.load(Ordering::Relaxed) {
                let asked = Instant::now();
                let s = lock(&session);
                longest = longest.max(asked.elapsed());
                let _ = s.state().map(|state| serde_json::to_vec(&state).map(|b| b.len()));
                drop(s);
                served += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
            (longest, served)
        })
    };
    // Let the reader start.
    std::thread::sleep(Duration::from_millis(20));
    let started = Instant::now();
    {
        let mut s = lock(&session);
        act(&mut s, &lines(&["tick 36500d"]))?;
    }
    let took = started.elapsed();
    std::thread::sleep(Duration::from_millis(20));
    done.store(true, Ordering::Relaxed);
    let (longest, served) = reader
        .join()
        .map_err(|_| anyhow::anyhow!("the reader panicked"))?;
    Ok((ms(took), ms(longest), served))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// 100 actions on a lab built from `setup`, each applied and saved: the time they took.
fn hundred_actions(dir: &std::path::Path, setup: &str) -> anyhow::Result<(f64, usize)> {
    let mut s = Session::new(durable(dir), setup).map_err(|e| anyhow::anyhow!("{}", e.error))?;
    s.save()?;
    let events = s.lab().narrative().len();
    let started = Instant::now();
    for i in 0..100 {
        let line = if i % 2 == 0 {
            "produce orders count=1"
        } else {
            "tick 1s"
        };
        act(&mut s, &lines(&[line]))?;
    }
    Ok((ms(started.elapsed()), events))
}

pub fn run(json: bool) -> u8 {
    match measure() {
        Ok(f) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&f).unwrap_or_default());
            } else {
                println!(
                    "tick 36500d beside an interval=1ms consumer: {:.1} ms",
                    f.century_tick_ms
                );
                println!(
                    "  a state request every millisecond meanwhile: {} served, the longest wait {:.1} ms",
                    f.state_requests_during_tick, f.longest_wait_during_tick_ms
                );
                println!(
                    "100 actions, each applied and saved, on a fresh lab: {:.1} ms",
                    f.fresh_100_actions_ms
                );
                println!(
                    "the same on a lab with {} narrative events: {:.1} ms ({:.2}× the fresh lab's)",
                    f.long_narrative_events, f.long_narrative_100_actions_ms, f.long_narrative_ratio
                );
            }
            exit::OK
        }
        Err(e) => {
            crate::style::say_error!("{e:#}");
            exit::IO_ERROR
        }
    }
}

fn measure() -> anyhow::Result<Figures> {
    let dir = tempfile::tempdir_in(".")?;
    let (century_tick_ms, longest_wait_during_tick_ms, state_requests_during_tick) =
        century(&dir.path().join("century"))?;
    let base = "topic orders\nproduce orders count=12\nconsumer c1 group=g topic=orders reset=earliest\npoll c1\nprocess c1 count=all\n";
    // Warm up the file system and the allocator once, then measure each lab three times.
    let _ = hundred_actions(&dir.path().join("warm"), base)?;
    let mut fresh = Vec::new();
    let mut long = Vec::new();
    let mut events = 0;
    let long_setup = format!("{base}{}", "tick 1ms\n".repeat(20_000));
    for round in 0..3 {
        fresh.push(hundred_actions(&dir.path().join(format!("fresh-{round}")), base)?.0);
        let (t, n) = hundred_actions(&dir.path().join(format!("long-{round}")), &long_setup)?;
        long.push(t);
        events = n;
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let (fresh_100_actions_ms, long_narrative_100_actions_ms) = (median(&mut fresh), median(&mut long));
    Ok(Figures {
        century_tick_ms,
        longest_wait_during_tick_ms,
        state_requests_during_tick,
        fresh_100_actions_ms,
        long_narrative_events: events,
        long_narrative_100_actions_ms,
        long_narrative_ratio: long_narrative_100_actions_ms / fresh_100_actions_ms,
    })
}
