//! The transaction coordinator's APIs for real transactional producers: InitProducerId with a
//! `transactional.id`, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.
//!
//! The lab's one transaction coordinator (in the engine) keeps the producer ids, epochs, open
//! transactions, markers and last stable offsets; these handlers check a request's producer id
//! and epoch against it (an older epoch is a fenced instance: INVALID_PRODUCER_EPOCH) and write
//! what changes as commands — `init-txn`, `txn-offsets`, `end-txn` (the records themselves come
//! as `txn-send` commands from Produce). TxnOffsetCommit also passes the group coordinator's check of
//! member and generation (KIP-447), so a zombie consumer cannot commit a transaction's offsets.
//!
//! Not modelled: a wall-clock `transaction.timeout.ms` (an abandoned transaction is aborted when
//! the same `transactional.id` calls initTransactions again, or when the lab's clock passes its
//! timeout), and KIP-890's server-side defence (EndTxn v5, AddPartitionsToTxn v4+).

use super::change::{self, INVALID_PRODUCER_EPOCH};
use super::coordinator::Coordinator;
use super::{NONE, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION};
use crate::api::AppState;
use offsetlab_engine::record::TopicPartition;
use offsetlab_lab::session::Change;
use offsetlab_lab::session::Session;
use offsetlab_scenario::command::{Command, EndTxn, InitTxn, TxnOffsets};
use offsetlab_wire::kafka_protocol::messages::add_partitions_to_txn_response::{
    AddPartitionsToTxnPartitionResult, AddPartitionsToTxnTopicResult,
};
use offsetlab_wire::kafka_protocol::messages::txn_offset_commit_response::{
    TxnOffsetCommitResponsePartition, TxnOffsetCommitResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    AddOffsetsToTxnRequest, AddOffsetsToTxnResponse, AddPartitionsToTxnRequest, AddPartitionsToTxnResponse,
    EndTxnRequest, EndTxnResponse, InitProducerIdRequest, InitProducerIdResponse, ProducerId,
    TxnOffsetCommitRequest, TxnOffsetCommitResponse,
};

const INVALID_TXN_STATE: i16 = 48;
const INVALID_TRANSACTION_TIMEOUT: i16 = 50;

/// `Ok(())` when `txn_id` is a real client's transactional producer at (`pid`, `epoch`).
fn current(s: &Session, txn_id: &str, pid: i64, epoch: i16) -> Result<(), i16> {
    match s.lab().producers().get(txn_id) {
        Some(p) if p.external && p.producer_id == pid && p.epoch == epoch => Ok(()),
        Some(p) if p.external => Err(INVALID_PRODUCER_EPOCH),
        _ => Err(INVALID_TXN_STATE),
    }
}

/// InitProducerId with a `transactional.id`: the lab's coordinator gives a producer id (or the
/// next epoch, fencing the previous instance and aborting what it left open).
pub(crate) fn init_producer_id(
    app: &AppState,
    r: &InitProducerIdRequest,
    txn_id: &str,
) -> InitProducerIdResponse {
    let refuse = |code: i16| {
        InitProducerIdResponse::default()
            .with_error_code(code)
            .with_producer_id(ProducerId(-1))
            .with_producer_epoch(-1)
    };
    if r.transaction_timeout_ms <= 0 {
        return refuse(INVALID_TRANSACTION_TIMEOUT);
    }
    let init = Command::InitTxn(InitTxn {
        txn_id: txn_id.to_string(),
        timeout_ms: i64::from(r.transaction_timeout_ms),
    });
    let session = app.session();
    let mut s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Err(e) = s.apply_changes(vec![Change::Command(init)]) {
        return refuse(match change::Failure::from(e) {
            change::Failure::Refused(_) => INVALID_TXN_STATE,
            storage => storage.code(),
        });
    }
    // Read in the same locked step that gave the epoch: a second InitProducerId for this id
    // cannot slip in between and be answered with the same one.
    let Some((producer_id, epoch)) = s.lab().producers().get(txn_id).map(|p| (p.producer_id, p.epoch)) else {
        return refuse(UNKNOWN_SERVER_ERROR);
    };
    match change::save(app, s) {
        Ok(()) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(epoch),
        Err(failure) => refuse(failure.code()),
    }
}

/// AddPartitionsToTxn (v0–3): the partitions must exist and the producer be current; the lab
/// learns a transaction's partitions from the records written to them.
pub(crate) fn add_partitions(s: &Session, r: &AddPartitionsToTxnRequest) -> AddPartitionsToTxnResponse {
    let txn_id = String::from(r.v3_and_below_transactional_id.as_str());
    let producer = current(
        s,
        &txn_id,
        r.v3_and_below_producer_id.0,
        r.v3_and_below_producer_epoch,
    );
    AddPartitionsToTxnResponse::default().with_results_by_topic_v3_and_below(
        r.v3_and_below_topics
            .iter()
            .map(|t| {
                AddPartitionsToTxnTopicResult::default()
                    .with_name(t.name.clone())
                    .with_results_by_partition(
                        t.partitions
                            .iter()
                            .map(|&p| {
                                let tp = TopicPartition::new(t.name.0.to_string(), p);
                                let code = match producer {
                                    Err(code) => code,
                                    Ok(()) if s.lab().partition_log(&tp).is_err() => {
                                        UNKNOWN_TOPIC_OR_PARTITION
                                    }
                                    Ok(()) => NONE,
                                };
                                AddPartitionsToTxnPartitionResult::default()
                                    .with_partition_index(p)
                                    .with_partition_error_code(code)
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}

/// AddOffsetsToTxn: the group's offsets will travel with the transaction.
pub(crate) fn add_offsets(s: &Session, r: &AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse {
    let code = current(
        s,
        &String::from(r.transactional_id.as_str()),
        r.producer_id.0,
        r.producer_epoch,
    )
    .err()
    .unwrap_or(NONE);
    AddOffsetsToTxnResponse::default().with_error_code(code)
}

/// TxnOffsetCommit: a `txn-offsets` line, after the producer check and (v3+, KIP-447) the group
/// coordinator's check of the consumer's member id and generation.
pub(crate) fn txn_offset_commit(
    app: &AppState,
    coordinator: &Coordinator,
    r: &TxnOffsetCommitRequest,
) -> TxnOffsetCommitResponse {
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
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
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
        let offsets = Command::TxnOffsets(TxnOffsets {
            txn_id,
            producer_id: r.producer_id.0,
            epoch: r.producer_epoch,
            group,
            offsets,
        });
        if let Err(failure) = change::apply_commands(app, s, vec![offsets]) {
            code = failure.code();
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

/// EndTxn: COMMIT or ABORT markers (and on commit, the offsets), as an `end-txn` line.
pub(crate) fn end_txn(app: &AppState, r: &EndTxnRequest) -> EndTxnResponse {
    let txn_id = String::from(r.transactional_id.as_str());
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let code = match current(&s, &txn_id, r.producer_id.0, r.producer_epoch) {
        Err(code) => code,
        Ok(()) => {
            let end = Command::EndTxn(EndTxn {
                txn_id,
                producer_id: r.producer_id.0,
                epoch: r.producer_epoch,
                commit: r.committed,
            });
            match change::apply_commands(app, s, vec![end]) {
                Ok(()) => NONE,
                Err(failure) => failure.code(),
            }
        }
    };
    EndTxnResponse::default()
        .with_error_code(code)
        .with_producer_id(r.producer_id)
        .with_producer_epoch(r.producer_epoch)
}
