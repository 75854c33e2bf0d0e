//! `send TOPIC partition=P [batches=N,N,…] [compression=CODEC [compressed=BASE64]] records=JSON [client=ID]`
//! (and `send TOPIC partition=P stored=FILE:AT+LEN count=N`, [`super::SendStored`])
//!
//! What a Kafka client produced through the listener: records with their own keys and values,
//! appended to one partition as they came, as producer batches (`batches` gives their sizes;
//! one batch without it), each appended whole — a segment rolls between batches, never inside
//! one. The lab's history keeps a client's batches as `send … stored=` lines; its export spells
//! them out as these lines, one per stored line, so an exported session replays exactly what the
//! client wrote. `records` is a JSON array of `{"key": …, "value": …}` objects whose fields are
//! strings or `null`. `compression` (gzip, snappy, lz4, zstd) is the codec the client's batches
//! came in, and `compressed` — for a line of one batch — the compressed records as the client's
//! compressor wrote them (base64): a replay stores exactly those bytes, after checking that they
//! decompress to the records the line spells out; without it the lab's compressor writes them.

use super::SendStored;
use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::count;
use offsetlab_engine::lab::{BatchPacking, SentRecord, MAX_SEND_RECORDS};
use offsetlab_engine::log::Compression;
use offsetlab_engine::record::RecordBytes;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    pub topic: String,
    pub partition: i32,
    pub records: Vec<SentRecord>,
    /// The sizes of the producer batches the records came in, when more than one.
    pub batches: Vec<usize>,
    /// The producing client's `client.id`, for the narrative.
    pub client: String,
    /// The codec its batches came in, and a single batch's compressed records.
    pub packing: BatchPacking,
}

impl Send {
    /// A `send` line: records spelled out (`records=[…]`, a [`Send`]) or stored by a durable
    /// lab (`stored=AT+LEN`, a [`SendStored`]).
    pub(crate) fn parse_line(args: &mut Args) -> Result<super::Command, ParseError> {
        let topic = args.word("topic")?;
        let partition = args
            .parsed("partition", |v| count(v, 10_000).map(|p| p as i32))?
            .ok_or_else(|| ParseError::new("send: missing partition=…"))?;
        // The producer's `client.id`, whatever it holds (Kafka keeps it as sent).
        let client = args.option("client").unwrap_or_else(|| "client".to_string());
        if let Some(stored) = args.option("stored") {
            let count = args.option("count");
            return SendStored::parse(topic, partition, client, &stored, count)
                .map(super::Command::SendStored);
        }
        let batches = args
            .parsed("batches", |v| {
                v.split(',')
                    .map(|n| count(n, MAX_SEND_RECORDS as u64).map(|n| n as usize))
                    .collect::<Result<Vec<usize>, _>>()
            })?
            .unwrap_or_default();
        let codec = args
            .parsed("compression", |v| v.parse::<Compression>())?
            .unwrap_or(Compression::None);
        let compressed = args.parsed("compressed", |v| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(v)
                .map_err(|e| format!("not base64 ({e})"))
        })?;
        if compressed.is_some() && (codec == Compression::None || batches.len() > 1) {
            return Err(ParseError::new(
                "send: compressed=… goes with compression=CODEC, on a line of one batch",
            ));
        }
        let records = args
            .parsed("records", |v| {
                serde_json::from_str::<Vec<SentRecord>>(v)
                    .map_err(|e| format!("not a JSON array of {{\"key\": …, \"value\": …}} records ({e})"))
            })?
            .ok_or_else(|| ParseError::new("send: missing records=[…]"))?;
        if records.is_empty() || records.len() > MAX_SEND_RECORDS {
            return Err(ParseError::new(format!(
                "send: records holds between 1 and {MAX_SEND_RECORDS} records (got {})",
                records.len()
            )));
        }
        if !batches.is_empty() && (batches.contains(&0) || batches.iter().sum::<usize>() != records.len()) {
            return Err(ParseError::new(format!(
                "send: batches={} does not add up to the {} records",
                batches.iter().map(usize::to_string).collect::<Vec<_>>().join(","),
                records.len()
            )));
        }
        Ok(super::Command::Send(Self {
            topic,
            partition,
            batches: if batches.len() > 1 { batches } else { Vec::new() },
            records,
            client,
            packing: BatchPacking { codec, compressed },
        }))
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        let one = [self.records.len()];
        let batches = if self.batches.is_empty() {
            &one[..]
        } else {
            &self.batches
        };
        lab.send_batches(
            &self.topic,
            self.partition,
            &self.records,
            batches,
            &self.packing,
            &self.client,
        )
        .map(|_| ())
    }
}

