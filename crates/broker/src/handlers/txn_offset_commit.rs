//! TxnOffsetCommit: a group's offsets inside a transaction (committed only if it commits).

use crate::broker::Broker;
use crate::change;
use crate::transaction_state::current;
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::{Command, TxnOffsets};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{TxnOffsetCommitRequest, TxnOffsetCommitResponse};
use std::collections::BTreeMap;

/// A member-epoch fence as TxnOffsetCommit answers it: Kafka 4.4 turns STALE_MEMBER_EPOCH into
/// ILLEGAL_GENERATION, the error every transactional client knows (checked by the conformance
/// conversation `consumer-group`).
fn transactional(code: i16) -> i16 {
    if code == STALE_MEMBER_EPOCH {
        ILLEGAL_GENERATION
    } else {
        code
    }
}

/// TxnOffsetCommit: a `txn-offsets` line, after the producer check and (v3+, KIP-447) the group
/// coordinator's check of the consumer's member id and generation — for a consumer-protocol
/// member, its member epoch, partition by partition (KIP-1251): a partition its epoch no longer
/// covers is refused, the others go in the transaction.
pub(crate) fn handle(broker: &Broker, r: &TxnOffsetCommitRequest) -> TxnOffsetCommitResponse {
    let (lab, coordinator) = (&broker.lab, &broker.coordinator);
    let txn_id = String::from(r.transactional_id.as_str());
    let group = r.group_id.0.to_string();
    let offsets: Vec<(TopicPartition, i64)> = r
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    TopicPartition::new(t.name.0.to_string(), p.partition_index),
                    p.committed_offset,
                )
            })
        })
        .collect();
    let s = lab.lock_for_change();
    let mut code = current(&s, &txn_id, r.producer_id.0, r.producer_epoch)
        .err()
        .unwrap_or(NONE);
    // A consumer-protocol member's partitions its epoch no longer covers (KIP-1251).
    let mut fenced: Vec<TopicPartition> = Vec::new();
    if code == NONE && !r.member_id.is_empty() && r.generation_id >= 0 {
        let member = r.member_id.as_str();
        code = coordinator
            .check_commit(&group, member, r.generation_id)
            .err()
            .map_or(NONE, transactional);
        if code == NONE {
            let tps: Vec<TopicPartition> = offsets.iter().map(|(tp, _)| tp.clone()).collect();
            fenced = coordinator.fenced(&group, member, r.generation_id, &tps);
        }
    }
    if code == NONE && offsets.iter().any(|(tp, _)| s.lab().partition_log(tp).is_err()) {
        code = UNKNOWN_TOPIC_OR_PARTITION;
    }
    let offsets: Vec<(TopicPartition, i64)> = offsets
        .into_iter()
        .filter(|(tp, _)| !fenced.contains(tp))
        .collect();
    if code == NONE && !offsets.is_empty() {
        // The metadata and leader epoch sent along, kept with the offsets as an OffsetCommit's.
        let mut metadata = BTreeMap::new();
        let mut leader_epochs = BTreeMap::new();
        for t in &r.topics {
            for p in &t.partitions {
                let tp = TopicPartition::new(t.name.0.to_string(), p.partition_index);
                if fenced.contains(&tp) {
                    continue;
                }
                if let Some(m) = p.committed_metadata.as_ref().filter(|m| !m.is_empty()) {
                    metadata.insert(tp.clone(), m.to_string());
                }
                if p.committed_leader_epoch >= 0 {
                    leader_epochs.insert(tp, p.committed_leader_epoch);
                }
            }
        }
        let offsets = Command::TxnOffsets(TxnOffsets {
            txn_id,
            producer_id: r.producer_id.0,
            epoch: r.producer_epoch,
            group,
            offsets,
            metadata,
            leader_epochs,
        });
        if let Err(failure) = change::apply_commands(lab, s, vec![offsets]) {
            code = match failure {
                change::Failure::Refused(offsetlab_engine::LabError::OffsetMetadataTooLarge { .. }) => {
                    OFFSET_METADATA_TOO_LARGE
                }
                failure => failure.code(),
            };
        }
    }
    TxnOffsetCommitResponse::default().with_topics(
        r.topics
            .iter()
            .map(|t| {
                TxnOffsetCommitResponseTopic::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                let tp = TopicPartition::new(t.name.0.to_string(), p.partition_index);
                                let code = if code == NONE && fenced.contains(&tp) {
                                    ILLEGAL_GENERATION
                                } else {
                                    code
                                };
                                TxnOffsetCommitResponsePartition::default()
                                    .with_partition_index(p.partition_index)
                                    .with_error_code(code)
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

    #[test]
    fn a_stale_member_epoch_is_answered_as_an_illegal_generation() {
        assert_eq!(transactional(STALE_MEMBER_EPOCH), ILLEGAL_GENERATION);
        assert_eq!(transactional(UNKNOWN_MEMBER_ID), UNKNOWN_MEMBER_ID);
        assert_eq!(transactional(NONE), NONE);
    }
}
