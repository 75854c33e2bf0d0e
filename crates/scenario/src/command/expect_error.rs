//! `expect-error CODE LINE`
//!
//! A claim that `LINE` — any other command — is refused, with the error Kafka answers the same
//! request with (`UNKNOWN_MEMBER_ID`, `NON_EMPTY_GROUP`, `OFFSET_OUT_OF_RANGE`, …; the names of
//! Kafka's protocol guide). A refused line changes nothing, so the script goes on; a line that
//! is accepted, or refused for another reason, fails the run (exit code 1) naming what happened.
//!
//! ```text
//! expect-error NON_EMPTY_GROUP delete-group billing
//! expect-error UNKNOWN_MEMBER_ID commit-offsets billing member=ghost generation=1 offsets=orders:0=5
//! ```

use crate::error::ParseError;
use offsetlab_engine::Lab;
use std::fmt;

use super::{ApplyError, Command};

#[derive(Debug, Clone, PartialEq)]
pub struct ExpectError {
    /// Kafka's name of the error, as `LabError::kafka_error` gives it.
    pub code: String,
    pub command: Box<Command>,
}

impl ExpectError {
    /// `code` is the word after `expect-error`, `command` the rest of the line, parsed.
    pub fn new(code: &str, command: Command) -> Result<Self, ParseError> {
        if code.is_empty() || !code.bytes().all(|b| b.is_ascii_uppercase() || b == b'_') {
            return Err(ParseError::new(format!(
                "expect-error: '{code}' is not the name of a Kafka error (UNKNOWN_MEMBER_ID, NON_EMPTY_GROUP, …)"
            )));
        }
        if matches!(command, Command::Expect(_) | Command::ExpectError(_)) {
            return Err(ParseError::new(
                "expect-error: the line it expects to be refused is an action, not a claim",
            ));
        }
        Ok(Self {
            code: code.to_string(),
            command: Box::new(command),
        })
    }

    /// Applies the line and checks that it was refused with `code`.
    pub fn check(&self, lab: &mut Lab) -> Result<(), ApplyError> {
        match self.command.apply(lab) {
            Ok(_) => Err(ApplyError::Expectation(format!(
                "expected {}, but the line was accepted",
                self.code
            ))),
            Err(ApplyError::Lab(e)) => match e.kafka_error() {
                Some(code) if code == self.code => {
                    lab.note_refusal(&format!("refused with {code}, as expected: {e}"));
                    Ok(())
                }
                Some(code) => Err(ApplyError::Expectation(format!(
                    "expected {}, got {code}: {e}",
                    self.code
                ))),
                None => Err(ApplyError::Expectation(format!(
                    "expected {}, but the lab refused it for a reason of its own, no Kafka error: {e}",
                    self.code
                ))),
            },
            Err(e @ ApplyError::Expectation(_)) => Err(e),
        }
    }
}

impl fmt::Display for ExpectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expect-error {} {}", self.code, self.command)
    }
}

#[cfg(test)]
mod tests {
    use crate::error::ScenarioError;
    use crate::runner::run_source;

    const SETUP: &str = "topic orders\nproduce orders count=6\nconsumer c1 group=billing topic=orders commit=manual-batch max-poll=3 reset=earliest\npoll c1\nprocess c1 count=all\n";

    fn failure(script: &str) -> String {
        match run_source(&format!("{SETUP}{script}")) {
            Err(ScenarioError::Expectation { failures, .. }) => failures,
            Err(other) => panic!("not an expectation failure: {other}"),
            Ok(_) => panic!("held: {script}"),
        }
    }

    #[test]
    fn a_refusal_with_the_code_holds_and_changes_nothing() {
        let runner = run_source(&format!(
            "{SETUP}expect-error NON_EMPTY_GROUP delete-group billing\n\
             expect-error UNKNOWN_MEMBER_ID commit-offsets billing member=ghost generation=1 offsets=orders:0=5\n\
             expect-error ILLEGAL_GENERATION commit-offsets billing member=c1 generation=9 offsets=orders:0=5\n\
             expect-error UNKNOWN_MEMBER_ID alter-offsets billing offsets=orders:0=5\n\
             expect group=billing topic=orders committed=3 group-state=Stable\n\
             commit-offsets billing member=c1 generation=1 offsets=orders:0=4 metadata={{\"orders:0\":\"by hand\"}}\n\
             expect group=billing topic=orders committed=4 metadata=\"by hand\"\n\
             expect consumer=c1 polled=0..2\n"
        ))
        .expect("holds");
        assert!(
            runner.history().iter().all(|c| !c.is_claim()),
            "claims are not history"
        );
    }

    #[test]
    fn an_accepted_line_or_another_refusal_fails_the_claim() {
        assert!(
            failure("close c1\nexpect-error NON_EMPTY_GROUP delete-group billing\n")
                .contains("expected NON_EMPTY_GROUP, but the line was accepted")
        );
        assert!(failure("expect-error ILLEGAL_GENERATION commit-offsets billing member=ghost generation=1 offsets=orders:0=5\n")
            .contains("expected ILLEGAL_GENERATION, got UNKNOWN_MEMBER_ID"));
        assert!(failure("expect-error UNKNOWN_MEMBER_ID poll nobody\n")
            .contains("a reason of its own, no Kafka error"));
    }

    #[test]
    fn group_state_metadata_and_polled_read_what_kafka_would_answer() {
        run_source(&format!(
            "{SETUP}poll c1\nexpect consumer=c1 polled=3..5\nprocess c1 count=all\npoll c1\nexpect consumer=c1 polled=-\n\
             close c1\nexpect group=billing group-state=Empty\n\
             alter-offsets billing offsets=orders:0=2 metadata={{\"orders:0\":\"two\"}}\n\
             expect group=billing topic=orders partition=0 metadata=two committed=2\n\
             delete-group billing\nexpect group=billing group-state=Dead\n\
             expect group=billing topic=orders committed=- metadata=-\n\
             expect group=nobody group-state=Dead\n"
        ))
        .expect("holds");
    }
}
