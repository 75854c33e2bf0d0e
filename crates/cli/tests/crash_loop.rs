//! The durable lab under kill -9: a server is killed at random moments while a client produces
//! and commits, then restarted on the same data directory — over and over. An oracle of what
//! the server acknowledged checks every restart:
//!
//! - with `--flush always`, every acknowledged record is in the log, exactly once and in the
//!   order it was acknowledged, and every acknowledged commit is at least where it was;
//! - with `--flush never` the same holds here (a killed process leaves the page cache intact);
//!   what the policy gives up is a machine crash, and then the only loss is a suffix — which the
//!   storage crate's tests check by cutting the files' tails;
//! - the lab always comes back from its own files ("lab restored"), never from a replay;
//! - with snapshots taken every few saves (the journal's threshold set to 1 KiB), kills land
//!   while a snapshot is written in the background and the journal before it deleted, and still
//!   nothing acknowledged is lost.

mod common;

use common::{http, ok_json, serve_env, Lab};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A tiny deterministic generator (xorshift), so a failing run can be repeated.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

#[derive(Default)]
struct Oracle {
    /// Sequence numbers acknowledged, in acknowledgement order.
    acked: Vec<u64>,
    /// The highest committed offset an acknowledged response showed.
    committed: i64,
}

/// Every record's `seq` in `orders-0`, read back through the API in pages.
fn log_seqs(addr: &str) -> Vec<u64> {
    let mut seqs = Vec::new();
    let mut from = 0i64;
    loop {
        let path = format!("/api/records?topic=orders&partition=0&from={from}&limit=1000");
        let v = ok_json(&http(addr, "GET", &path, "").expect("records")).expect("200");
        let recs = v["records"].as_array().cloned().unwrap_or_default();
        if recs.is_empty() {
            break;
        }
        for r in &recs {
            let value = r["value"].as_str().unwrap_or_default();
            if let Some(seq) = serde_json::from_str::<serde_json::Value>(value)
                .ok()
                .and_then(|j| j["seq"].as_u64())
            {
                seqs.push(seq);
            }
        }
        from = recs.last().and_then(|r| r["offset"].as_i64()).unwrap_or(from) + 1;
    }
    seqs
}

fn committed(addr: &str) -> i64 {
    let v = ok_json(&http(addr, "GET", "/api/state", "").expect("state")).expect("200");
    v["groups"]["analytics-prod"]["committed"]["orders-0"]
        .as_i64()
        .unwrap_or(0)
}

