//! `abort NAME`
//!
//! A read-process-write application (`sink=kafka-tx`) calls `abortTransaction()`: an ABORT
//! marker goes to every output partition of its open transaction, `read_committed` readers will
//! skip its records, and the application seeks back to its committed offsets to process the
//! aborted input again.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abort {
    pub consumer: String,
}

impl Abort {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        Ok(Self {
            consumer: args.word("consumer name")?,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.abort_transaction(&self.consumer)
    }
}

impl fmt::Display for Abort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "abort {}", Quoted(&self.consumer))
    }
}
