//! `clock INSTANT`
//!
//! Moves the lab's clock to an instant (an RFC 3339 date, or a duration after the lab's epoch:
//! `90s` is `t=90s`), firing every timer due on the way, as `tick` does. It is the line the live clock of
//! `serve` writes when wall time has moved on — before a change, and when a timer falls due — so
//! an export replays at the instants the lab lived through. An instant earlier than the lab's
//! clock is refused: time never goes backwards.

use crate::error::ParseError;
use crate::token::Args;
use crate::units::{instant_ms, rfc3339};
use offsetlab_engine::clock::Millis;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clock {
    pub at_ms: Millis,
}

impl Clock {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let at = args.word("instant")?;
        let at_ms = instant_ms(&at).map_err(|e| ParseError::new(format!("clock {at}: {e}")))?;
        Ok(Self { at_ms })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.advance_clock_to(self.at_ms)
    }
}

impl fmt::Display for Clock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "clock {}", rfc3339(self.at_ms))
    }
}
