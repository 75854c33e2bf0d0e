//! `broker offsets.retention=DUR`
//!
//! Broker-wide settings. `offsets.retention` is Kafka's `offsets.retention.minutes` (7 days by
//! default): once a group has no members, its committed offsets expire that long after it
//! emptied (KIP-211), and its next start falls to `auto.offset.reset`.

use crate::error::ParseError;
use crate::token::Args;
use crate::units::duration_ms;
use offsetlab_engine::clock::format_duration;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broker {
    pub offsets_retention_ms: i64,
}

impl Broker {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let ms = args
            .parsed("offsets.retention", duration_ms)?
            .ok_or_else(|| ParseError::new("broker: missing offsets.retention=DUR"))?;
        if ms == 0 {
            return Err(ParseError::new(
                "broker: offsets.retention must be longer than 0ms",
            ));
        }
        Ok(Self {
            offsets_retention_ms: ms,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.set_offsets_retention(self.offsets_retention_ms)
    }
}

impl fmt::Display for Broker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "broker offsets.retention={}",
            format_duration(self.offsets_retention_ms)
        )
    }
}
