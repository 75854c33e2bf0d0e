//! `offsetlab bench lab`: what the web lab's session costs where a user can make it expensive —
//! a century-long tick beside a 1 ms auto-commit timer while other requests wait for the lab,
//! saving after every action on a lab whose narrative is long, and a produce and a failed
//! batch's undo on a lab with a long past (issue 29's: 1,000 groups, 100,000
//! `__consumer_offsets` records, a million history lines) against a fresh lab's.
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
    /// The big lab (issue 29): its groups, `__consumer_offsets` records and history lines, and
    /// how long building it took.
    big_groups: usize,
    big_offsets_records: usize,
    big_history_lines: usize,
    big_build_s: f64,
    /// The bytes of the big lab's snapshot (`lab.json`'s newest slot): what a snapshot writes,
    /// now and then, in the background.
    big_lab_json_bytes: u64,
    /// What one produce appends to the big lab's journal (the mean of the 100).
    big_journal_bytes_per_produce: f64,
    /// The first [`WARM_UP`] produces after building the big lab (a one-time cost: see
    /// [`warm_up`]), before the 100 measured.
    big_warm_up_produces_ms: f64,
    /// 100 produces on a fresh lab, on the big lab, and big / fresh (each lab after
    /// [`WARM_UP`] produces).
    fresh_100_produces_ms: f64,
    big_100_produces_ms: f64,
    /// Of which saving (`Session::save`: the history's new lines and the journal's entry).
    big_100_saves_ms: f64,
    big_ratio: f64,
    /// One produce (applied and saved), the median of the 100: on a fresh lab, on the big lab,
    /// and big / fresh — issue 29's "cost of one produce".
    fresh_median_produce_us: f64,
    big_median_produce_us: f64,
    big_median_ratio: f64,
    /// A batch whose second line fails, on the big lab: its first line undone.
    big_undo_ms: f64,
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

/// Applies `line` and saves, as one request of the page does: how long the save took.
fn act(s: &mut Session, line: &[String]) -> anyhow::Result<Duration> {
    s.apply_lines(line)
        .map_err(|e| anyhow::anyhow!("{}: {}", e.text, e.error))?;
    let saving = Instant::now();
    s.save()?;
    Ok(saving.elapsed())
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
    Ok((hundred_on(&mut s)?, events))
}

/// 100 actions on `s`, each applied and saved, half produces and half ticks: milliseconds.
fn hundred_on(s: &mut Session) -> anyhow::Result<f64> {
    Ok(hundred_saving(s, Actions::ProducesAndTicks)?.0)
}

/// What the 100 actions are.
#[derive(Clone, Copy, PartialEq)]
enum Actions {
    /// `produce orders count=1`, `tick 1s`, in turn.
    ProducesAndTicks,
    /// `produce orders count=1` each: issue 29's "cost of one produce".
    Produces,
}

/// Produces before the measured ones, on either lab.
const WARM_UP: usize = 50;

/// [`WARM_UP`] produces, each applied and saved: milliseconds. Both labs are measured after
/// them, so that a lab's first saves are reported apart from what one produce costs: on the big
/// lab the first twenty or so take 0.5–1.5 ms each, nearly all of it allocating (the allocator
/// settling after the build freed the memory of a million-line replay), then 20 µs.
fn warm_up(s: &mut Session) -> anyhow::Result<f64> {
    let started = Instant::now();
    for _ in 0..WARM_UP {
        act(s, &lines(&["produce orders count=1"]))?;
    }
    Ok(ms(started.elapsed()))
}

/// The bytes of the journals in `dir`.
fn journal_bytes(dir: Option<&std::path::Path>) -> u64 {
    let Some(entries) = dir.and_then(|d| std::fs::read_dir(d).ok()) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("lab.journal."))
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum()
}

/// 100 actions on `s`: milliseconds in all, of them saving, and the median action's
/// microseconds (what one action costs, whatever else the machine did during a few of them).
fn hundred_saving(s: &mut Session, actions: Actions) -> anyhow::Result<(f64, f64, f64)> {
    let mut saving = Duration::ZERO;
    let mut each = Vec::with_capacity(100);
    let started = Instant::now();
    for i in 0..100 {
        let line = if i % 2 == 0 || actions == Actions::Produces {
            "produce orders count=1"
        } else {
            "tick 1s"
        };
        let one = Instant::now();
        saving += act(s, &lines(&[line]))?;
        each.push(one.elapsed());
    }
    let total = ms(started.elapsed());
    each.sort();
    Ok((total, ms(saving), each[each.len() / 2].as_secs_f64() * 1e6))
}

/// The lab issue 29 measures a change on: `groups` groups with `offsets` commits between them
/// (each a `__consumer_offsets` record) and, with the produces, `history` history lines.
fn big_setup(groups: usize, offsets: usize, history: usize) -> String {
    let mut text = String::from("topic orders\nproduce orders count=12\nconsumer c1 group=g topic=orders reset=earliest\npoll c1\nprocess c1 count=all\n");
    for i in 0..offsets {
        let g = i % groups;
        text.push_str(&format!(
            "alter-offsets g{g} offsets=orders:0={}\n",
            i / groups % 12
        ));
    }
    let produces = history.saturating_sub(offsets + 5);
    text.push_str(&"produce orders count=1\n".repeat(produces));
    text
}

