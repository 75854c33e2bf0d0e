//! Printing the narrative and the figures for people, coloured where the terminal takes it
//! (`crate::style`).

use crate::style::{self, paint};
use anstream::println;
use anstyle::Style;
use offsetlab_engine::clock::format_instant;
use offsetlab_engine::lab::{GroupView, LabView, ResetPlan};
use offsetlab_engine::narrative::Event;

/// A table with left-aligned columns as wide as their widest cell, one space apart, as Kafka's
/// tools print one.
pub fn table(header: &[&str], rows: &[Vec<String>]) {
    print_table("", header, rows, " ", false, &unstyled);
}

/// A table of figures for reading by eye: columns two spaces apart, and a column whose every
/// cell is a number right-aligned, so its digits line up. `paint(column, cell)` styles a cell
/// (after it is padded, so colour never moves a column).
pub fn figures_table(header: &[&str], rows: &[Vec<String>], paint: &dyn Fn(usize, &str) -> Style) {
    print_table("", header, rows, "  ", true, paint);
}

/// [`figures_table`], every line after `indent`.
pub fn indented_figures_table(
    indent: &str,
    header: &[&str],
    rows: &[Vec<String>],
    paint: &dyn Fn(usize, &str) -> Style,
) {
    print_table(indent, header, rows, "  ", true, paint);
}

/// No cell styled.
pub fn unstyled(_column: usize, _cell: &str) -> Style {
    Style::new()
}

/// A count's cell: `bad` above 0, green at 0, plain when it is not a number.
pub fn count_cell(cell: &str, bad: Style) -> Style {
    cell.parse::<u64>().map_or(Style::new(), |n| style::count(n, bad))
}

fn print_table(
    indent: &str,
    header: &[&str],
    rows: &[Vec<String>],
    gap: &str,
    numbers_right: bool,
    cell_style: &dyn Fn(usize, &str) -> Style,
) {
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i).map(String::len))
                .max()
                .unwrap_or(0)
                .max(header[i].len())
        })
        .collect();
    let right: Vec<bool> = (0..header.len())
        .map(|i| {
            numbers_right
                && rows
                    .iter()
                    .all(|r| r.get(i).is_some_and(|c| c.parse::<i64>().is_ok()))
        })
        .collect();
    let line = |cells: &mut dyn Iterator<Item = &str>, style: &dyn Fn(usize, &str) -> Style| {
        cells
            .zip(widths.iter().zip(&right))
            .enumerate()
            .map(|(i, (c, (w, &right)))| {
                // The padding stays outside the escapes, so a line still trims and aligns.
                let pad = " ".repeat(w.saturating_sub(c.chars().count()));
                let c = paint(style(i, c), c);
                if right {
                    format!("{pad}{c}")
                } else {
                    format!("{c}{pad}")
                }
            })
            .collect::<Vec<_>>()
            .join(gap)
            .trim_end()
            .to_string()
    };
    println!(
        "{indent}{}",
        line(&mut header.iter().copied(), &|_, _| style::HEADING)
    );
    for r in rows {
        println!("{indent}{}", line(&mut r.iter().map(String::as_str), cell_style));
    }
}

pub fn events(events: &[Event]) {
    for e in events {
        println!("  {}", style::event(e));
    }
}

pub fn reset_plan(plan: &ResetPlan) {
    println!(
        "  {:<16} {:<16} {:>9} {:>9} {:>12} {:>10} {:>9}  SPAN",
        "GROUP", "TOPIC-PARTITION", "CURRENT", "NEW", "REPLAYED", "SKIPPED", "DUP ROWS"
    );
    for r in &plan.rows {
        let span = r
            .span
            .map(|(a, b)| format!("{} … {}", format_instant(a), format_instant(b)))
            .unwrap_or_else(|| "-".into());
        println!(
            "  {:<16} {:<16} {:>9} {:>9} {:>12} {:>10} {:>9}  {}",
            plan.group,
            format!("{}-{}", r.topic, r.partition),
            r.current.map_or("-".into(), |c| c.to_string()),
            r.target,
            r.replayed,
            r.skipped,
            r.predicted_duplicate_rows,
            span
        );
    }
}

/// The final table: per group and partition, then the audit.
pub fn summary(view: &LabView) {
    println!();
    println!(
        "{}",
        paint(
            style::HEADING,
            format!("Final state at {}", format_instant(view.clock_ms))
        )
    );
    transactions(view);
    for (name, g) in &view.groups {
        group_summary(name, g);
    }
}

