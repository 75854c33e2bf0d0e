//! `broker [offsets.retention=DUR] [offsets.retention.check.interval=DUR]`
//!
//! Broker-wide settings of the group coordinator. `offsets.retention` is Kafka's
//! `offsets.retention.minutes` (7 days by default): once a group has no members, its committed
//! offsets expire that long after it emptied (KIP-211), and its next start falls to
//! `auto.offset.reset`. `offsets.retention.check.interval` is
//! `offsets.retention.check.interval.ms` (10 minutes by default): how often the coordinator's
//! cleanup runs — the run that removes a group left with no member and no committed offset.

use crate::error::ParseError;
use crate::token::Args;
use crate::units::duration_ms;
use offsetlab_engine::clock::format_duration;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Broker {
    pub offsets_retention_ms: Option<i64>,
    pub offsets_retention_check_ms: Option<i64>,
}

impl Broker {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let positive = |key: &str, ms: Option<i64>| match ms {
            Some(0) => Err(ParseError::new(format!("broker: {key} must be longer than 0ms"))),
            other => Ok(other),
        };
        let offsets_retention_ms = positive(
            "offsets.retention",
            args.parsed("offsets.retention", duration_ms)?,
        )?;
        let offsets_retention_check_ms = positive(
            "offsets.retention.check.interval",
            args.parsed("offsets.retention.check.interval", duration_ms)?,
        )?;
        if offsets_retention_ms.is_none() && offsets_retention_check_ms.is_none() {
            return Err(ParseError::new(
                "broker: give offsets.retention=DUR and/or offsets.retention.check.interval=DUR",
            ));
        }
        Ok(Self {
            offsets_retention_ms,
            offsets_retention_check_ms,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        if let Some(ms) = self.offsets_retention_ms {
            lab.set_offsets_retention(ms)?;
        }
        if let Some(ms) = self.offsets_retention_check_ms {
            lab.set_offsets_retention_check(ms)?;
        }
        Ok(())
    }
}

impl fmt::Display for Broker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "broker")?;
        if let Some(ms) = self.offsets_retention_ms {
            write!(f, " offsets.retention={}", format_duration(ms))?;
        }
        if let Some(ms) = self.offsets_retention_check_ms {
            write!(f, " offsets.retention.check.interval={}", format_duration(ms))?;
        }
        Ok(())
    }
}
