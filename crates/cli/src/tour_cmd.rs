//! `offsetlab tour`: the seed experiment, one step at a time.
//!
//! One lab, driven by scenario lines as `offsetlab run` drives one: ① the seed's consumer
//! (timer auto-commit, append-only sink) killed mid-batch; ② the same lines — the same crash at
//! the same instant — for a consumer that commits after its batch into an upsert sink; ③ both
//! groups rewound to the start of the log and replayed. Before each answer the learner is
//! asked to guess it. The scripts carry `expect` lines for every figure the tour's sentences
//! state, so the words cannot drift from what the engine does.
//!
//! When stdin is not a terminal nothing is asked: the questions are printed, then the answers.

use crate::exit;
use crate::output;
use crate::style::{self, paint, Tone};
use anstream::{print, println};
use offsetlab_engine::lab::GroupView;
use offsetlab_engine::narrative::Event;
use offsetlab_engine::Lab;
use offsetlab_scenario::{Runner, Script};
use std::io::{BufRead as _, IsTerminal as _, Write as _};

/// The seed situation: 12 orders, the group's bookmark at 0.
const SETUP: &str = "\
topic orders partitions=1
produce orders count=12
reset-offsets analytics-prod topic=orders to-earliest execute
";

/// The knob of step ①: librdkafka's auto-commit timer into an append-only ledger.
const TIMER_APPEND: &str = "consumer c1 group=analytics-prod topic=orders commit=auto-timer interval=5s max-poll=4 sink=append session-timeout=6s";

/// The knob of step ②: commitSync after the whole batch, into a view keyed by order id.
const AFTER_UPSERT: &str = "consumer c2 group=orders-view topic=orders commit=manual-batch max-poll=4 sink=upsert reset=earliest session-timeout=6s";

/// Both steps' consumer `{c}`: a batch of 4 at a second a record, one record of the second
/// batch, then kill -9 at t=5s — right after the timer's commit — and a restart once the group
/// has given up on the dead member (session.timeout.ms).
const CRASH: &str = "\
poll {c}
process {c}
tick 1s
process {c}
tick 1s
process {c}
tick 1s
process {c}
tick 1s
poll {c}
process {c}
tick 1s
crash {c}
tick 6s
restart {c}
";

/// Step ①'s consumer reads on from the committed offset, 8, and its timer commits the end.
const STEP1_REST: &str = "\
poll c1
process c1 count=all
tick 5s
close c1
expect group=analytics-prod lost=3 duplicates=0 sink-rows=9 distinct-keys=9 duplicate-rows=0
";

/// Step ②'s consumer reads on from the committed offset, 4.
const STEP2_REST: &str = "\
poll c2
process c2 count=all
poll c2
process c2 count=all
close c2
expect group=orders-view lost=0 duplicates=1 sink-rows=12 distinct-keys=12 duplicate-rows=0
";

const REWIND: &str = "\
reset-offsets analytics-prod topic=orders to-earliest execute
reset-offsets orders-view topic=orders to-earliest execute
";

/// Step ③ after the rewind: both consumers read the whole log again.
const REPLAY: &str = "\
restart c1
restart c2
poll c1
process c1 count=all
poll c1
process c1 count=all
poll c1
process c1 count=all
poll c2
process c2 count=all
poll c2
process c2 count=all
poll c2
process c2 count=all
expect group=analytics-prod lost=0 sink-rows=21 distinct-keys=12 duplicate-rows=9
expect group=orders-view lost=0 sink-rows=12 distinct-keys=12 duplicate-rows=0
";

/// The tour's scripts, in the order they run: (step, scenario text).
fn scripts() -> [(u8, String); 3] {
    let crash = |c: &str| CRASH.replace("{c}", c);
    [
        (1, format!("{SETUP}{TIMER_APPEND}\n{}{STEP1_REST}", crash("c1"))),
        (2, format!("{AFTER_UPSERT}\n{}{STEP2_REST}", crash("c2"))),
        (3, format!("{REWIND}{REPLAY}")),
    ]
}

