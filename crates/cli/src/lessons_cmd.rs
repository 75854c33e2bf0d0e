//! `offsetlab lessons`: list the embedded lessons, or run one.

use crate::exit;
use offsetlab_engine::sink::MemorySinks;
use offsetlab_scenario::lessons::{find, LESSONS};

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
    println!("Lessons (run one with `offsetlab lessons N`, or `offsetlab run lessons/FILE.scn`):\n");
    for l in LESSONS {
        println!("  {:>2}  {}", l.number(), l.title());
        println!("      lessons/{}.scn", l.file);
    }
    exit::OK
}

pub fn run(id: &str, json: bool) -> u8 {
    match find(id) {
        Some(l) => crate::run_cmd::run_source(
            &format!("lessons/{}.scn", l.file),
            l.source,
            Box::new(MemorySinks),
            json,
            false,
        ),
        None => {
            crate::style::say_error!("no lesson '{id}' (see `offsetlab lessons`)");
            exit::INVALID_SCENARIO
        }
    }
}