/// What [`big_lab`] measured.
struct BigLab {
    history_lines: usize,
    build_s: f64,
    warm_up_ms: f64,
    produces_ms: f64,
    median_produce_us: f64,
    saves_ms: f64,
    lab_json_bytes: u64,
    journal_bytes_per_produce: f64,
    undo_ms: f64,
}

/// The big lab built (timed), 100 actions on it, then a batch whose second line fails.
fn big_lab(dir: &std::path::Path) -> anyhow::Result<BigLab> {
    let setup = big_setup(BIG_GROUPS, BIG_OFFSETS, BIG_HISTORY);
    let started = Instant::now();
    let mut s = Session::new(durable(dir), &setup).map_err(|e| anyhow::anyhow!("{}", e.error))?;
    s.save()?;
    let built = started.elapsed().as_secs_f64();
    let warm_up_ms = warm_up(&mut s)?;
    let journal_before = journal_bytes(s.generation_dir());
    let (hundred, saving, median_us) = hundred_saving(&mut s, Actions::Produces)?;
    let journal_after = journal_bytes(s.generation_dir());
    // The snapshot: the larger slot of `lab.json` (the newer, unless one was torn).
    let lab_json = (0..2)
        .filter_map(|n| {
            s.generation_dir()
                .and_then(|g| std::fs::metadata(g.join(format!("lab.json.{n}"))).ok())
        })
        .map(|m| m.len())
        .max()
        .unwrap_or(0);
    let before = s.history_len();
    let started = Instant::now();
    let refused = s.apply_lines(&lines(&[
        "produce orders count=1",
        "produce no-such-topic count=1",
    ]));
    let undo = ms(started.elapsed());
    anyhow::ensure!(refused.is_err(), "the batch meant to fail was applied");
    anyhow::ensure!(
        s.history_len() == before,
        "the failed batch's first line was not undone ({} lines, {before} before)",
        s.history_len()
    );
    Ok(BigLab {
        history_lines: before,
        build_s: built,
        warm_up_ms,
        produces_ms: hundred,
        median_produce_us: median_us,
        saves_ms: saving,
        lab_json_bytes: lab_json,
        journal_bytes_per_produce: journal_after.saturating_sub(journal_before) as f64 / 100.0,
        undo_ms: undo,
    })
}

const BIG_GROUPS: usize = 1_000;
const BIG_OFFSETS: usize = 100_000;
const BIG_HISTORY: usize = 1_000_000;

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
                println!(
                    "100 produces, each applied and saved, on a fresh lab: {:.1} ms",
                    f.fresh_100_produces_ms
                );
                println!(
                    "the big lab ({} groups, {} __consumer_offsets records, {} history lines) built in {:.1} s; its snapshot: {} bytes; its first {WARM_UP} produces: {:.1} ms",
                    f.big_groups, f.big_offsets_records, f.big_history_lines, f.big_build_s, f.big_lab_json_bytes, f.big_warm_up_produces_ms
                );
                println!(
                    "  100 produces on it: {:.1} ms ({:.2}× the fresh lab's; saving {:.1} ms of it, {:.0} journal bytes a produce); a failed batch undone: {:.1} ms",
                    f.big_100_produces_ms, f.big_ratio, f.big_100_saves_ms, f.big_journal_bytes_per_produce, f.big_undo_ms
                );
                println!(
                    "  one produce (the median of the 100): {:.0} µs on the big lab, {:.0} µs on a fresh lab ({:.2}×)",
                    f.big_median_produce_us, f.fresh_median_produce_us, f.big_median_ratio
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
    let (mut produces, mut medians) = (Vec::new(), Vec::new());
    for round in 0..3 {
        let mut s = Session::new(durable(&dir.path().join(format!("produces-{round}"))), base)
            .map_err(|e| anyhow::anyhow!("{}", e.error))?;
        s.save()?;
        warm_up(&mut s)?;
        let (total, _, median_us) = hundred_saving(&mut s, Actions::Produces)?;
        produces.push(total);
        medians.push(median_us);
    }
    let fresh_100_produces_ms = median(&mut produces);
    let fresh_median_produce_us = median(&mut medians);
    let big = big_lab(&dir.path().join("big"))?;
    Ok(Figures {
        century_tick_ms,
        longest_wait_during_tick_ms,
        state_requests_during_tick,
        fresh_100_actions_ms,
        long_narrative_events: events,
        long_narrative_100_actions_ms,
        long_narrative_ratio: long_narrative_100_actions_ms / fresh_100_actions_ms,
        big_groups: BIG_GROUPS,
        big_offsets_records: BIG_OFFSETS,
        big_history_lines: big.history_lines,
        big_build_s: big.build_s,
        big_lab_json_bytes: big.lab_json_bytes,
        big_journal_bytes_per_produce: big.journal_bytes_per_produce,
        big_warm_up_produces_ms: big.warm_up_ms,
        big_100_produces_ms: big.produces_ms,
        big_100_saves_ms: big.saves_ms,
        fresh_100_produces_ms,
        big_ratio: big.produces_ms / fresh_100_produces_ms,
        fresh_median_produce_us,
        big_median_produce_us: big.median_produce_us,
        big_median_ratio: big.median_produce_us / fresh_median_produce_us,
        big_undo_ms: big.undo_ms,
    })
}
