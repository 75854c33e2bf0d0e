//! `delete-records TOPIC partition=P before=OFFSET`
//!
//! Kafka's `DeleteRecords` (what `kafka-delete-records.sh` sends): the partition's log start
//! offset moves up to OFFSET, for every group. A group whose committed offset falls below it
//! meets "offset out of range" at its next fetch, and `auto.offset.reset` decides.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::count;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteRecords {
    pub topic: String,
    pub partition: i32,
    pub before: i64,
}

impl DeleteRecords {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let topic = args.word("topic")?;
        let partition = args
            .parsed("partition", |v| count(v, 10_000).map(|p| p as i32))?
            .unwrap_or(0);
        let before = args
            .parsed("before", |v| count(v, i64::MAX as u64).map(|o| o as i64))?
            .ok_or_else(|| ParseError::new("delete-records: missing before=OFFSET"))?;
        Ok(Self {
            topic,
            partition,
            before,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.delete_records(&self.topic, self.partition, self.before)
            .map(|_| ())
    }
}

impl fmt::Display for DeleteRecords {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "delete-records {} partition={} before={}",
            Quoted(&self.topic),
            self.partition,
            self.before
        )
    }
}
