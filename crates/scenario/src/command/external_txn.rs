//! What the Kafka listener's transaction coordinator reports about real transactional
//! producers (each line is written by the listener; the engine checks producer id and epoch, so
//! a fenced instance is refused):
//!
//! - `init-txn TXNID timeout=DUR` — `initTransactions()`: a producer id, or the next epoch
//!   (aborting what a previous instance left open);
//! - `txn-send TXNID producer-id=P epoch=E topic=T partition=N records=JSON` — records written
//!   inside the open transaction (`records` as in `send`);
//! - `txn-offsets TXNID producer-id=P epoch=E group=G offsets=T:P=O[,…] [metadata=JSON]
//!   [leader-epochs=T:P=E,…]` — `sendOffsetsToTransaction()`, with the metadata and leader
//!   epochs sent along (as `commit-offsets` keeps them);
//! - `end-txn TXNID producer-id=P epoch=E commit|abort` — `commitTransaction()` /
//!   `abortTransaction()`: the markers, and on commit the offsets;
//! - `txn-timeout TXNID producer-id=P epoch=E` — the transaction stayed open past its
//!   `transaction.timeout.ms` of wall time (its producer was killed or hangs): the coordinator
//!   aborts it and bumps the epoch, fencing that producer.

use super::external::{
    offsets_text, parse_leader_epochs, parse_metadata, parse_offsets, write_leader_epochs, write_metadata,
};
use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::{count, duration_ms};
use offsetlab_engine::clock::format_duration;
use offsetlab_engine::lab::SentRecord;
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::{Lab, LabError};
use std::collections::BTreeMap;
use std::fmt;

/// A `transactional.id`: any non-empty string, as Kafka takes it (quoted on the line when it is
/// not a plain word).
fn txn_id(args: &mut Args) -> Result<String, ParseError> {
    let id = args.word("transactional.id")?;
    if id.is_empty() {
        return Err(ParseError::new(format!(
            "{}: the transactional.id must not be empty",
            args.command()
        )));
    }
    Ok(id)
}

/// `producer-id=P epoch=E`.
fn producer(args: &mut Args, what: &str) -> Result<(i64, i16), ParseError> {
    let pid = args
        .parsed("producer-id", |v| count(v, i64::MAX as u64).map(|p| p as i64))?
        .ok_or_else(|| ParseError::new(format!("{what}: missing producer-id=…")))?;
    let epoch = args
        .parsed("epoch", |v| count(v, i16::MAX as u64).map(|e| e as i16))?
        .ok_or_else(|| ParseError::new(format!("{what}: missing epoch=…")))?;
    Ok((pid, epoch))
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitTxn {
    pub txn_id: String,
    pub timeout_ms: i64,
}

impl InitTxn {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let txn_id = txn_id(args)?;
        let timeout_ms = args.parsed("timeout", duration_ms)?.unwrap_or(60_000);
        if timeout_ms <= 0 {
            return Err(ParseError::new("init-txn: timeout must be positive"));
        }
        Ok(Self { txn_id, timeout_ms })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.external_init_transactions(&self.txn_id, self.timeout_ms)
            .map(|_| ())
    }
}

impl fmt::Display for InitTxn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "init-txn {} timeout={}",
            Quoted(&self.txn_id),
            format_duration(self.timeout_ms)
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnSend {
    pub txn_id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub tp: TopicPartition,
    pub records: Vec<SentRecord>,
}

