//! What an administrator deletes, as `kafka-topics.sh --delete` and `kafka-consumer-groups.sh
//! --delete` / `--delete-offsets` send it:
//!
//! - `delete-topic TOPIC` — `DeleteTopics`: the topic's logs and every group's committed
//!   offsets for its partitions are gone.
//! - `delete-group GROUP` — `DeleteGroups`: an Empty group's committed offsets become tombstones
//!   in `__consumer_offsets`; a group with members is refused (`NON_EMPTY_GROUP`).
//! - `delete-offsets GROUP topic=T partitions=0,1` — `OffsetDelete` (KIP-496): the group's
//!   committed offsets for those partitions; refused while an active member reads the topic
//!   (`GROUP_SUBSCRIBED_TO_TOPIC`).

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::count;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

one_name_command!(DeleteTopic, "delete-topic", topic: "topic", |lab, name| lab.delete_topic(name));

one_name_command!(DeleteGroup, "delete-group", group: "group", |lab, name| lab.delete_group(name));

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteOffsets {
    pub group: String,
    pub topic: String,
    pub partitions: Vec<i32>,
}

impl DeleteOffsets {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let topic = args.required("topic")?;
        let partitions = args
            .parsed("partitions", |v| {
                v.split(',')
                    .map(|p| count(p, 10_000).map(|p| p as i32))
                    .collect::<Result<Vec<i32>, String>>()
            })?
            .ok_or_else(|| ParseError::new("delete-offsets: missing partitions=P,P,…"))?;
        Ok(Self {
            group,
            topic,
            partitions,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        let partitions: Vec<TopicPartition> = self
            .partitions
            .iter()
            .map(|&p| TopicPartition::new(self.topic.clone(), p))
            .collect();
        lab.delete_offsets(&self.group, &partitions).map(|_| ())
    }
}

impl fmt::Display for DeleteOffsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let partitions: Vec<String> = self.partitions.iter().map(i32::to_string).collect();
        write!(
            f,
            "delete-offsets {} topic={} partitions={}",
            Quoted(&self.group),
            Quoted(&self.topic),
            partitions.join(",")
        )
    }
}
