//! `process NAME [count=N|all]`
//!
//! The application finishes processing the next in-flight record (or N, or all of them): each
//! is written to the group's sink, then the strategy commits if it commits after processing.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::count;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Process {
    pub consumer: String,
    /// `None` is `all`.
    pub count: Option<usize>,
}

impl Process {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let consumer = args.word("consumer name")?;
        let count = match args.option("count").as_deref() {
            None => Some(1),
            Some("all") => None,
            Some(v) => {
                let n =
                    count(v, 1_000_000).map_err(|e| ParseError::new(format!("process: count={v}: {e}")))?;
                if n == 0 {
                    return Err(ParseError::new("process: count must be at least 1 (or all)"));
                }
                Some(n as usize)
            }
        };
        Ok(Self { consumer, count })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.process(&self.consumer, self.count).map(|_| ())
    }
}

impl fmt::Display for Process {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.count {
            None => write!(f, "process {} count=all", Quoted(&self.consumer)),
            Some(1) => write!(f, "process {}", Quoted(&self.consumer)),
            Some(n) => write!(f, "process {} count={n}", Quoted(&self.consumer)),
        }
    }
}