/// Produces one record per request (its value carries `seq`), and now and then polls,
/// processes and commits, recording what was acknowledged — until `stop`.
fn client(
    addr: String,
    oracle: Arc<Mutex<Oracle>>,
    stop: Arc<AtomicBool>,
    mut next_seq: u64,
    seed: u64,
) -> u64 {
    let mut rng = Rng(seed | 1);
    while !stop.load(Ordering::Relaxed) {
        let roll = rng.next();
        let body = if roll.is_multiple_of(16) {
            // A commit, then compaction of __consumer_offsets in the same action: the commit must
            // survive a kill that lands before the action is acknowledged.
            r#"{"lines":["poll c1","process c1 count=all","commit c1","compact __consumer_offsets"]}"#
                .to_string()
        } else if roll.is_multiple_of(4) {
            r#"{"lines":["poll c1","process c1 count=all","commit c1"]}"#.to_string()
        } else {
            format!(r#"{{"lines":["produce orders count=1 key=o-{next_seq} value={{\"seq\":{next_seq}}}"]}}"#)
        };
        let produced = body.contains("produce");
        let seq = next_seq;
        if produced {
            // Every attempt gets a new seq, acknowledged or not: a seq twice in the log would be
            // the server's doing, not a client's retry.
            next_seq += 1;
        }
        let Ok(response) = http(&addr, "POST", "/api/actions", &body) else {
            break; // the server is gone
        };
        let Some(v) = ok_json(&response) else {
            if response.is_empty() {
                break;
            }
            // A refused action (nothing in flight to process) changes nothing.
            continue;
        };
        let mut o = oracle.lock().expect("oracle");
        if produced {
            o.acked.push(seq);
        } else if let Some(c) = v["state"]["groups"]["analytics-prod"]["committed"]["orders-0"].as_i64() {
            o.committed = o.committed.max(c);
        }
    }
    next_seq
}

fn check(lab: &Lab, oracle: &Oracle, round: usize) {
    assert!(
        lab.banner.contains("lab restored") || round == 0,
        "round {round}: the lab did not come back from its files:\n{}",
        lab.banner
    );
    let seqs = log_seqs(&lab.addr);
    let mut seen = BTreeMap::new();
    for (i, s) in seqs.iter().enumerate() {
        assert!(
            seen.insert(*s, i).is_none(),
            "round {round}: seq {s} is in the log twice"
        );
    }
    let mut last = None;
    for s in &oracle.acked {
        let at = seen.get(s).copied();
        assert!(at.is_some(), "round {round}: acknowledged seq {s} was lost");
        assert!(at > last, "round {round}: seq {s} is out of order");
        last = at;
    }
    let c = committed(&lab.addr);
    assert!(
        c >= oracle.committed,
        "round {round}: committed {c} went back below the acknowledged {}",
        oracle.committed
    );
}

/// The number of the newest journal in the data directory's current generation.
fn newest_journal(data: &std::path::Path) -> u64 {
    let data = data.join("lab");
    let current = std::fs::read_to_string(data.join("current")).expect("current");
    let generation = data.join(format!(
        "gen-{:06}",
        current.trim().parse::<u64>().expect("a number")
    ));
    std::fs::read_dir(generation)
        .expect("the generation")
        .filter_map(Result::ok)
        .filter_map(|e| {
            e.file_name()
                .to_string_lossy()
                .strip_prefix("lab.journal.")
                .and_then(|n| n.parse().ok())
        })
        .max()
        .expect("a journal")
}

/// `rounds` kills; with `snapshot_after`, the journal's snapshot threshold in bytes.
fn kill_loop(flush: &str, rounds: usize, seed: u64, snapshot_after: Option<&str>) {
    let env: Vec<(&str, &str)> = snapshot_after
        .map(|b| ("OFFSETLAB_JOURNAL_SNAPSHOT_BYTES", b))
        .into_iter()
        .collect();
    let serve = |args: &[&str]| serve_env(&env, args);
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().display().to_string();
    // OFFSETLAB_KEEP_DATA=1 keeps the data directory to look at after a failure.
    let _kept = std::env::var_os("OFFSETLAB_KEEP_DATA").map(|_| {
        eprintln!("data directory kept: {data}");
        dir.keep()
    });
    let oracle = Arc::new(Mutex::new(Oracle::default()));
    let mut rng = Rng(seed);
    let mut next_seq = 0;
    let started = Instant::now();
    for round in 0..rounds {
        let lab = serve(&["--data", &data, "--http", "127.0.0.1:0", "--flush", flush]);
        check(&lab, &oracle.lock().expect("oracle"), round);
        let stop = Arc::new(AtomicBool::new(false));
        let acked_before = oracle.lock().expect("oracle").acked.len();
        let worker = {
            let (addr, oracle, stop) = (lab.addr.clone(), Arc::clone(&oracle), Arc::clone(&stop));
            let seed = rng.next();
            std::thread::spawn(move || client(addr, oracle, stop, next_seq, seed))
        };
        // The load under way first (a loaded machine starts a lab and answers slowly: with no
        // request answered, a round would test nothing), for up to 5 s.
        let deadline = Instant::now() + Duration::from_secs(5);
        while oracle.lock().expect("oracle").acked.len() < acked_before + 2 && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        // Then kill at a random moment, with requests in flight: the random wait is the test.
        std::thread::sleep(Duration::from_millis(20 + rng.next() % 180));
        drop(lab); // SIGKILL
        stop.store(true, Ordering::Relaxed);
        next_seq = worker.join().expect("client");
    }
    let lab = serve(&["--data", &data, "--http", "127.0.0.1:0", "--flush", flush]);
    let o = oracle.lock().expect("oracle");
    check(&lab, &o, rounds);
    // Every start begins a journal (the first start the first); every snapshot one more.
    let snapshots = newest_journal(std::path::Path::new(&data)).saturating_sub(rounds as u64 + 1);
    if snapshot_after.is_some() {
        assert!(
            snapshots >= rounds as u64 / 4,
            "snapshots were to be taken while the load ran: {snapshots} in {rounds} rounds"
        );
    }
    assert!(
        o.acked.len() > rounds,
        "the load produced too little to mean anything: {}",
        o.acked.len()
    );
    eprintln!(
        "--flush {flush}: {rounds} kill -9 rounds, {} acknowledged records, committed {}, {snapshots} snapshots taken — all there ({:.1?})",
        o.acked.len(),
        o.committed,
        started.elapsed()
    );
}

#[test]
fn nothing_acknowledged_is_lost_by_kill_9_with_flush_always() {
    kill_loop("always", 50, 0x9e37_79b9_7f4a_7c15, None);
}

#[test]
fn kill_9_with_flush_never_loses_nothing_acknowledged_either() {
    kill_loop("never", 50, 0x2545_f491_4f6c_dd1d, None);
}

#[test]
fn kill_9_while_snapshots_are_written_and_journals_deleted_loses_nothing_acknowledged() {
    kill_loop("always", 40, 0x853c_49e6_748f_ea9b, Some("1024"));
}

#[test]
fn kill_9_while_snapshots_are_written_with_flush_never_loses_nothing_acknowledged() {
    kill_loop("never", 40, 0xda94_2042_e4dd_58b5, Some("1024"));
}
