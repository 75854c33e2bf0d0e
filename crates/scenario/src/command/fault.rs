//! `fault NAME after=N`
//!
//! Arms a crash: consumer NAME dies right after its N-th next observable effect — a poll
//! returning, a record written to the sink, a commit landing — even in the middle of an action
//! (between a sink write and the commit that would follow it). This is how the explorer crashes
//! a consumer "at every instant", written as a line so such a crash can be exported and replayed.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::count;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    pub consumer: String,
    pub after: u64,
}

impl Fault {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let consumer = args.word("consumer name")?;
        let after = args
            .parsed("after", |v| count(v, 1_000_000_000))?
            .ok_or_else(|| ParseError::new("fault: missing after=N"))?;
        if after == 0 {
            return Err(ParseError::new(
                "fault: after must be at least 1 (use crash to crash now)",
            ));
        }
        Ok(Self { consumer, after })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.schedule_crash(&self.consumer, self.after)
    }
}

impl fmt::Display for Fault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "fault {} after={}", Quoted(&self.consumer), self.after)
    }
}
