//! `tick DUR`
//!
//! Advances the logical clock; auto-commit timers, async commit landings and session timeouts
//! fire on the way, in time order.

use crate::error::ParseError;
use crate::token::Args;
use crate::units::duration_ms;
use offsetlab_engine::clock::format_duration;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tick {
    pub duration_ms: i64,
}

impl Tick {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let d = args.word("duration")?;
        let duration_ms = duration_ms(&d).map_err(|e| ParseError::new(format!("tick {d}: {e}")))?;
        Ok(Self { duration_ms })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.tick(self.duration_ms)
    }
}

impl fmt::Display for Tick {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "tick {}", format_duration(self.duration_ms))
    }
}
