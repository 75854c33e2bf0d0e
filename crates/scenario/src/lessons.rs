//! The lessons: scenario files from `lessons/`, embedded so the binary carries them.
//!
//! A lesson is a scenario whose comment lines explain the next action and whose `expect` lines
//! prove the point. [`steps`] cuts one into the walkthrough the web lab shows: each step is one
//! command with the comments written above it.

use crate::command::Command;
use crate::script::Script;
use serde::Serialize;

pub struct Lesson {
    /// File stem, `01-auto-commit-timer-loses`.
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
    "06-retention-out-of-range",
    "07-crash-rebalance-zombie",
    "08-reset-to-timestamp",
    "09-exactly-once-two-ways",
    "10-java-vs-librdkafka-auto-commit",
    "11-misconceptions",
    "12-share-group-acks-keep-the-log",
    "13-one-scale-out-three-protocols",
];

impl Lesson {
    /// The lesson's number, from its file name.
    pub fn number(&self) -> u32 {
        self.file
            .split('-')
            .next()
            .and_then(|n| n.parse().ok())
            .unwrap_or(0)
    }

    pub fn title(&self) -> String {
        Script::title(self.source).unwrap_or_else(|| self.file.to_string())
    }

    /// The paragraph under the title: the comment lines before the first command.
    pub fn introduction(&self) -> String {
        let mut out = Vec::new();
        for line in self
            .source
            .lines()
            .skip_while(|l| !l.trim_start().starts_with('#'))
            .skip(1)
        {
            let t = line.trim();
            match t.strip_prefix('#') {
                Some(c) => out.push(c.trim().to_string()),
                None if t.is_empty() => {
                    if !out.is_empty() {
                        break;
                    }
                }
                None => break,
            }
        }
        out.join(" ").trim().to_string()
    }
}

/// What a step asks of the learner.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum StepKind {
    /// The lines that build the lesson's world, run as one step.
    Setup,
    /// Lines to run (a poll and the processing of its batch are one step).
    Action,
    /// A crash: the learner predicts its cost before running it.
    Crash,
    /// An `expect` line: the learner reads a figure off the lab.
    Check,
}

/// The figure a learner is asked to predict before a crash, read off the lesson's own `expect`
/// lines that follow it (so the answer is the one the lab proves a moment later).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Prediction {
    /// The `expect` key: `lost`, `duplicate-rows` or `duplicates`.
    pub key: String,
    pub answer: u64,
    /// The group the figure is about, when the lesson names one.
    pub group: Option<String>,
    /// Four candidate answers, the right one among them, in increasing order.
    pub choices: Vec<u64>,
}

/// One step of a walkthrough.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Step {
    pub kind: StepKind,
    /// The comments written above the step's lines (its explanation), joined.
    pub explanation: String,
    /// The canonical command lines the step runs, in order (one for a check or a crash).
    pub lines: Vec<String>,
    /// The first line's command word (`poll`, `expect`, …).
    pub command: String,
    pub predict: Option<Prediction>,
}

/// Finds a lesson by number (`1`, `01`) or file stem.
pub fn find(id: &str) -> Option<&'static Lesson> {
    let id = id.trim_end_matches(".scn");
    LESSONS
        .iter()
        .find(|l| l.file == id || id.parse::<u32>().ok() == Some(l.number()))
}

/// Commands that build a lesson's world: a lesson's first run of them is one step.
const SETUP_COMMANDS: &[&str] = &[
    "topic",
    "produce",
    "consumer",
    "reset-offsets",
    "alter-topic",
    "init-txn",
    "alter-share-group",
    "share-consumer",
];

/// A comment line that opens the lesson's recap rather than explaining the next step.
const RECAP: &str = "Recap:";