/// The lab the tour drives, and the learner at the keyboard (or not).
struct Tour {
    runner: Runner,
    /// Whether questions wait for an answer: stdin is a terminal that has not reached its end.
    asking: bool,
}

impl Tour {
    /// Runs scenario `text` on the tour's lab: the events it told, or why it stopped.
    fn run(&mut self, text: &str) -> Result<Vec<Event>, String> {
        let script = Script::parse(text).map_err(|e| e.to_string())?;
        let mut told = Vec::new();
        self.runner
            .run(&script, &mut |_, _, events| told.extend_from_slice(events))
            .map_err(|e| e.to_string())?;
        Ok(told)
    }

    fn group(&self, name: &str) -> Result<GroupView, String> {
        let view = self.runner.lab.view().map_err(|e| e.to_string())?;
        view.groups
            .get(name)
            .cloned()
            .ok_or_else(|| format!("no group {name}"))
    }

    /// Asks `question`: the learner's number, if they typed one.
    fn ask(&mut self, question: &str) -> Option<u64> {
        if !self.asking {
            println!("{}", paint(style::QUESTION, format!("? {question}")));
            return None;
        }
        print!("{} ", paint(style::QUESTION, format!("? {question}")));
        let answer = self.read_line()?;
        answer.trim().parse().ok()
    }

    /// Waits for Enter before `next`.
    fn pause(&mut self, next: &str) {
        if self.asking {
            print!("{}", paint(style::DIM, format!("  [Enter: {next}] ")));
            let _ = self.read_line();
        }
    }

    /// A line from the keyboard; at its end (or an error) the tour stops asking.
    fn read_line(&mut self) -> Option<String> {
        let _ = std::io::stdout().flush();
        let mut line = String::new();
        match std::io::stdin().lock().read_line(&mut line) {
            Ok(n) if n > 0 => Some(line),
            _ => {
                println!();
                self.asking = false;
                None
            }
        }
    }
}

/// `offsetlab tour`.
pub fn tour() -> u8 {
    let mut tour = Tour {
        runner: Runner::new(Lab::default()),
        asking: std::io::stdin().is_terminal(),
    };
    match play(&mut tour) {
        Ok(()) => exit::OK,
        Err(e) => {
            style::say_error!("the tour's own scenario failed (a bug): {e}");
            exit::INVALID_SCENARIO
        }
    }
}

fn play(tour: &mut Tour) -> Result<(), String> {
    let [(_, step1), (_, step2), (_, step3)] = scripts();
    intro(tour);
    timer_append(tour, &step1)?;
    after_upsert(tour, &step2)?;
    rewind_both(tour, &step3)?;
    what_you_saw();
    Ok(())
}

/// The crash the tour is about, said once before its three steps.
fn intro(tour: &Tour) {
    println!(
        "{}\n",
        paint(
            style::HEADING,
            "offsetlab tour — one crash, three ways to live with it"
        )
    );
    println!("Topic orders holds 12 order events (offsets 0..11). A consumer polls them 4 at a time,");
    println!("spends 1 s on each, and is killed (kill -9) at t=5s, in the middle of its second batch,");
    println!(
        "then restarted. What that costs depends on when it commits its offset, and how its sink writes."
    );
    if tour.asking {
        println!(
            "{}",
            paint(
                style::DIM,
                "(Answer with a number and Enter, or just Enter to see.)"
            )
        );
    }
}

