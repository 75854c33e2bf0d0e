//! The lessons: scenario files from `lessons/`, embedded in the binary.

use crate::exit;
use offsetlab_engine::sink::MemorySinks;
use offsetlab_scenario::Script;

pub struct Lesson {
    pub file: &'static str,
    pub source: &'static str,
}

macro_rules! lessons {
    ($($file:literal),* $(,)?) => {
        &[$(Lesson { file: $file, source: include_str!(concat!("../../../lessons/", $file, ".scn")) }),*]
    };
}

pub const LESSONS: &[Lesson] = lessons![
    "01-auto-commit-timer-loses",
    "02-commit-after-duplicates",
    "03-upsert-converges",
    "04-rewind-to-earliest",
    "05-new-group-from-zero",
    "08-reset-to-timestamp",
    "10-java-vs-librdkafka-auto-commit",
];

fn number(l: &Lesson) -> &str {
    l.file.split('-').next().unwrap_or("")
}

pub fn find(id: &str) -> Option<&'static Lesson> {
    let id = id.trim_end_matches(".scn");
    LESSONS.iter().find(|l| {
        l.file == id || number(l) == id || number(l).trim_start_matches('0') == id.trim_start_matches('0')
    })
}

pub fn list(json: bool) -> u8 {
    if json {
        let items: Vec<serde_json::Value> = LESSONS
            .iter()
            .map(|l| {
                serde_json::json!({
                    "number": number(l).parse::<u32>().unwrap_or(0),
                    "file": format!("lessons/{}.scn", l.file),
                    "title": Script::title(l.source),
                })
            })
            .collect();
        println!("{}", serde_json::Value::Array(items));
        return exit::OK;
    }
    println!("Lessons (run one with `offsetlab lessons N`, or `offsetlab run lessons/FILE.scn`):\n");
    for l in LESSONS {
        println!(
            "  {:>2}  {}",
            number(l).trim_start_matches('0'),
            Script::title(l.source).unwrap_or_default()
        );
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
            eprintln!("error: no lesson '{id}' (see `offsetlab lessons`)");
            exit::INVALID_SCENARIO
        }
    }
}