impl TxnSend {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let txn_id = txn_id(args)?;
        let (producer_id, epoch) = producer(args, "txn-send")?;
        let topic = args.required("topic")?;
        let partition = args
            .parsed("partition", |v| count(v, 10_000).map(|p| p as i32))?
            .ok_or_else(|| ParseError::new("txn-send: missing partition=…"))?;
        let records = args
            .parsed("records", |v| {
                serde_json::from_str::<Vec<SentRecord>>(v)
                    .map_err(|e| format!("not a JSON array of {{\"key\": …, \"value\": …}} records ({e})"))
            })?
            .filter(|r| !r.is_empty())
            .ok_or_else(|| ParseError::new("txn-send: records=[…] with at least one record"))?;
        Ok(Self {
            txn_id,
            producer_id,
            epoch,
            tp: TopicPartition::new(topic, partition),
            records,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.external_txn_send(
            &self.txn_id,
            self.producer_id,
            self.epoch,
            &self.tp,
            &self.records,
        )
        .map(|_| ())
    }
}

impl fmt::Display for TxnSend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "txn-send {} producer-id={} epoch={} topic={} partition={} records=",
            Quoted(&self.txn_id),
            self.producer_id,
            self.epoch,
            Quoted(&self.tp.topic),
            self.tp.partition
        )?;
        super::send::write_records(f, &self.records)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnOffsets {
    pub txn_id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub group: String,
    pub offsets: Vec<(TopicPartition, Offset)>,
    /// The metadata strings sent with the offsets, for the partitions that sent any.
    pub metadata: BTreeMap<TopicPartition, String>,
    /// The leader epochs sent with the offsets, for the partitions that sent one.
    pub leader_epochs: BTreeMap<TopicPartition, i32>,
}

impl TxnOffsets {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let txn_id = txn_id(args)?;
        let (producer_id, epoch) = producer(args, "txn-offsets")?;
        let group = args.required("group")?;
        let offsets = args
            .parsed("offsets", parse_offsets)?
            .ok_or_else(|| ParseError::new("txn-offsets: missing offsets=T:P=O,…"))?;
        let metadata = args.parsed("metadata", parse_metadata)?.unwrap_or_default();
        let leader_epochs = args
            .parsed("leader-epochs", parse_leader_epochs)?
            .unwrap_or_default();
        Ok(Self {
            txn_id,
            producer_id,
            epoch,
            group,
            offsets,
            metadata,
            leader_epochs,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.external_txn_offsets(
            &self.txn_id,
            self.producer_id,
            self.epoch,
            &self.group,
            &self.offsets,
            &self.metadata,
            &self.leader_epochs,
        )
    }
}

impl fmt::Display for TxnOffsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "txn-offsets {} producer-id={} epoch={} group={} offsets={}",
            Quoted(&self.txn_id),
            self.producer_id,
            self.epoch,
            Quoted(&self.group),
            offsets_text(&self.offsets)
        )?;
        write_metadata(f, &self.metadata)?;
        write_leader_epochs(f, &self.leader_epochs)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EndTxn {
    pub txn_id: String,
    pub producer_id: i64,
    pub epoch: i16,
    pub commit: bool,
}

impl EndTxn {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let txn_id = txn_id(args)?;
        let (producer_id, epoch) = producer(args, "end-txn")?;
        let (commit, abort) = (args.flag("commit"), args.flag("abort"));
        if commit == abort {
            return Err(ParseError::new("end-txn: exactly one of commit or abort"));
        }
        Ok(Self {
            txn_id,
            producer_id,
            epoch,
            commit,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.external_end_transaction(&self.txn_id, self.producer_id, self.epoch, self.commit)
    }
}

impl fmt::Display for EndTxn {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "end-txn {} producer-id={} epoch={} {}",
            Quoted(&self.txn_id),
            self.producer_id,
            self.epoch,
            if self.commit { "commit" } else { "abort" }
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TxnTimeout {
    pub txn_id: String,
    pub producer_id: i64,
    pub epoch: i16,
}

impl TxnTimeout {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let txn_id = txn_id(args)?;
        let (producer_id, epoch) = producer(args, "txn-timeout")?;
        Ok(Self {
            txn_id,
            producer_id,
            epoch,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.external_txn_timeout(&self.txn_id, self.producer_id, self.epoch)
    }
}

impl fmt::Display for TxnTimeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "txn-timeout {} producer-id={} epoch={}",
            Quoted(&self.txn_id),
            self.producer_id,
            self.epoch
        )
    }
}
