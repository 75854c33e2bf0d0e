//! `restart-coordinator`
//!
//! The group coordinator fails over: its in-memory view of committed offsets is thrown away and
//! rebuilt by replaying `__consumer_offsets` — compacted or not, the latest value per key wins,
//! so every group finds its offsets where it left them.

use crate::error::ParseError;
use crate::token::Args;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestartCoordinator;

impl RestartCoordinator {
    pub fn parse(_args: &mut Args) -> Result<Self, ParseError> {
        Ok(Self)
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.restart_coordinator();
        Ok(())
    }
}

impl fmt::Display for RestartCoordinator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("restart-coordinator")
    }
}
