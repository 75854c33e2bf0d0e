//! `poll NAME`
//!
//! One `poll()`: up to `max.poll.records` records are handed to the application and become
//! in flight. With `commit=auto-poll`, the Java auto-commit runs first; with
//! `commit=before-process`, a commit follows at once.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Poll {
    pub consumer: String,
}

impl Poll {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        Ok(Self {
            consumer: args.word("consumer name")?,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.poll(&self.consumer).map(|_| ())
    }
}

impl fmt::Display for Poll {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "poll {}", Quoted(&self.consumer))
    }
}
