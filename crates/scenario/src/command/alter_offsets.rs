//! `alter-offsets GROUP offsets=T:P=O[,T:P=O…] [metadata=JSON] [leader-epochs=T:P=E,…]`
//!
//! Offsets committed from outside the group: an admin client's `alterConsumerGroupOffsets` (or
//! kafkajs's `setOffsets` and `resetOffsets`) sends an OffsetCommit with no member id and
//! generation −1. Kafka's coordinator stores each offset **as given** — unlike
//! `kafka-consumer-groups.sh --reset-offsets` (the `reset-offsets` line), which clamps its target
//! to the log before it commits. A negative offset (kafkajs commits −2 for earliest, −1 for
//! latest) is no position: the group's consumers take it for no committed offset and
//! `auto.offset.reset` decides; one outside the log is met by OFFSET_OUT_OF_RANGE on the next
//! fetch. Refused while the group has members. `metadata` is what the client sent with the
//! offsets (`{"orders:0": "…"}`), and `leader-epochs` the leader epochs it sent (KIP-320), both
//! handed back by OffsetFetch.

use super::external::{
    offsets_text, parse_leader_epochs, parse_metadata, parse_offsets, write_leader_epochs, write_metadata,
};
use crate::error::ParseError;
use crate::token::{Args, Quoted};
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::{Lab, LabError};
use std::collections::BTreeMap;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterOffsets {
    pub group: String,
    pub offsets: Vec<(TopicPartition, Offset)>,
    /// The metadata strings sent with the offsets, for the partitions that sent any.
    pub metadata: BTreeMap<TopicPartition, String>,
    /// The leader epochs sent with the offsets, for the partitions that sent one.
    pub leader_epochs: BTreeMap<TopicPartition, i32>,
}

impl AlterOffsets {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let offsets = args
            .parsed("offsets", parse_offsets)?
            .ok_or_else(|| ParseError::new("alter-offsets: missing offsets=T:P=O,…"))?;
        let metadata = args.parsed("metadata", parse_metadata)?.unwrap_or_default();
        let leader_epochs = args
            .parsed("leader-epochs", parse_leader_epochs)?
            .unwrap_or_default();
        Ok(Self {
            group,
            offsets,
            metadata,
            leader_epochs,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.alter_offsets(&self.group, &self.offsets, &self.metadata, &self.leader_epochs)
            .map(|_| ())
    }
}

impl fmt::Display for AlterOffsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "alter-offsets {} offsets={}",
            Quoted(&self.group),
            offsets_text(&self.offsets)
        )?;
        write_metadata(f, &self.metadata)?;
        write_leader_epochs(f, &self.leader_epochs)
    }
}
