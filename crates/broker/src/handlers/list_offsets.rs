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

/// The offset and timestamp of the first record with the largest timestamp: the segment whose
/// largest timestamp is the largest (the first of equals), then its records. (−1, −1) for an
/// empty log.
fn max_timestamp(log: &dyn offsetlab_engine::log::PartitionLog) -> (i64, i64) {
    let mut best: Option<offsetlab_engine::log::SegmentInfo> = None;
    for s in log.segments() {
        if s.max_timestamp.is_some() && s.max_timestamp > best.as_ref().and_then(|b| b.max_timestamp) {
            best = Some(s);
        }
    }
    let Some(s) = best else {
        return (-1, -1);
    };
    let max = s.max_timestamp.unwrap_or(-1);
    let mut found = (-1, -1);
    log.read(s.base_offset, s.records, &mut |r| {
        if found.0 < 0 && r.timestamp == max && !r.control {
            found = (r.offset, r.timestamp);
        }
    });
    found
}

pub(crate) fn handle(broker: &Broker, r: &ListOffsetsRequest, version: i16) -> ListOffsetsResponse {
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
                                // Earliest (-2), and earliest local (-4, KIP-405): one broker
                                // with no tiered storage keeps every retained record locally.
                                -2 | -4 => (log.log_start_offset(), -1),
                                -1 => (latest, -1),
                                // The record with the largest timestamp (KIP-734).
                                -3 => max_timestamp(log),
                                // Latest tiered (-5, KIP-1005): nothing is tiered here.
                                -5 => (-1, -1),
                                ts => match log.offset_for_timestamp(ts) {
                                    Some(o) => {
                                        let mut at = -1;
                                        log.read(o, 1, &mut |r| at = r.timestamp);
                                        (o, at)
                                    }
                                    None => (-1, -1),
                                },
                            };
                            // An offset found was written under the partition's one leader epoch
                            // (v4+ says which).
                            let epoch = if offset >= 0 && version >= 4 {
                                crate::broker::LEADER_EPOCH
                            } else {
                                -1
                            };
                            base.with_offset(offset)
                                .with_timestamp(timestamp)
                                .with_leader_epoch(epoch)
                        })
                        .collect(),
                )
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::list_offsets_request::{
        ListOffsetsPartition, ListOffsetsTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::TopicName;

    fn ask(b: &Broker, spec: i64) -> (i16, i64, i64) {
        let r = handle(
            b,
            &ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(name("orders")))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(spec)])]),
            9,
        );
        let p = &r.topics[0].partitions[0];
        (p.error_code, p.offset, p.timestamp)
    }

    /// The specs of ListOffsets v7–v9: the largest timestamp (−3, KIP-734), earliest local
    /// (−4, KIP-405) and latest tiered (−5, KIP-1005) — on one broker without tiered storage.
    #[test]
    fn the_specs_of_kafka_4_answer_as_one_broker_without_tiered_storage() {
        let b = broker();
        let lines: Vec<String> = [
            "tick 2s",
            "produce orders count=2",
            "tick 1s",
            "delete-records orders before=3",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        b.lab.lock().apply_lines(&lines).expect("lines");
        let two_seconds_in = offsetlab_engine::clock::LAB_EPOCH_MS + 2_000;
        assert_eq!(
            ask(&b, -3),
            (NONE, 12, two_seconds_in),
            "the first record of the latest instant"
        );
        assert_eq!(ask(&b, -4), (NONE, 3, -1), "earliest local is the log start");
        assert_eq!(ask(&b, -2), (NONE, 3, -1));
        assert_eq!(ask(&b, -5), (NONE, -1, -1), "nothing is tiered");
        assert_eq!(ask(&b, -1), (NONE, 14, -1));
    }
}
