//! OffsetForLeaderEpoch (KIP-101, KIP-320: a consumer checking, after a leader change, whether
//! its position survived; `kafka-run-class … GetOffsetShell` too): every partition has had one
//! leader, node 0, at epoch 0, since it was created — so epoch 0 ends at the log end offset, a
//! later epoch is unknown (−1, −1), and a caller's current epoch above 0 is UNKNOWN_LEADER_EPOCH,
//! as Kafka's leader answers.

use crate::broker::{Broker, LEADER_EPOCH};
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::offset_for_leader_epoch_response::{
    EpochEndOffset, OffsetForLeaderTopicResult,
};
use offsetlab_wire::kafka_protocol::messages::{OffsetForLeaderEpochRequest, OffsetForLeaderEpochResponse};

pub(crate) fn handle(broker: &Broker, r: &OffsetForLeaderEpochRequest) -> OffsetForLeaderEpochResponse {
    let s = broker.lab.lock();
    OffsetForLeaderEpochResponse::default().with_topics(
        r.topics
            .iter()
            .map(|t| {
                OffsetForLeaderTopicResult::default()
                    .with_topic(t.topic.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                let base = EpochEndOffset::default()
                                    .with_partition(p.partition)
                                    .with_leader_epoch(-1)
                                    .with_end_offset(-1);
                                let Ok(log) = s
                                    .lab()
                                    .partition_log(&TopicPartition::new(t.topic.0.to_string(), p.partition))
                                else {
                                    return base.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                                };
                                // No caller can hold an older epoch than the first; a newer one
                                // is from a leader the lab never had.
                                if p.current_leader_epoch > LEADER_EPOCH {
                                    return base.with_error_code(UNKNOWN_LEADER_EPOCH);
                                }
                                if p.leader_epoch == LEADER_EPOCH {
                                    base.with_error_code(NONE)
                                        .with_leader_epoch(LEADER_EPOCH)
                                        .with_end_offset(log.log_end_offset())
                                } else {
                                    base.with_error_code(NONE)
                                }
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::offset_for_leader_epoch_request::{
        OffsetForLeaderPartition, OffsetForLeaderTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::TopicName;

    #[test]
    fn epoch_0_ends_at_the_log_end() {
        let b = broker();
        let ask = |epoch: i32, current: i32| {
            let r = handle(
                &b,
                &OffsetForLeaderEpochRequest::default().with_topics(vec![OffsetForLeaderTopic::default()
                    .with_topic(TopicName(name("orders")))
                    .with_partitions(vec![OffsetForLeaderPartition::default()
                        .with_leader_epoch(epoch)
                        .with_current_leader_epoch(current)])]),
            );
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.leader_epoch, p.end_offset)
        };
        assert_eq!(ask(0, -1), (NONE, 0, 12));
        assert_eq!(ask(5, -1), (NONE, -1, -1));
        assert_eq!(ask(0, 3), (UNKNOWN_LEADER_EPOCH, -1, -1));
    }
}
