//! One partition's share of a Produce request, validated: what the lab keeps of it.

use offsetlab_wire::error::*;

use bytes::Bytes;
use offsetlab_engine::lab::{SentHeader, SentRecord, MAX_SEND_RECORDS};
use offsetlab_records::{headers, validate_produce_within, ProduceError, ProducedBatches, ProducerRun};

/// Why one partition's records were refused: Kafka's error code and the message a v8+ client
/// shows.
pub(crate) type Refusal = (i16, String);

/// The records of one partition's share of a Produce request.
pub(crate) enum Records {
    /// v2 batches as the client encoded them, compressed or not: appended to the log as they
    /// are (or rewritten in the topic's `compression.type`, when that names a codec).
    Encoded(ProducedBatches),
    /// A transaction's records (`txn-send` lines), with the producer's id and epoch.
    Transactional {
        records: Vec<SentRecord>,
        producer_id: i64,
        epoch: i16,
    },
}

impl Records {
    pub(crate) fn len(&self) -> usize {
        match self {
            Records::Encoded(b) => b.records(),
            Records::Transactional { records, .. } => records.len(),
        }
    }

    /// The largest timestamp among the records (−1 for none): what Kafka keeps for a producer's
    /// last batch (DescribeProducers' `last_timestamp`, a resend's log append time).
    pub(crate) fn max_timestamp(&self) -> i64 {
        match self {
            Records::Encoded(b) => b.headers().iter().map(|h| h.max_timestamp).max().unwrap_or(-1),
            Records::Transactional { records, .. } => {
                records.iter().filter_map(|r| r.timestamp).max().unwrap_or(-1)
            }
        }
    }
}

/// One partition's share of a Produce request, validated.
pub(crate) struct Produced {
    pub records: Records,
    /// Written inside a transaction (the batches' transactional bit).
    pub transactional: bool,
    /// An idempotent producer's (id, epoch, first sequence, records), when the batches carry one.
    pub producer: Option<ProducerRun>,
}

/// What a partition's batches are checked against besides their own bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    /// The Produce request's version: zstd needs v7.
    pub version: i16,
    /// The topic's `max.message.bytes` (the broker's `message.max.bytes` by default).
    pub message_max_bytes: usize,
}

/// The records of one partition's batches, validated whole in one walk
/// ([`offsetlab_records::validate_produce`]); nothing is kept if one is bad. Keys, values and
/// headers are any bytes, as Kafka takes them: the walk checks their bounds, never their
/// content. Batches outside a transaction — what producers send by default — are kept as they
/// came, compressed or not: no record is decoded into a value or copied on its own.
pub(crate) fn sent_records(bytes: Bytes, rules: Rules) -> Result<Produced, Refusal> {
    let mut rule = |_: Option<&[u8]>, _: Option<&[u8]>, _: &[u8]| Ok(());
    let v = validate_produce_within(bytes, rules.message_max_bytes, &mut rule).map_err(|e| {
        let code = match e {
            ProduceError::InvalidRecord(_) => INVALID_RECORD,
            ProduceError::TooLarge { .. } => RECORD_LIST_TOO_LARGE,
            ProduceError::BatchTooLarge { .. } => MESSAGE_TOO_LARGE,
            ProduceError::Corrupt(_) | ProduceError::Framing(_) | ProduceError::CorruptCompressed(_) => {
                CORRUPT_MESSAGE
            }
        };
        (code, e.to_string())
    })?;
    if v.zstd && rules.version < 7 {
        return Err((
            UNSUPPORTED_COMPRESSION_TYPE,
            format!(
                "zstd needs Produce v7 or later (KIP-110); this request is v{}",
                rules.version
            ),
        ));
    }
    let producer = v.producer;
    if !v.transactional {
        return Ok(Produced {
            records: Records::Encoded(v.batches),
            transactional: false,
            producer,
        });
    }
    let Some(ProducerRun {
        producer_id, epoch, ..
    }) = producer
    else {
        return Err((
            INVALID_RECORD,
            "a transactional batch carries its producer id".into(),
        ));
    };
    // A transaction's records become `txn-send` lines, with their producer's timestamps (kept on
    // a CreateTime topic; a LogAppendTime topic stamps the lab's time over them).
    let mut records = Vec::with_capacity(v.batches.records());
    let mut malformed = false;
    v.batches.each_batch(&mut |b| {
        for r in b.records() {
            let Some(headers) = headers::decode(r.headers) else {
                malformed = true;
                return;
            };
            records.push(SentRecord {
                key: r.key.map(Into::into),
                value: r.value.map(Into::into),
                timestamp: Some(r.timestamp),
                headers: headers.into_iter().map(SentHeader::from).collect(),
                batch_timestamp: None,
            });
        }
    });
    if malformed {
        return Err((INVALID_RECORD, "malformed record headers".to_string()));
    }
    Ok(Produced {
        records: Records::Transactional {
            records,
            producer_id,
            epoch,
        },
        transactional: true,
        producer,
    })
}

/// `records` in pieces a `send` line may carry, moved, not copied.
pub(crate) fn owned_chunks(mut records: Vec<SentRecord>) -> Vec<Vec<SentRecord>> {
    let mut out = Vec::new();
    while records.len() > MAX_SEND_RECORDS {
        let rest = records.split_off(MAX_SEND_RECORDS);
        out.push(std::mem::replace(&mut records, rest));
    }
    out.push(records);
    out
}
