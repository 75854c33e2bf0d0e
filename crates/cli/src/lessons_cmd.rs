//! `offsetlab lessons`: list the embedded lessons, or find one and run it.
//!
//! The lessons are compiled into the binary (`offsetlab_scenario::lessons::LESSONS`), so
//! nothing here reads `lessons/`: every command works from any directory.

use crate::exit;
use crate::lesson_lookup::resolve;
use crate::style::{self, paint};
use anstream::println;
use offsetlab_engine::sink::MemorySinks;
use offsetlab_scenario::lessons::LESSONS;

pub fn list(json: bool) -> u8 {
    if json {
        let items: Vec<serde_json::Value> = LESSONS
            .iter()
            .map(|l| {
                serde_json::json!({
                    "number": l.number(),
                    "file": format!("lessons/{}.scn", l.file),
                    "title": l.title(),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(items));
        return exit::OK;
    }
    println!(
        "{}\n",
        paint(
            style::HEADING,
            "Lessons (built into offsetlab: they run from any directory)"
        )
    );
    for l in LESSONS {
        println!("  {:>2}  {}", l.number(), l.title());
        println!("      {}", paint(style::DIM, l.file));
    }
    let example = LESSONS.get(2).or(LESSONS.first());
    let n = example.map_or(1, |l| l.number());
    println!();
    println!("Run one: `offsetlab lessons {n}`, or by name, or by a word of its title (`offsetlab lessons upsert`).");
    println!("Its scenario, to change and run: `offsetlab lessons {n} --source > my.scn`, then `offsetlab run my.scn`.");
    println!("Its final figures as JSON: `offsetlab run --lesson {n} --json`.");
    exit::OK
}

/// `offsetlab lessons LESSON`: runs it (or prints its scenario, with `--source`).
pub fn run(query: &str, source: bool, json: bool) -> u8 {
    let lesson = match resolve(query) {
        Ok(l) => l,
        Err(e) => {
            style::say_error!("{e}");
            return exit::INVALID_SCENARIO;
        }
    };
    if source {
        print!("{}", lesson.source);
        return exit::OK;
    }
    crate::run_cmd::run_source(
        &format!("lessons/{}.scn", lesson.file),
        lesson.source,
        Box::new(MemorySinks),
        json,
        false,
    )
}
