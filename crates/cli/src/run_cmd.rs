//! `offsetlab run`: a scenario file or a built-in lesson, its narrative and its figures.

use crate::exit;
use crate::output;
use crate::style::{self, paint};
use anstream::println;
use offsetlab_engine::log::MemoryStore;
use offsetlab_engine::sink::{MemorySinks, SinkFactory};
use offsetlab_engine::Lab;
use offsetlab_scenario::command::Outcome;
use offsetlab_scenario::lessons::{find, Lesson};
use offsetlab_scenario::{Runner, ScenarioError, Script};
use offsetlab_sqlite::SqliteSinks;
use std::path::Path;

/// Where a scenario comes from: a file, or a lesson built into the binary.
pub enum Input<'a> {
    File(&'a Path),
    Lesson(&'static Lesson),
}

impl<'a> Input<'a> {
    /// `run FILE` or `run --lesson LESSON` (clap lets exactly one through).
    pub fn new(file: Option<&'a Path>, lesson: Option<&str>) -> Result<Self, (String, u8)> {
        match (file, lesson) {
            (_, Some(l)) => crate::lesson_lookup::resolve(l)
                .map(Input::Lesson)
                .map_err(|e| (e.to_string(), exit::INVALID_SCENARIO)),
            (Some(f), None) => Ok(Input::File(f)),
            (None, None) => Err(("give a scenario file or --lesson".into(), exit::INVALID_SCENARIO)),
        }
    }

    /// How errors name it: the file as given, or `lessons/NN-name.scn`.
    pub fn origin(&self) -> String {
        match self {
            Input::File(f) => f.display().to_string(),
            Input::Lesson(l) => format!("lessons/{}.scn", l.file),
        }
    }

    /// The scenario's text, or why it cannot be read (exit code 3). A lesson's file that is
    /// not here (outside a checkout) is named as the built-in lesson it is.
    pub fn source(&self) -> Result<String, (String, u8)> {
        match self {
            Input::Lesson(l) => Ok(l.source.to_string()),
            Input::File(f) => std::fs::read_to_string(f).map_err(|e| {
                let hint = f
                    .file_stem()
                    .and_then(|s| s.to_str())
                    .and_then(find)
                    .filter(|_| e.kind() == std::io::ErrorKind::NotFound)
                    .map(|l| {
                        format!(
                            " (lesson {} is built in: `offsetlab lessons {}` or `offsetlab run --lesson {}` run it from any directory)",
                            l.number(),
                            l.number(),
                            l.number()
                        )
                    })
                    .unwrap_or_default();
                (format!("cannot read {}: {e}{hint}", f.display()), exit::IO_ERROR)
            }),
        }
    }
}

pub fn run_input(input: &Input, json: bool, sqlite: Option<&Path>, quiet: bool) -> u8 {
    let source = match input.source() {
        Ok(s) => s,
        Err(e) => return exit::said(e),
    };
    let sinks: Box<dyn SinkFactory> = match sqlite {
        None => Box::new(MemorySinks),
        Some(dir) => match SqliteSinks::new(dir) {
            Ok(s) => Box::new(s),
            Err(e) => {
                style::say_error!("{e}");
                return exit::IO_ERROR;
            }
        },
    };
    run_source(&input.origin(), &source, sinks, json, quiet)
}

/// Runs `source`, printing as it goes. `origin` names the file in errors.
pub fn run_source(origin: &str, source: &str, sinks: Box<dyn SinkFactory>, json: bool, quiet: bool) -> u8 {
    let script = match Script::parse(source) {
        Ok(s) => s,
        Err(e) => return report_error(origin, &e, json),
    };
    let mut runner = Runner::new(Lab::new(Box::new(MemoryStore), sinks));
    let verbose = !json && !quiet;
    let lines: Vec<&str> = source.lines().collect();
    let mut printed_upto = 0;
    let result = runner.run(&script, &mut |line, outcome, events| {
        if !verbose {
            return;
        }
        // Comment lines above a command explain it: print them first.
        for (i, text) in lines.iter().enumerate().take(line.number - 1).skip(printed_upto) {
            let t = text.trim();
            if let Some(c) = t.strip_prefix('#') {
                let c = c.trim_start_matches('#').trim();
                // The first line of a lesson is its title.
                let style = if i == 0 {
                    style::HEADING
                } else {
                    anstyle::Style::new()
                };
                println!("  {}", paint(style, c));
            }
        }
        printed_upto = line.number;
        println!("{}", paint(style::COMMAND, format!("$ {}", line.text)));
        if let Outcome::Reset(plan) = outcome {
            output::reset_plan(plan);
        }
        if matches!(line.command, offsetlab_scenario::Command::Expect(_)) {
            println!("  {}", paint(style::GOOD, "✓ holds"));
        }
        output::events(events);
    });
    if let Err(e) = result {
        if verbose {
            if let (ScenarioError::Expectation { failures, .. }, Some(text)) = (&e, e.text()) {
                println!("{}", paint(style::COMMAND, format!("$ {text}")));
                println!("  {}", paint(style::LOSS, format!("✗ does not hold: {failures}")));
            }
            output::summary(&match runner.lab.view() {
                Ok(v) => v,
                Err(_) => return report_error(origin, &e, json),
            });
            println!();
        }
        return report_error(origin, &e, json);
    }
    let view = match runner.lab.view() {
        Ok(v) => v,
        Err(e) => {
            crate::style::say_error!("{e}");
            return exit::IO_ERROR;
        }
    };
    if json {
        match serde_json::to_string_pretty(&view) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                crate::style::say_error!("{e}");
                return exit::IO_ERROR;
            }
        }
    } else {
        output::summary(&view);
    }
    exit::OK
}

fn report_error(origin: &str, e: &ScenarioError, json: bool) -> u8 {
    crate::style::say_error!("{origin}:{}: {}", e.line(), e.reason());
    if let Some(text) = e.text() {
        eprintln!("    {text}");
    }
    if json {
        println!(
            "{}",
            serde_json::json!({ "error": e.reason(), "line": e.line(), "file": origin })
        );
    }
    match e {
        ScenarioError::Expectation { .. } => exit::EXPECTATION_FAILED,
        ScenarioError::Rejected {
            error: offsetlab_engine::LabError::Sink(_),
            ..
        } => exit::IO_ERROR,
        _ => exit::INVALID_SCENARIO,
    }
}
