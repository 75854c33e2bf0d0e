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

/// TxnOffsetCommit: a `txn-offsets` line, after the producer check and (v3+, KIP-447) the group
/// coordinator's check of the consumer's member id and generation.
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
    if code == NONE && !r.member_id.is_empty() && r.generation_id >= 0 {
        code = coordinator
            .check_commit(&group, r.member_id.as_str(), r.generation_id)
            .err()
            .unwrap_or(NONE);
    }
    if code == NONE && offsets.iter().any(|(tp, _)| s.lab().partition_log(tp).is_err()) {
        code = UNKNOWN_TOPIC_OR_PARTITION;
    }
    if code == NONE && !offsets.is_empty() {
        // The metadata and leader epoch sent along, kept with the offsets as an OffsetCommit's.
        let mut metadata = BTreeMap::new();
        let mut leader_epochs = BTreeMap::new();
        for t in &r.topics {
            for p in &t.partitions {
                let tp = TopicPartition::new(t.name.0.to_string(), p.partition_index);
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