/// One group's part of the final table: its partitions, its sink and its audit.
fn group_summary(name: &str, g: &GroupView) {
    println!();
    println!(
        "{}  ({}, generation {}, members: {}; offsets in {})",
        paint(style::HEADING, format!("group {name}")),
        g.state,
        g.generation,
        if g.members.is_empty() {
            "none".to_string()
        } else {
            g.members.join(", ")
        },
        if g.offsets_source == "sink" {
            "the transactional sink"
        } else {
            "__consumer_offsets"
        }
    );
    println!(
        "  {:<16} {:>10} {:>10} {:>10} {:>6} {:>9}  OWNER",
        "TOPIC-PARTITION", "COMMITTED", "LOG-START", "LOG-END", "LAG", "POSITION"
    );
    let dash = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    for p in &g.partitions {
        println!(
            "  {:<16} {:>10} {:>10} {:>10} {:>6} {:>9}  {}",
            format!("{}-{}", p.topic, p.partition),
            dash(p.committed),
            p.log_start_offset,
            p.log_end_offset,
            dash(p.lag),
            dash(p.position),
            p.owner.clone().unwrap_or_else(|| "-".into())
        );
    }
    group_audit(g);
}

/// A group's sink and audit: rows, losses and duplicates, and the offsets lost.
fn group_audit(g: &GroupView) {
    let a = &g.audit;
    println!(
        "  sink ({}): {} rows, {} distinct orders, {}",
        g.sink.kind,
        g.sink.rows,
        g.sink.distinct_keys,
        paint(
            style::count(g.sink.duplicate_rows, style::DUPLICATE),
            format!("{} duplicate rows", g.sink.duplicate_rows)
        )
    );
    println!(
        "  {}   {} ({} redeliveries, {} of them after a crash; {} deliberate replays)   skipped on purpose: {}",
        paint(style::count(a.lost, style::LOSS), format!("silently lost: {}", a.lost)),
        paint(
            style::count(a.duplicates, style::DUPLICATE),
            format!("duplicates: {}", a.duplicates)
        ),
        a.redeliveries,
        a.crash_redeliveries,
        a.replays,
        a.skipped
    );
    if g.isolation == offsetlab_engine::txn::IsolationLevel::ReadCommitted {
        println!("  isolation.level=read_committed");
    }
    if a.aborted_read > 0 {
        println!(
            "  records of aborted transactions applied: {} (read_uncommitted)",
            a.aborted_read
        );
    }
    for p in g.partitions.iter().filter(|p| !p.lost_ranges.is_empty()) {
        let ranges: Vec<String> = p
            .lost_ranges
            .iter()
            .map(|(a, b)| {
                if b - a == 1 {
                    format!("{a}")
                } else {
                    format!("{a}..{}", b - 1)
                }
            })
            .collect();
        println!(
            "  {}",
            paint(
                style::LOSS,
                format!(
                    "lost in {}-{}: offsets {}",
                    p.topic,
                    p.partition,
                    ranges.join(", ")
                )
            )
        );
    }
}

/// Partitions with transactional data (their last stable offset, markers, aborted records) and
/// the transaction coordinator's producers.
fn transactions(view: &LabView) {
    for t in &view.topics {
        for p in t
            .partitions
            .iter()
            .filter(|p| p.markers > 0 || !p.open_transactions.is_empty())
        {
            println!();
            println!(
                "topic {}-{}: log end {}, last stable offset {}{}; {} transaction marker(s), {} aborted record(s)",
                t.name,
                p.partition,
                p.log_end_offset,
                p.last_stable_offset,
                if p.open_transactions.is_empty() {
                    ""
                } else {
                    " (a transaction is open: read_committed readers wait there)"
                },
                p.markers,
                p.aborted_records
            );
        }
    }
    for x in &view.transactions {
        println!(
            "transactional.id {}: producer id {}, epoch {}, {}{}; {} committed, {} aborted",
            x.transactional_id,
            x.producer_id,
            x.epoch,
            x.state,
            if x.pending_records > 0 {
                format!(
                    " ({} record(s) on {})",
                    x.pending_records,
                    x.partitions.join(", ")
                )
            } else {
                String::new()
            },
            x.committed,
            x.aborted
        );
    }
}
