//! The transaction coordinator's APIs for real transactional producers: InitProducerId with a
//! `transactional.id`, AddPartitionsToTxn, AddOffsetsToTxn, TxnOffsetCommit and EndTxn.
//!
//! The lab's one transaction coordinator (in the engine) keeps the producer ids, epochs, open
//! transactions, markers and last stable offsets; these handlers check a request's producer id
//! and epoch against it (an older epoch is a fenced instance: INVALID_PRODUCER_EPOCH) and write
//! what changes as lines — `init-txn`, `txn-offsets`, `end-txn` (the records themselves come as
//! `txn-send` lines from Produce). TxnOffsetCommit also passes the group coordinator's check of
//! member and generation (KIP-447), so a zombie consumer cannot commit a transaction's offsets.
//!
//! Not modelled: a wall-clock `transaction.timeout.ms` (an abandoned transaction is aborted when
//! the same `transactional.id` calls initTransactions again, or when the lab's clock passes its
//! timeout), and KIP-890's server-side defence (EndTxn v5, AddPartitionsToTxn v4+).

use super::coordinator::Coordinator;
use super::produce::apply_and_save;
use super::{NONE, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_OR_PARTITION};
use crate::api::AppState;
use crate::session::Session;
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::{EndTxn, InitTxn, TxnOffsets};
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

const INVALID_PRODUCER_EPOCH: i16 = 47;
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
    let txn_id = String::from(txn_id);
    let line = InitTxn {
        txn_id: txn_id.clone(),
        timeout_ms: i64::from(r.transaction_timeout_ms),
    }
    .to_string();
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !apply_and_save(app, s, &[line]) {
        return refuse(INVALID_TXN_STATE);
    }
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    match s.lab().producers().get(&txn_id) {
        Some(p) => InitProducerIdResponse::default()
            .with_producer_id(ProducerId(p.producer_id))
            .with_producer_epoch(p.epoch),
        None => refuse(UNKNOWN_SERVER_ERROR),
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
        let line = TxnOffsets {
            txn_id,
            producer_id: r.producer_id.0,
            epoch: r.producer_epoch,
            group,
            offsets,
        }
        .to_string();
        if !apply_and_save(app, s, &[line]) {
            code = UNKNOWN_SERVER_ERROR;
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
            let line = EndTxn {
                txn_id,
                producer_id: r.producer_id.0,
                epoch: r.producer_epoch,
                commit: r.committed,
            }
            .to_string();
            if apply_and_save(app, s, &[line]) {
                NONE
            } else {
                UNKNOWN_SERVER_ERROR
            }
        }
    };
    EndTxnResponse::default()
        .with_error_code(code)
        .with_producer_id(r.producer_id)
        .with_producer_epoch(r.producer_epoch)
}
