//! `compact TOPIC`
//!
//! Runs the log cleaner on a compacted topic (`cleanup.policy=compact`) or on
//! `__consumer_offsets`: in closed segments only the latest record per key survives. Offsets
//! are kept, so gaps appear; the active segment is never cleaned.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compact {
    pub topic: String,
}

impl Compact {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        Ok(Self {
            topic: args.word("topic")?,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.compact_topic(&self.topic).map(|_| ())
    }
}

impl fmt::Display for Compact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "compact {}", Quoted(&self.topic))
    }
}