/// ① The seed: timer auto-commit, append-only sink — records lost.
fn timer_append(tour: &mut Tour, script: &str) -> Result<(), String> {
    // ① The seed: timer auto-commit, append-only sink.
    heading("① A timer auto-commit, an append-only sink");
    knob(TIMER_APPEND);
    println!("  librdkafka-style: the offset of every record poll hands over is stored, and a timer");
    println!("  commits it every 5 s, written or not. At t=5s c1 has written 0..4; 5, 6, 7 are still in its hands.");
    println!();
    let guess = tour.ask("How many of the 12 orders will never reach the sink?");
    let events = tour.run(script)?;
    let g = tour.group("analytics-prod")?;
    highlights(&events);
    println!(
        "  → {}, {}: the sink holds {} rows for 12 orders.",
        paint(
            style::count(g.audit.lost, style::LOSS),
            format!("{} lost{}", g.audit.lost, lost_offsets(&g))
        ),
        duplicate_rows(&g),
        g.sink.rows
    );
    verdict(guess, g.audit.lost);
    why("the timer committed offset 8 before 5, 6 and 7 were written; the restarted consumer starts at the committed offset, so nothing ever writes them — and nothing says so.");
    tour.pause("step ②");
    Ok(())
}

/// ② The same crash with a commit after the batch and an upsert sink — no loss, no
/// duplicate row.
fn after_upsert(tour: &mut Tour, script: &str) -> Result<(), String> {
    // ② The same crash: commit after the batch, upsert sink.
    heading("② A commit after the batch, an upsert sink — the same crash at the same point");
    knob(AFTER_UPSERT);
    println!("  commitSync once the whole batch is written; the sink writes by order id, so writing an");
    println!("  order twice overwrites its row.");
    println!();
    let lost_guess = tour.ask("How many orders will be lost this time?");
    let rows_guess = tour.ask("And how many duplicate rows will the sink hold?");
    let events = tour.run(script)?;
    let g = tour.group("orders-view")?;
    highlights(&events);
    println!(
        "  → {}, {} applied twice, {}: the sink holds {} rows for 12 orders.",
        paint(
            style::count(g.audit.lost, style::LOSS),
            format!("{} lost", g.audit.lost)
        ),
        paint(
            style::count(g.audit.duplicates, style::DUPLICATE),
            format!("{} record", g.audit.duplicates)
        ),
        duplicate_rows(&g),
        g.sink.rows
    );
    verdict(lost_guess, g.audit.lost);
    verdict(rows_guess, g.sink.duplicate_rows);
    why("the last commit was 4, the end of the first batch, so the restarted consumer reads 4..7 again (at-least-once) and the upsert rewrites the order it had already written instead of adding a row.");
    tour.pause("step ③");
    Ok(())
}

/// ③ Both groups rewound and replayed: the append sink doubles, the upsert converges.
fn rewind_both(tour: &mut Tour, script: &str) -> Result<(), String> {
    // ③ Rewind both.
    heading("③ Rewind both groups to the start of the log and replay it");
    for line in REWIND.lines() {
        knob(line);
    }
    println!("  Reading deletes nothing: the 12 orders are still in the log. Both consumers are stopped");
    println!(
        "  (a group's offsets move only while it has no members), rewound to 0, restarted, read to the end."
    );
    println!();
    tour.run(script)?;
    let ledger = tour.group("analytics-prod")?;
    let view = tour.group("orders-view")?;
    let row = |name: &str, g: &GroupView| {
        vec![
            name.to_string(),
            g.sink.kind.to_string(),
            g.sink.rows.to_string(),
            g.sink.distinct_keys.to_string(),
            g.sink.duplicate_rows.to_string(),
            g.audit.lost.to_string(),
        ]
    };
    output::indented_figures_table(
        "  ",
        &[
            "GROUP",
            "SINK",
            "ROWS",
            "DISTINCT-ORDERS",
            "DUPLICATE-ROWS",
            "LOST",
        ],
        &[row("analytics-prod", &ledger), row("orders-view", &view)],
        &|column, cell| match column {
            4 => output::count_cell(cell, style::DUPLICATE),
            5 => output::count_cell(cell, style::LOSS),
            _ => anstyle::Style::new(),
        },
    );
    println!();
    let recovered = match ledger.audit.replayed_since_rewind {
        0 => String::new(),
        n => format!(" the {n} orders it had lost, and"),
    };
    println!(
        "  The ledger got{recovered} a second copy of the others: {}.",
        paint(
            style::DUPLICATE,
            format!(
                "{} rows > {} distinct orders",
                ledger.sink.rows, ledger.sink.distinct_keys
            )
        )
    );
    println!(
        "  The upsert view converged: {}. A replay rebuilds only what writes idempotently.",
        paint(
            style::GOOD,
            format!(
                "{} rows = {} distinct orders",
                view.sink.rows, view.sink.distinct_keys
            )
        )
    );
    tour.pause("what it means");
    Ok(())
}