/// The walkthrough of a lesson, folded the way a learner thinks of it: the opening setup lines
/// are one step, a comment starts a new step and the lines under it (a poll and the processing
/// of its batch, say) run together, a blank line ends a step, and every `crash` and `expect`
/// is a step of its own — a crash preceded by a prediction of what it will cost.
pub fn steps(lesson: &Lesson) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut in_intro = true;
    // Whether the next line continues the last step.
    let mut open = false;
    for line in lesson.source.lines() {
        let t = line.trim();
        if let Some(c) = t.strip_prefix('#') {
            let c = c.trim();
            if in_intro || c.starts_with(RECAP) {
                continue;
            }
            pending.push(c.to_string());
            open = false;
            continue;
        }
        in_intro = false;
        if t.is_empty() {
            open = false;
            continue;
        }
        let Ok(Some(cmd)) = Command::parse(t) else {
            continue;
        };
        let text = cmd.to_string();
        let command = text.split_whitespace().next().unwrap_or_default().to_string();
        let kind = match command.as_str() {
            "expect" => StepKind::Check,
            "crash" => StepKind::Crash,
            c if steps.iter().all(|s| s.kind == StepKind::Setup) && SETUP_COMMANDS.contains(&c) => {
                StepKind::Setup
            }
            _ => StepKind::Action,
        };
        // A trailing comment on the same line explains it too.
        let trailing = t.split_once(" #").map(|(_, c)| c.trim().to_string());
        let mut explanation = std::mem::take(&mut pending);
        explanation.extend(trailing);
        let joins = match steps.last_mut() {
            Some(last) if last.kind == StepKind::Setup && kind == StepKind::Setup => true,
            Some(last) => {
                open && last.kind == kind
                    && matches!(kind, StepKind::Action | StepKind::Crash)
                    && explanation.is_empty()
            }
            None => false,
        };
        match steps.last_mut() {
            Some(last) if joins => {
                last.lines.push(text);
                if !explanation.is_empty() {
                    last.explanation = [last.explanation.as_str(), &explanation.join(" ")]
                        .join(" ")
                        .trim()
                        .to_string();
                }
            }
            _ => steps.push(Step {
                kind,
                explanation: explanation.join(" "),
                lines: vec![text],
                command,
                predict: None,
            }),
        }
        open = kind != StepKind::Check;
    }
    for i in 0..steps.len() {
        if steps[i].kind == StepKind::Crash {
            steps[i].predict = prediction(&steps[i + 1..]);
        }
    }
    steps
}

/// What to ask before a crash: the loss if the lesson proves one, else the rows written twice,
/// else the records applied again — from the `expect` lines up to the next crash.
fn prediction(after: &[Step]) -> Option<Prediction> {
    let mut found: Vec<(&str, u64, Option<String>)> = Vec::new();
    for step in after.iter().take_while(|s| s.kind != StepKind::Crash) {
        for line in step.lines.iter().filter(|_| step.kind == StepKind::Check) {
            let pairs: Vec<(&str, &str)> = line
                .split_whitespace()
                .filter_map(|w| w.split_once('='))
                .collect();
            let group = pairs
                .iter()
                .find(|(k, _)| *k == "group" || *k == "share-group")
                .map(|(_, g)| g.to_string());
            for (k, v) in &pairs {
                if let (Some(key), Ok(v)) = (PREDICTED.iter().find(|p| *p == k), v.parse::<u64>()) {
                    found.push((key, v, group.clone()));
                }
            }
        }
    }
    // A loss the lesson proves later, for a group it first showed lost nothing after this crash,
    // came from something else (a poison record archived, say): not this crash's cost.
    let caused = |i: usize| {
        let f = &found[i];
        f.0 != "lost" || f.1 == 0 || !found[..i].iter().any(|g| g.0 == "lost" && g.1 == 0 && g.2 == f.2)
    };
    let first = |key: &str, nonzero: bool| {
        (0..found.len())
            .filter(|&i| caused(i))
            .map(|i| &found[i])
            .find(|f| f.0 == key && (!nonzero || f.1 > 0))
    };
    let (key, answer, group) = first("lost", true)
        .or_else(|| first("duplicate-rows", false))
        .or_else(|| first("duplicates", false))
        .or_else(|| first("lost", false))?
        .clone();
    Some(Prediction {
        key: key.to_string(),
        answer,
        group,
        choices: choices(answer),
    })
}

const PREDICTED: &[&str] = &["lost", "duplicate-rows", "duplicates"];

/// Four distinct candidates around `answer`, zero always among them.
fn choices(answer: u64) -> Vec<u64> {
    let mut c: Vec<u64> = vec![0];
    for candidate in [
        answer,
        answer + 1,
        answer.saturating_sub(1),
        answer * 2,
        answer + 2,
        answer + 3,
        1,
        2,
        4,
    ] {
        if c.len() == 4 {
            break;
        }
        if !c.contains(&candidate) {
            c.push(candidate);
        }
    }
    c.sort_unstable();
    c
}

impl Lesson {
    /// The lesson's closing paragraph: the comment lines from the one starting `Recap:`.
    pub fn recap(&self) -> String {
        let mut out = Vec::new();
        let mut on = false;
        for line in self.source.lines() {
            match line.trim().strip_prefix('#').map(str::trim) {
                Some(c) if c.starts_with(RECAP) => {
                    on = true;
                    out.push(c.trim_start_matches(RECAP).trim().to_string());
                }
                Some(c) if on => out.push(c.to_string()),
                _ => on = false,
            }
        }
        out.join(" ").trim().to_string()
    }

