//! `add-partitions TOPIC count=N`
//!
//! Kafka's `CreatePartitions` (what `kafka-topics.sh --alter --partitions N` sends): the topic
//! grows to N partitions, never fewer than it has. Keys hash over the new count from then on, so
//! a key's later records can land in another partition than its earlier ones, and every group
//! reading the topic rebalances to hand out the new partitions.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::count;
use offsetlab_engine::lab::MAX_PARTITIONS;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddPartitions {
    pub topic: String,
    /// The partition count the topic grows to.
    pub count: i32,
}

impl AddPartitions {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let topic = args.word("topic")?;
        let count = args
            .parsed("count", |v| count(v, MAX_PARTITIONS as u64).map(|n| n as i32))?
            .ok_or_else(|| ParseError::new("add-partitions: missing count=N (the new partition count)"))?;
        Ok(Self { topic, count })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.add_partitions(&self.topic, self.count)
    }
}

impl fmt::Display for AddPartitions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "add-partitions {} count={}", Quoted(&self.topic), self.count)
    }
}
