//! One partition's share of a Produce request, validated: what the lab keeps of it.

use offsetlab_wire::error::*;

use bytes::Bytes;
use offsetlab_engine::lab::{SentHeader, SentRecord, MAX_SEND_RECORDS};
use offsetlab_records::{validate_produce_within, ProduceError, ProducedBatches, ProducerRun};

/// Why one partition's records were refused: Kafka's error code and the message a v8+ client
/// shows.
pub(crate) type Refusal = (i16, String);

/// The records of one partition's share of a Produce request.
pub(crate) enum Records {
    /// Uncompressed v2 batches as the client encoded them (compressed ones re-encoded
    /// uncompressed): appended to the log as they are.
    Encoded(ProducedBatches),
    /// A transaction's records, as text (`txn-send` lines), with the producer's id and epoch.
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
}

/// One partition's share of a Produce request, validated.
pub(crate) struct Produced {
    pub records: Records,
    /// Written inside a transaction (the batches' transactional bit).
    pub transactional: bool,
    /// An idempotent producer's (id, epoch, first sequence, records), when the batches carry one.
    pub producer: Option<ProducerRun>,
}

/// The lab keeps text records (its history and exports spell them out): a key or value that is
/// not UTF-8 is refused with INVALID_RECORD.
pub(crate) const NOT_TEXT_KEY: &str = "the lab keeps text records: this key is not UTF-8";

pub(crate) const NOT_TEXT_VALUE: &str = "the lab keeps text records: this value is not UTF-8";

pub(crate) const NOT_TEXT_HEADER: &str = "the lab keeps text records: a header of this record is not UTF-8";

/// A record's headers (as encoded) as the export spells them: text, or INVALID_RECORD.
pub(crate) fn text_headers(raw: &[u8]) -> Result<Vec<SentHeader>, &'static str> {
    let headers = offsetlab_engine::record::headers::decode(raw).ok_or("malformed record headers")?;
    headers
        .into_iter()
        .map(|(k, v)| {
            let key = std::str::from_utf8(k).map_err(|_| NOT_TEXT_HEADER)?.to_string();
            let value = v
                .map(|v| std::str::from_utf8(v).map(str::to_string))
                .transpose()
                .map_err(|_| NOT_TEXT_HEADER)?;
            Ok(SentHeader { key, value })
        })
        .collect()
}

pub(crate) fn text(b: Option<&[u8]>, what: &str) -> Result<Option<String>, Refusal> {
    b.map(|b| {
        String::from_utf8(b.to_vec()).map_err(|_| {
            let message = if what == "key" {
                NOT_TEXT_KEY
            } else {
                NOT_TEXT_VALUE
            };
            (INVALID_RECORD, message.to_string())
        })
    })
    .transpose()
}

/// What a partition's batches are checked against besides their own bytes.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Rules {
    /// The Produce request's version: zstd needs v7.
    pub version: i16,
    /// `message.max.bytes`.
    pub message_max_bytes: usize,
}

/// The records of one partition's batches, validated whole in one walk
/// ([`offsetlab_records::validate_produce`]); nothing is kept if one is bad. Batches outside a
/// transaction — what producers send by default — are kept as they came (a compressed one
/// rewritten uncompressed): no record is decoded into a value or copied on its own.
pub(crate) fn sent_records(bytes: Bytes, rules: Rules) -> Result<Produced, Refusal> {
    let mut rule = |k: Option<&[u8]>, v: Option<&[u8]>, headers: &[u8]| {
        let is_text = |b: Option<&[u8]>| b.is_none_or(offsetlab_records::is_text);
        match (is_text(k), is_text(v)) {
            (true, true) if headers.is_empty() => Ok(()),
            (true, true) => text_headers(headers).map(|_| ()),
            (false, _) => Err(NOT_TEXT_KEY),
            (_, false) => Err(NOT_TEXT_VALUE),
        }
    };
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
    // A transaction's records become `txn-send` lines, and carry the lab's time (CreateTime, as
    // it appends them).
    let mut records = Vec::with_capacity(v.batches.records());
    for r in v.batches.batches().flat_map(|b| b.records()) {
        records.push(SentRecord {
            key: text(r.key, "key")?,
            value: text(r.value, "value")?,
            timestamp: None,
            headers: text_headers(r.headers).map_err(|m| (INVALID_RECORD, m.to_string()))?,
            batch_timestamp: None,
        });
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