/// What the three steps showed, and where to go next.
fn what_you_saw() {
    heading("What you saw");
    println!("  commit before the work is done (a timer, commit-before)  → a crash loses records, silently");
    println!("  commit after the work                                    → a crash replays records (at-least-once)");
    println!("  an upsert sink, keyed by what the record is about        → a replay, by accident or on purpose, converges");
    heading("Next");
    println!("  offsetlab serve          the lab in your browser, http://127.0.0.1:7070 (in a checkout: cargo run --release)");
    println!(
        "  offsetlab lessons        {} lessons, each a scenario that proves its point (offsetlab lessons upsert)",
        offsetlab_scenario::lessons::LESSONS.len()
    );
    println!("  offsetlab explore        every commit strategy × sink, crashed at every instant");
    println!("  offsetlab seed > my.scn  the seed scenario to change, then: offsetlab run my.scn");
}

fn heading(text: &str) {
    println!();
    println!("{}", paint(style::HEADING, text));
}

/// A scenario line the step turns on.
fn knob(line: &str) {
    println!("  {}", paint(style::COMMAND, format!("$ {line}")));
}

fn why(text: &str) {
    println!("  Why: {text}");
}

/// The events worth stopping at (losses, crashes, records applied again), at most four.
fn highlights(events: &[Event]) {
    let shown: Vec<&Event> = events
        .iter()
        .filter(|e| {
            matches!(
                style::tone(e),
                Tone::Loss | Tone::Crash | Tone::Duplicate | Tone::Refused
            )
        })
        .collect();
    output::events(&shown.iter().take(4).map(|e| (*e).clone()).collect::<Vec<_>>());
    if shown.len() > 4 {
        println!("  … and {} more like these", shown.len() - 4);
    }
}

fn duplicate_rows(g: &GroupView) -> String {
    paint(
        style::count(g.sink.duplicate_rows, style::DUPLICATE),
        format!("{} duplicate rows", g.sink.duplicate_rows),
    )
}

/// ` (offsets 5..7)`, or nothing.
fn lost_offsets(g: &GroupView) -> String {
    let ranges: Vec<String> = g
        .partitions
        .iter()
        .flat_map(|p| &p.lost_ranges)
        .map(|&(a, b)| {
            if b - a == 1 {
                a.to_string()
            } else {
                format!("{a}..{}", b - 1)
            }
        })
        .collect();
    if ranges.is_empty() {
        String::new()
    } else {
        format!(" (offsets {})", ranges.join(", "))
    }
}

/// What the learner's guess was worth.
fn verdict(guess: Option<u64>, actual: u64) {
    match guess {
        Some(g) if g == actual => println!("  {}", paint(style::GOOD, format!("You said {g}: right."))),
        Some(g) => println!("  You said {g}; it is {actual}."),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tours_scripts_hold_what_its_sentences_say() {
        let mut tour = Tour {
            runner: Runner::new(Lab::default()),
            asking: false,
        };
        for (step, text) in scripts() {
            if let Err(e) = tour.run(&text) {
                panic!("step {step}: {e}");
            }
        }
        let ledger = tour.group("analytics-prod").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!((ledger.sink.rows, ledger.sink.distinct_keys), (21, 12));
    }

    #[test]
    fn step_one_loses_offsets_five_to_seven() {
        let mut tour = Tour {
            runner: Runner::new(Lab::default()),
            asking: false,
        };
        let [(_, step1), ..] = scripts();
        tour.run(&step1).unwrap_or_else(|e| panic!("{e}"));
        let g = tour.group("analytics-prod").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(lost_offsets(&g), " (offsets 5..7)");
    }
}