    /// About how long the walkthrough takes, in whole minutes: reading and running a step, a
    /// little longer to answer a check or make a prediction.
    pub fn minutes(&self) -> u32 {
        let seconds: u32 = steps(self)
            .iter()
            .map(|s| match s.kind {
                StepKind::Setup => 20,
                StepKind::Action => 15,
                StepKind::Crash => 30,
                StepKind::Check => 25,
            })
            .sum();
        seconds.div_ceil(60).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_lesson_parses_and_has_steps_with_expectations() {
        for l in LESSONS {
            Script::parse(l.source).unwrap_or_else(|e| panic!("{}: {e}", l.file));
            let s = steps(l);
            assert!(s.iter().any(|s| s.command == "expect"), "{}", l.file);
            assert!(!l.introduction().is_empty(), "{}", l.file);
            assert!(l.number() > 0);
        }
        assert_eq!(find("1").map(|l| l.file), Some("01-auto-commit-timer-loses"));
        assert_eq!(
            find("10-java-vs-librdkafka-auto-commit").map(Lesson::number),
            Some(10)
        );
        assert!(find("99").is_none());
    }

    #[test]
    fn steps_carry_the_comments_above_them() {
        let l = find("1").expect("lesson 1");
        let s = steps(l);
        let crash = s.iter().find(|s| s.kind == StepKind::Crash).expect("crash step");
        assert_eq!(crash.lines, ["crash c1"]);
        assert!(crash.explanation.contains("kill -9"), "{crash:?}");
    }

    #[test]
    fn a_walkthrough_folds_setup_and_batches_into_steps() {
        let s = steps(find("1").expect("lesson 1"));
        // topic, produce, reset-offsets and consumer: one step, its comment kept.
        assert_eq!(s[0].kind, StepKind::Setup);
        assert_eq!(s[0].lines.len(), 4, "{:?}", s[0]);
        assert!(s[0].explanation.contains("bookmark"), "{:?}", s[0]);
        // "First batch": a poll, four records processed and four seconds of work, one step.
        assert_eq!(s[1].kind, StepKind::Action);
        assert_eq!(s[1].lines.len(), 9, "{:?}", s[1]);
        assert!(s[1].explanation.starts_with("First batch"), "{:?}", s[1]);
        assert!(s.len() < 15, "{} steps", s.len());
        // Every line of the lesson is in exactly one step, in order.
        let lesson_lines: Vec<String> = Script::parse(find("1").expect("lesson 1").source)
            .expect("parses")
            .lines
            .iter()
            .map(|l| l.command.to_string())
            .collect();
        let walked: Vec<String> = s.iter().flat_map(|s| s.lines.clone()).collect();
        assert_eq!(walked, lesson_lines);
    }

    #[test]
    fn a_crash_asks_for_the_figure_the_lesson_then_proves() {
        let ask = |n: &str| {
            steps(find(n).expect("lesson"))
                .into_iter()
                .find(|s| s.kind == StepKind::Crash)
                .and_then(|s| s.predict)
                .map(|p| (p.key, p.answer, p.choices))
        };
        assert_eq!(ask("1"), Some(("lost".into(), 3, vec![0, 2, 3, 4])));
        assert_eq!(ask("2").map(|p| (p.0, p.1)), Some(("duplicate-rows".into(), 3)));
        assert_eq!(ask("3").map(|p| (p.0, p.1)), Some(("duplicate-rows".into(), 0)));
        // Two crashes in a row are one step, asked about the loss the lesson then proves.
        let crash = steps(find("10").expect("lesson 10"))
            .into_iter()
            .find(|s| s.kind == StepKind::Crash);
        let crash = crash.expect("a crash step");
        assert_eq!(crash.lines, ["crash j1", "crash r1"]);
        let p = crash.predict.expect("a prediction");
        assert_eq!(
            (p.key.as_str(), p.answer, p.group.as_deref()),
            ("lost", 3, Some("rdkafka"))
        );
        // Lesson 12's crash costs two records applied twice; the poison record it archives
        // later, after a check that showed nothing lost, is not asked about.
        let p = steps(find("12").expect("lesson 12"))
            .into_iter()
            .find(|s| s.kind == StepKind::Crash)
            .and_then(|s| s.predict)
            .expect("a prediction");
        assert_eq!(
            (p.key.as_str(), p.answer, p.group.as_deref()),
            ("duplicates", 2, Some("workers"))
        );
        for n in ["1", "2", "3", "9", "10", "12"] {
            let all = steps(find(n).expect("lesson"));
            assert!(
                all.iter()
                    .filter(|s| s.kind == StepKind::Crash)
                    .all(|s| s.predict.is_some()),
                "lesson {n}"
            );
        }
        for answer in [0, 1, 3, 12] {
            let c = choices(answer);
            assert_eq!(c.len(), 4, "{c:?}");
            assert!(c.contains(&answer) && c.contains(&0), "{c:?}");
        }
    }

    #[test]
    fn every_lesson_has_a_recap_every_line_a_step_and_a_duration() {
        for l in LESSONS {
            assert!(!l.recap().is_empty(), "{} has no # Recap:", l.file);
            let walked: usize = steps(l).iter().map(|s| s.lines.len()).sum();
            let lines = Script::parse(l.source).expect("parses").lines.len();
            assert_eq!(walked, lines, "{}", l.file);
            assert!((1..=20).contains(&l.minutes()), "{}: {} min", l.file, l.minutes());
        }
    }
}
