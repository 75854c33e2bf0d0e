//! Applying a script to a lab, line by line.

use crate::command::{ApplyError, Command, Outcome};
use crate::error::ScenarioError;
use crate::script::{Line, Script};
use offsetlab_engine::narrative::Event;
use offsetlab_engine::Lab;

/// Drives a [`Lab`] with scenario lines.
pub struct Runner {
    pub lab: Lab,
    /// Lines applied so far, for export.
    history: Vec<Command>,
}

impl Runner {
    pub fn new(lab: Lab) -> Self {
        Self {
            lab,
            history: Vec::new(),
        }
    }

    /// Applies one parsed line. On error nothing changed and the error names the line.
    pub fn apply(&mut self, line: &Line) -> Result<Outcome, ScenarioError> {
        match line.command.apply(&mut self.lab) {
            Ok(outcome) => {
                if !line.command.is_claim() {
                    self.history.push(line.command.clone());
                }
                Ok(outcome)
            }
            Err(ApplyError::Lab(error)) => Err(ScenarioError::Rejected {
                line: line.number,
                text: line.text.clone(),
                error,
            }),
            Err(ApplyError::Expectation(failures)) => Err(ScenarioError::Expectation {
                line: line.number,
                text: line.text.clone(),
                failures,
            }),
        }
    }

    /// Runs a whole script, calling `on_line` with the events each line produced. Stops at the
    /// first error.
    pub fn run(
        &mut self,
        script: &Script,
        on_line: &mut dyn FnMut(&Line, &Outcome, &[Event]),
    ) -> Result<(), ScenarioError> {
        for line in &script.lines {
            let mark = self.lab.narrative().len();
            let outcome = self.apply(line)?;
            on_line(line, &outcome, self.lab.narrative().since(mark));
        }
        Ok(())
    }

    /// The actions applied so far, as a script that replays them.
    pub fn history(&self) -> &[Command] {
        &self.history
    }

    pub fn export(&self) -> String {
        export_text("exported from offsetlab", &self.history)
    }
}

/// A scenario file of `commands`, one canonical line each, under a `# header` comment: what an
/// export writes, and what replays the same lab.
pub fn export_text(header: &str, commands: &[Command]) -> String {
    let mut out = format!("# {header}\n");
    for c in commands {
        out.push_str(&c.to_string());
        out.push('\n');
    }
    out
}

/// Parses and runs `source` in a fresh in-memory lab.
pub fn run_source(source: &str) -> Result<Runner, ScenarioError> {
    let script = Script::parse(source)?;
    let mut runner = Runner::new(Lab::default());
    runner.run(&script, &mut |_, _, _| {})?;
    Ok(runner)
}
