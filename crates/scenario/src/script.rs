//! A whole scenario file, parsed all at once: if any line is malformed, nothing runs.

use crate::command::Command;
use crate::error::ScenarioError;

/// One parsed line, with its 1-based line number and its text.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    pub number: usize,
    pub text: String,
    pub command: Command,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Script {
    pub lines: Vec<Line>,
}

impl Script {
    /// Parses every line; the first malformed one is the error.
    pub fn parse(source: &str) -> Result<Self, ScenarioError> {
        let mut lines = Vec::new();
        for (i, text) in source.lines().enumerate() {
            match Command::parse(text) {
                Ok(Some(command)) => lines.push(Line {
                    number: i + 1,
                    text: text.trim().to_string(),
                    command,
                }),
                Ok(None) => {}
                Err(e) => {
                    return Err(ScenarioError::Parse {
                        line: i + 1,
                        text: text.trim().to_string(),
                        message: e.message,
                    })
                }
            }
        }
        Ok(Self { lines })
    }

    /// The title of a lesson: its first comment line.
    pub fn title(source: &str) -> Option<String> {
        source
            .lines()
            .map(str::trim)
            .find(|l| l.starts_with('#'))
            .map(|l| l.trim_start_matches('#').trim().to_string())
    }

    /// The canonical text of the script (what an export writes).
    pub fn to_text(&self) -> String {
        let mut out = String::new();
        for l in &self.lines {
            out.push_str(&l.command.to_string());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_malformed_line_is_reported_with_its_number() {
        let err = Script::parse("topic orders\n\n# comment\nproduce orders count=x\npoll c1\n")
            .expect_err("bad line");
        assert_eq!(err.line(), 4);
        assert!(err.to_string().contains("line 4: produce: count=x"), "{err}");
    }

    #[test]
    fn the_seed_parses_and_round_trips() {
        let s = Script::parse(crate::SEED_SCENARIO).expect("seed parses");
        assert!(s.lines.len() > 10);
        assert_eq!(
            Script::parse(&s.to_text()).expect("canonical parses").to_text(),
            s.to_text()
        );
        assert!(Script::title(crate::SEED_SCENARIO).is_some());
    }
}