impl fmt::Display for Send {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "send {} partition={} client={}",
            Quoted(&self.topic),
            self.partition,
            Quoted(&self.client)
        )?;
        if self.batches.len() > 1 {
            let sizes: Vec<String> = self.batches.iter().map(usize::to_string).collect();
            write!(f, " batches={}", sizes.join(","))?;
        }
        if self.packing.codec != Compression::None {
            write!(f, " compression={}", self.packing.codec)?;
        }
        if let Some(c) = &self.packing.compressed {
            use base64::Engine;
            write!(
                f,
                " compressed={}",
                Quoted(&base64::engine::general_purpose::STANDARD.encode(c))
            )?;
        }
        f.write_str(" records=")?;
        write_records(f, &self.records)
    }
}

/// `records` as the JSON array a `send` line carries — byte for byte what serde_json writes —
/// straight into `out`. JSON escapes quotes, control characters and newlines inside strings, so
/// the array is one token for the tokenizer whatever the records hold. A string with nothing to
/// escape (nearly every one) is copied whole: the history of a million produced records is
/// written without looking at each byte twice.
pub(crate) fn write_records(out: &mut fmt::Formatter<'_>, records: &[SentRecord]) -> fmt::Result {
    use fmt::Write;
    out.write_char('[')?;
    for (i, r) in records.iter().enumerate() {
        if i > 0 {
            out.write_char(',')?;
        }
        out.write_str("{\"key\":")?;
        write_json_string(out, r.key.as_ref())?;
        out.write_str(",\"value\":")?;
        write_json_string(out, r.value.as_ref())?;
        if let Some(ts) = r.timestamp {
            write!(out, ",\"timestamp\":{ts}")?;
        }
        if !r.headers.is_empty() {
            out.write_str(",\"headers\":")?;
            out.write_str(&serde_json::to_string(&r.headers).map_err(|_| fmt::Error)?)?;
        }
        if let Some(base) = r.batch_timestamp {
            write!(out, ",\"batch_timestamp\":{base}")?;
        }
        out.write_char('}')?;
    }
    out.write_char(']')
}

/// Whether serde_json would escape any byte of `s`: control characters, '"' and '\\'. Checked
/// a chunk at a time without an early exit inside a chunk, which the compiler vectorises.
fn needs_escape(s: &[u8]) -> bool {
    s.chunks(64).any(|chunk| {
        chunk
            .iter()
            .fold(false, |found, &b| found | (b < 0x20) | (b == b'"') | (b == b'\\'))
    })
}

/// A key or value as [`RecordBytes`] serializes it: a JSON string when it is UTF-8 (nearly
/// always, and then copied whole when there is nothing to escape), `{"base64": …}` otherwise.
fn write_json_string(out: &mut fmt::Formatter<'_>, b: Option<&RecordBytes>) -> fmt::Result {
    use fmt::Write;
    match b.map(|b| (b, b.as_text())) {
        None => out.write_str("null"),
        Some((_, Some(s))) if !needs_escape(s.as_bytes()) => {
            out.write_char('"')?;
            out.write_str(s)?;
            out.write_char('"')
        }
        Some((b, _)) => out.write_str(&serde_json::to_string(b).map_err(|_| fmt::Error)?),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn send(records: Vec<SentRecord>) -> Send {
        Send {
            topic: "t".into(),
            partition: 0,
            client: "c".into(),
            records,
            batches: Vec::new(),
            packing: BatchPacking::default(),
        }
    }

    proptest! {
        /// The hand-written array is serde_json's, byte for byte, and parses back.
        #[test]
        fn records_are_written_as_serde_json_writes_them(
            records in proptest::collection::vec(
                (
                    proptest::option::of(any::<String>().prop_map(RecordBytes::from)),
                    proptest::option::of(prop_oneof![
                        "[ -~\n\t\"\\\\é€]{0,20}".prop_map(RecordBytes::from),
                        proptest::collection::vec(any::<u8>(), 0..20).prop_map(RecordBytes::from),
                    ]),
                    proptest::option::of(any::<i64>()),
                    proptest::collection::vec(
                        (
                            proptest::collection::vec(any::<u8>(), 0..8).prop_map(RecordBytes::from),
                            proptest::option::of(any::<String>().prop_map(RecordBytes::from)),
                        ),
                        0..3,
                    ),
                    proptest::option::of(any::<i64>()),
                ),
                1..6,
            )
        ) {
            let records: Vec<SentRecord> = records
                .into_iter()
                .map(|(key, value, timestamp, headers, batch_timestamp)| SentRecord {
                    key,
                    value,
                    timestamp,
                    batch_timestamp,
                    headers: headers.into_iter().map(Into::into).collect(),
                })
                .collect();
            let line = send(records.clone()).to_string();
            let expected = serde_json::to_string(&records).expect("json");
            prop_assert!(line.ends_with(&format!("records={expected}")), "{line}");
            let mut args = Args::new("send", crate::token::tokenize(&line).expect("tokens").into_iter().skip(1))
                .expect("args");
            let super::super::Command::Send(parsed) = Send::parse_line(&mut args).expect("parse") else {
                panic!("not a send with records: {line}");
            };
            prop_assert_eq!(parsed.records, records);
        }
    }
}
