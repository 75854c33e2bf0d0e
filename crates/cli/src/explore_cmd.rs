//! `offsetlab explore`.

use crate::exit;
use crate::style::{paint, HEADING};
use anstream::println;
use offsetlab_scenario::explore::{explore as explore_matrix, Cell};
use offsetlab_scenario::explore_share::{explore_share, ShareCell};
use offsetlab_scenario::Script;
use std::path::Path;

pub fn explore(file: Option<&Path>, consumer: Option<&str>, json: bool) -> u8 {
    let (origin, script) = match read_script(file) {
        Ok(read) => read,
        Err(code) => return code,
    };
    let started = std::time::Instant::now();
    let cells = match explore_matrix(&script, consumer) {
        Ok(c) => c,
        Err(e) => {
            crate::style::say_error!("{origin}: {}", e.reason());
            return exit::INVALID_SCENARIO;
        }
    };
    let elapsed = started.elapsed();
    if json {
        match serde_json::to_string_pretty(&cells) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                crate::style::say_error!("{e}");
                return exit::IO_ERROR;
            }
        }
        return exit::OK;
    }
    print_matrix(&cells, &origin);
    let runs: u64 = cells.iter().map(|c| c.crash_points + 1).sum();
    println!("\n{runs} runs in {:.1} ms.", elapsed.as_secs_f64() * 1000.0);
    print_verdicts(&cells, file.is_none());
    match explore_share(&script, consumer) {
        Ok(rows) => print_share_rows(&rows),
        // The matrix stands on its own: say why this scenario has no share rows.
        Err(e) => crate::style::say_warning!("{origin}: no share rows for this scenario: {}", e.reason()),
    }
    exit::OK
}

/// The share rows: the same application as a share group's consumer, in both acknowledgement
/// modes, crashed at every instant.
fn print_share_rows(rows: &[ShareCell]) {
    println!(
        "\n{}\n",
        paint(
            HEADING,
            "The same application as a share group's consumer (KIP-932), crashed at every instant:"
        )
    );
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            [format!("share, {} acks", r.mode)]
                .into_iter()
                .chain([r.crash_points, r.max_lost, r.total_lost, r.max_duplicates].map(|n| n.to_string()))
                .collect()
        })
        .collect();
    crate::output::figures_table(
        &[
            "CONSUMER",
            "CRASH-POINTS",
            "MAX-LOST",
            "TOTAL-LOST",
            "MAX-DUPLICATES",
        ],
        &table,
        &|column, cell| match column {
            2 | 3 => crate::output::count_cell(cell, crate::style::LOSS),
            4 => crate::output::count_cell(cell, crate::style::DUPLICATE),
            _ => anstyle::Style::new(),
        },
    );
    println!(
        "\nA crash releases what the member held at once: never a loss, but what it processed and had not\nacknowledged is processed again. Implicit acknowledgement accepts a poll's records at the next\npoll, processed or not; acknowledging each record once processed narrows the window to one."
    );
}

/// The scenario to explore (the seed without a file) and what to call it in messages; the
/// exit code when it cannot be read or parsed.
fn read_script(file: Option<&Path>) -> Result<(String, Script), u8> {
    let (origin, source) = match file {
        None => ("seed".to_string(), offsetlab_scenario::SEED_SCENARIO.to_string()),
        Some(f) => match std::fs::read_to_string(f) {
            Ok(s) => (f.display().to_string(), s),
            Err(e) => {
                crate::style::say_error!("cannot read {}: {e}", f.display());
                return Err(exit::IO_ERROR);
            }
        },
    };
    match Script::parse(&source) {
        Ok(script) => Ok((origin, script)),
        Err(e) => {
            crate::style::say_error!("{origin}:{}: {}", e.line(), e.reason());
            Err(exit::INVALID_SCENARIO)
        }
    }
}

/// The matrix as a table: a row per strategy × sink, losses and duplicates coloured.
fn print_matrix(cells: &[Cell], origin: &str) {
    println!(
        "{}\n",
        paint(
            HEADING,
            format!("Crashing the consumer at every instant of {origin}, then restarting it and consuming to the end:")
        )
    );
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let figures = [
                c.crash_points,
                c.max_lost,
                c.total_lost,
                c.max_duplicates,
                c.max_duplicate_rows,
            ];
            [c.strategy.name().to_string(), c.sink.name().to_string()]
                .into_iter()
                .chain(figures.map(|n| n.to_string()))
                .collect()
        })
        .collect();
    crate::output::figures_table(
        &[
            "STRATEGY",
            "SINK",
            "CRASH-POINTS",
            "MAX-LOST",
            "TOTAL-LOST",
            "MAX-DUPLICATES",
            "MAX-DUPLICATE-ROWS",
        ],
        &rows,
        &|column, cell| match column {
            3 | 4 => crate::output::count_cell(cell, crate::style::LOSS),
            5 | 6 => crate::output::count_cell(cell, crate::style::DUPLICATE),
            _ => anstyle::Style::new(),
        },
    );
}

/// Which cells lost or duplicated at some crash point; for the seed (`seed`), the claim the
/// matrix checks.
fn print_verdicts(cells: &[Cell], seed: bool) {
    let names = |pred: &dyn Fn(&Cell) -> bool| {
        let mut v: Vec<String> = cells
            .iter()
            .filter(|c| pred(c))
            .map(|c| format!("{}×{}", c.strategy, c.sink))
            .collect();
        v.dedup();
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    };
    let marked = |cells: String, bad| {
        let style = if cells == "none" { crate::style::GOOD } else { bad };
        paint(style, cells)
    };
    println!(
        "Lost records at some crash point: {}",
        marked(names(&|c| c.max_lost > 0), crate::style::LOSS)
    );
    println!(
        "Duplicate rows at some crash point: {}",
        marked(names(&|c| c.max_duplicate_rows > 0), crate::style::DUPLICATE)
    );
    if seed {
        println!(
            "\nThe claim: commit-before and timer auto-commit lose records; commit-after never loses but"
        );
        println!(
            "duplicates into an append sink; an upsert sink never grows duplicate rows; the transactional"
        );
        println!("sink and Kafka transactions (kafka-tx) neither lose nor duplicate.");
    }
}
