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

/// One step of a walkthrough.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Step {
    /// The comments written right above the command (the explanation), joined.
    pub explanation: String,
    /// The canonical command line.
    pub line: String,
    /// The command word (`poll`, `expect`, …).
    pub command: String,
}

/// Finds a lesson by number (`1`, `01`) or file stem.
pub fn find(id: &str) -> Option<&'static Lesson> {
    let id = id.trim_end_matches(".scn");
    LESSONS
        .iter()
        .find(|l| l.file == id || id.parse::<u32>().ok() == Some(l.number()))
}

/// The walkthrough of a lesson. Setup lines without their own comment are kept as steps too.
pub fn steps(lesson: &Lesson) -> Vec<Step> {
    let mut steps = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    let mut in_intro = true;
    for line in lesson.source.lines() {
        let t = line.trim();
        if let Some(c) = t.strip_prefix('#') {
            if !in_intro {
                pending.push(c.trim().to_string());
            }
            continue;
        }
        if t.is_empty() {
            in_intro = false;
            continue;
        }
        in_intro = false;
        if let Ok(Some(cmd)) = Command::parse(t) {
            let line = cmd.to_string();
            let command = line.split_whitespace().next().unwrap_or_default().to_string();
            // A trailing comment on the same line explains it too.
            let trailing = t.split_once(" #").map(|(_, c)| c.trim().to_string());
            let mut explanation = std::mem::take(&mut pending);
            explanation.extend(trailing);
            steps.push(Step {
                explanation: explanation.join(" "),
                line,
                command,
            });
        }
    }
    steps
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
        let crash = s.iter().find(|s| s.line == "crash c1").expect("crash step");
        assert!(crash.explanation.contains("kill -9"), "{crash:?}");
    }
}
