//! `commit NAME`
//!
//! An explicit `commitSync()` with no arguments: commits the consumer's current positions —
//! everything poll handed out, processed or not.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    pub consumer: String,
}

impl Commit {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        Ok(Self {
            consumer: args.word("consumer name")?,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.commit(&self.consumer)
    }
}

impl fmt::Display for Commit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "commit {}", Quoted(&self.consumer))
    }
}
