//! A share group's start offsets, as an administrator moves them (KIP-932):
//!
//! - `alter-share-offsets GROUP offsets=T:P=O[,T:P=O…]` — AlterShareGroupOffsets
//!   (`kafka-share-groups.sh --reset-offsets --execute`, the admin client's
//!   `alterShareGroupOffsets`): each partition's share state starts again at the offset given.
//! - `delete-share-offsets GROUP topics=T[,T…]` — DeleteShareGroupOffsets
//!   (`kafka-share-groups.sh --delete-offsets`): the group forgets its state for those topics;
//!   its next read starts where `share.auto.offset.reset` says.
//!
//! Both are refused while the group has members (NON_EMPTY_GROUP), as Kafka refuses them.

use super::external::{offsets_text, parse_offsets};
use crate::error::ParseError;
use crate::token::{Args, Quoted};
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlterShareOffsets {
    pub group: String,
    pub offsets: Vec<(TopicPartition, Offset)>,
}

impl AlterShareOffsets {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let offsets = args
            .parsed("offsets", parse_offsets)?
            .ok_or_else(|| ParseError::new("alter-share-offsets: missing offsets=T:P=O,…"))?;
        Ok(Self { group, offsets })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.alter_share_group_offsets(&self.group, &self.offsets)
    }
}

impl fmt::Display for AlterShareOffsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "alter-share-offsets {} offsets={}",
            Quoted(&self.group),
            offsets_text(&self.offsets)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteShareOffsets {
    pub group: String,
    pub topics: Vec<String>,
}

impl DeleteShareOffsets {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let topics = args
            .parsed("topics", |v| {
                v.split(',')
                    .map(|t| match offsetlab_engine::names::topic_name_problem(t) {
                        Some(problem) => Err(format!("'{t}': {problem}")),
                        None => Ok(t.to_string()),
                    })
                    .collect::<Result<Vec<String>, String>>()
            })?
            .ok_or_else(|| ParseError::new("delete-share-offsets: missing topics=T,…"))?;
        Ok(Self { group, topics })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.delete_share_group_offsets(&self.group, &self.topics)
            .map(|_| ())
    }
}

impl fmt::Display for DeleteShareOffsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "delete-share-offsets {} topics={}",
            Quoted(&self.group),
            self.topics.join(",")
        )
    }
}
