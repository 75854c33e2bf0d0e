//! ListOffsets: a partition's earliest offset (-2), latest (-1: the log end, or the last stable
//! offset for a read_committed client) or the first offset at or after a timestamp.

use crate::broker::Broker;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::txn::IsolationLevel;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use offsetlab_wire::kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

pub(crate) fn isolation(level: i8) -> IsolationLevel {
    if level == 1 {
        IsolationLevel::ReadCommitted
    } else {
        IsolationLevel::ReadUncommitted
    }
}

pub(crate) fn handle(broker: &Broker, r: &ListOffsetsRequest) -> ListOffsetsResponse {
    let s = broker.lab.lock();
    let lab = s.lab();
    let level = isolation(r.isolation_level);
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let name = t.name.0.to_string();
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            let tp = TopicPartition::new(name.clone(), p.partition_index);
                            let base = ListOffsetsPartitionResponse::default()
                                .with_partition_index(p.partition_index);
                            let Ok((log, _)) = lab.fetchable(&tp) else {
                                return base.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                            };
                            let latest = match level {
                                IsolationLevel::ReadCommitted => {
                                    lab.last_stable_offset(&tp).unwrap_or(log.log_end_offset())
                                }
                                IsolationLevel::ReadUncommitted => log.log_end_offset(),
                            };
                            let (offset, timestamp) = match p.timestamp {
                                -2 => (log.log_start_offset(), -1),
                                -1 => (latest, -1),
                                ts => match log.offset_for_timestamp(ts) {
                                    Some(o) => {
                                        let mut at = -1;
                                        log.read(o, 1, &mut |r| at = r.timestamp);
                                        (o, at)
                                    }
                                    None => (-1, -1),
                                },
                            };
                            base.with_offset(offset).with_timestamp(timestamp)
                        })
                        .collect(),
                )
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}
