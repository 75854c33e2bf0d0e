//! Fetch: the stored record batches from a fetch position, as a broker serves them.

use crate::broker::Broker;
use crate::delayed_fetch::DelayedFetch;
use crate::handlers::list_offsets::isolation;
use bytes::Bytes;
use offsetlab_engine::log::PartitionLog;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::txn::IsolationLevel;
use offsetlab_engine::txn::PartitionTxns;
use offsetlab_lab::session::Session;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use offsetlab_wire::kafka_protocol::messages::{FetchRequest, FetchResponse};
use std::sync::Arc;
use std::time::Duration;

/// Records a fetch hands out per partition at most.
const MAX_FETCH_RECORDS: usize = 5_000;

/// Fetch v10 is the first a client that reads zstd sends (KIP-110): an older fetch of a zstd
/// batch is answered UNSUPPORTED_COMPRESSION_TYPE, as Kafka answers it.
const FIRST_ZSTD_FETCH: i16 = 10;

/// Whether any batch in `bytes` (back to back) is compressed with zstd.
fn holds_zstd(bytes: &[u8]) -> bool {
    let mut at = 0;
    while let Some(h) = bytes
        .get(at..)
        .and_then(|b| offsetlab_records::BatchHeader::parse(b).ok())
    {
        if offsetlab_records::Compression::from_attributes(h.attributes)
            == Some(offsetlab_records::Compression::Zstd)
        {
            return true;
        }
        at += h.total_len;
    }
    false
}

/// One read of the lab for a fetch: the answer it would get now.
pub(crate) struct Read {
    pub(crate) response: FetchResponse,
    /// Bytes of record batches in it, control batches included.
    pub(crate) bytes: usize,
    /// Whether a partition is answered with an error (unknown, out of range, deleted, …).
    pub(crate) errors: bool,
}

impl Read {
    /// Whether the fetch can be answered with this now (Kafka's `DelayedFetch.tryComplete`):
    /// `min_bytes` of batches across its partitions, or a partition in error — an error is
    /// answered at once, not at the end of the wait.
    pub(crate) fn satisfies(&self, min_bytes: usize) -> bool {
        self.errors || self.bytes >= min_bytes
    }
}

/// The fetch as the lab would answer it now.
pub(crate) fn read(s: &Session, r: &FetchRequest, version: i16) -> Read {
    let (response, bytes) = fetch(s, r, version);
    let errors = response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .any(|p| p.error_code != NONE);
    Read {
        response,
        bytes,
        errors,
    }
}

/// The fetch response and how many bytes of record batches it carries.
fn fetch(s: &Session, r: &FetchRequest, version: i16) -> (FetchResponse, usize) {
    let lab = s.lab();
    let level = isolation(r.isolation_level);
    let mut total = 0;
    // The response's own limit (`fetch.max.bytes`, KIP-74): partitions are served in the order
    // asked until it is reached; the first batch goes out even if it alone is larger.
    let response_limit = usize::try_from(r.max_bytes).unwrap_or(0);
    let response_limit = if response_limit == 0 {
        usize::MAX
    } else {
        response_limit
    };
    let responses = r
        .topics
        .iter()
        .map(|t| {
            // From v13 a topic is named by its id (KIP-516); one the lab never gave out — or a
            // deleted topic's, after a topic of the same name came back — is UNKNOWN_TOPIC_ID.
            let by_id = t.topic.0.is_empty() && !t.topic_id.is_nil();
            let resolved = if by_id {
                lab.topic_named_by_id(t.topic_id.as_bytes()).map(str::to_string)
            } else {
                Some(t.topic.0.to_string())
            };
            let name = resolved.clone().unwrap_or_default();
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let tp = TopicPartition::new(name.clone(), p.partition);
                    // A partition in error has no offsets to tell (−1) and no records, as in
                    // Kafka's answer — which holds an empty list of aborted transactions for a
                    // partition it does not have, and none for one it refuses to read.
                    let refused = |code: i16| {
                        let unknown = code == UNKNOWN_TOPIC_OR_PARTITION || code == UNKNOWN_TOPIC_ID;
                        PartitionData::default()
                            .with_partition_index(p.partition)
                            .with_error_code(code)
                            .with_high_watermark(-1)
                            .with_last_stable_offset(-1)
                            .with_log_start_offset(-1)
                            .with_aborted_transactions(unknown.then(Vec::new))
                            .with_records(Some(Bytes::new()))
                    };
                    // A read_committed client gets the aborted transactions' list (empty: the
                    // lab drops aborted records itself); a read_uncommitted one none (null).
                    let base = PartitionData::default()
                        .with_partition_index(p.partition)
                        .with_aborted_transactions(match level {
                            IsolationLevel::ReadCommitted => Some(Vec::new()),
                            IsolationLevel::ReadUncommitted => None,
                        });
                    if resolved.is_none() {
                        return refused(UNKNOWN_TOPIC_ID);
                    }
                    let Ok((log, txns)) = lab.fetchable(&tp) else {
                        return refused(UNKNOWN_TOPIC_OR_PARTITION);
                    };
                    let (start, end) = (log.log_start_offset(), log.log_end_offset());
                    let lso = txns.last_stable_offset(end);
                    let base = base
                        .with_high_watermark(end)
                        .with_last_stable_offset(lso)
                        .with_log_start_offset(start);
                    if p.fetch_offset < start || p.fetch_offset > end {
                        return refused(OFFSET_OUT_OF_RANGE);
                    }
                    // The records the client may see: no markers; with read_committed, nothing
                    // at or past the last stable offset and nothing aborted (dropped here, so the
                    // client needs no aborted-transactions list).
                    let upper = match level {
                        IsolationLevel::ReadCommitted => lso,
                        IsolationLevel::ReadUncommitted => end,
                    };
                    if total > 0 && total >= response_limit {
                        return base.with_records(Some(Bytes::new()));
                    }
                    let budget = usize::try_from(p.partition_max_bytes)
                        .unwrap_or(0)
                        .min(response_limit - total)
                        .max(1);
                    // The stored batches as they are, when nothing in them must be hidden: what a
                    // broker does, and no record is decoded or encoded. Aborted records under
                    // read_committed take the path below, which drops them.
                    let hides_nothing = level == IsolationLevel::ReadUncommitted
                        || txns
                            .aborted_offsets()
                            .range(p.fetch_offset..upper.max(p.fetch_offset))
                            .next()
                            .is_none();
                    if hides_nothing && p.fetch_offset < upper {
                        let mut raw = Vec::new();
                        if log
                            .read_batches(p.fetch_offset, upper, budget, &mut raw)
                            .is_some()
                        {
                            if version < FIRST_ZSTD_FETCH && holds_zstd(&raw) {
                                return refused(UNSUPPORTED_COMPRESSION_TYPE);
                            }
                            total += raw.len();
                            return base.with_records(Some(Bytes::from(raw)));
                        }
                    }
                    let out = encoded(log, txns, p.fetch_offset, upper, budget, level);
                    total += out.len();
                    base.with_records(Some(Bytes::from(out)))
                })
                .collect();
            FetchableTopicResponse::default()
                .with_topic(t.topic.clone())
                .with_topic_id(t.topic_id)
                .with_partitions(partitions)
        })
        .collect();
    (FetchResponse::default().with_responses(responses), total)
}

/// The records from `from` (below `upper`, about `budget` bytes) encoded again, a batch per run
/// of data or control records: what a read_committed client gets where the stored batches hold
/// aborted records, and what an in-memory log serves.
fn encoded(
    log: &dyn PartitionLog,
    txns: &PartitionTxns,
    from: i64,
    upper: i64,
    budget: usize,
    level: IsolationLevel,
) -> Vec<u8> {
    let mut bytes = 0usize;
    let mut records = Vec::new();
    log.read(from, MAX_FETCH_RECORDS, &mut |rec| {
        if rec.offset >= upper || (bytes >= budget && !records.is_empty()) {
            return;
        }
        // A read_committed client never gets aborted records (dropped here, so it needs no
        // aborted-transactions list); every client gets the markers, as control batches it
        // skips — they are what moves its position past a transaction.
        if !rec.control && level == IsolationLevel::ReadCommitted && txns.is_aborted(rec.offset) {
            return;
        }
        bytes += rec.key.map_or(0, <[u8]>::len) + rec.value.map_or(0, <[u8]>::len) + 20;
        records.push(rec.to_owned());
    });
    let mut out = Vec::new();
    for run in records.chunk_by(|a, b| a.control == b.control) {
        let run: Vec<(i64, offsetlab_records::NewRecord<'_>)> =
            run.iter().map(|r| (r.offset, r.as_new())).collect();
        offsetlab_records::batch::encode(&mut out, &run, -1);
    }
    out
}

/// Fetch: answered once `fetch.min.bytes` of record batches are ready across its partitions
/// (control batches count: they move a read_committed client past a transaction's end) or a
/// partition is in error, or after `max.wait.ms` with what there is then. A fetch that must wait
/// is parked and woken by the changes that can complete it ([`DelayedFetch`]).
pub(crate) async fn handle(broker: &Arc<Broker>, r: FetchRequest, version: i16) -> Option<FetchResponse> {
    let wait = Duration::from_millis(u64::try_from(r.max_wait_ms).unwrap_or(0));
    let deadline = tokio::time::Instant::now() + wait;
    DelayedFetch::new(&broker.lab, r, version, deadline)
        .complete(&broker.lab)
        .await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_records::Batch;
    use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use offsetlab_wire::kafka_protocol::messages::TopicName;

    fn request(offset: i64, max_bytes: i32) -> FetchRequest {
        FetchRequest::default()
            .with_max_bytes(max_bytes)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(name("orders")))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(1 << 20)])])
    }

    /// Offsets of every record in a partition's batches.
    fn offsets(p: &PartitionData) -> Vec<i64> {
        let mut bytes = p.records.as_deref().unwrap_or_default();
        let mut out = Vec::new();
        while !bytes.is_empty() {
            let b = Batch::parse(bytes).expect("a whole batch");
            out.extend(b.records().map(|r| r.offset));
            bytes = &bytes[b.header.total_len..];
        }
        out
    }

    #[test]
    fn records_from_the_fetch_position_with_the_partitions_offsets() {
        let b = broker();
        let (r, bytes) = fetch(&b.lab.lock(), &request(5, 0), 11);
        let p = &r.responses[0].partitions[0];
        assert_eq!(
            (p.error_code, p.high_watermark, p.log_start_offset),
            (NONE, 12, 0)
        );
        let got = offsets(p);
        assert!(bytes > 0);
        assert_eq!(got.last(), Some(&11));
        assert!(got.contains(&5), "the batch holding the fetch position: {got:?}");
    }

    /// Fetch v13+ names a topic by its id (KIP-516): the topic's records, and for an id the lab
    /// never gave out — a deleted topic's, after one of the same name came back —
    /// UNKNOWN_TOPIC_ID, never the new topic's log.
    #[test]
    fn a_topic_named_by_its_id_is_the_topic_that_had_it() {
        let b = broker();
        let apply = |lines: &[&str]| {
            let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
            b.lab.lock().apply_lines(&lines).expect("lines");
        };
        apply(&["topic clicks", "produce clicks count=5"]);
        let id = b.lab.lock().lab().topic_id_of("clicks").expect("an id");
        let by_id = |id: [u8; 16]| {
            let mut r = request(0, 0);
            r.topics[0].topic = TopicName(name(""));
            r.topics[0].topic_id = offsetlab_wire::Uuid::from_bytes(id);
            r
        };
        let (r, _) = fetch(&b.lab.lock(), &by_id(id), 11);
        let p = &r.responses[0].partitions[0];
        assert_eq!((p.error_code, offsets(p).len()), (NONE, 5));
        assert_eq!(r.responses[0].topic_id.as_bytes(), &id);
        apply(&["delete-topic clicks", "topic clicks", "produce clicks count=3"]);
        let (r, _) = fetch(&b.lab.lock(), &by_id(id), 11);
        assert_eq!(r.responses[0].partitions[0].error_code, UNKNOWN_TOPIC_ID);
        let new = b.lab.lock().lab().topic_id_of("clicks").expect("an id");
        assert_ne!(new, id, "a topic created again has a new id");
        let (r, _) = fetch(&b.lab.lock(), &by_id(new), 11);
        assert_eq!(offsets(&r.responses[0].partitions[0]).len(), 3);
    }

    #[test]
    fn an_unknown_partition_and_a_position_past_the_end_are_errors() {
        let b = broker();
        let (r, _) = fetch(&b.lab.lock(), &request(99, 0), 11);
        assert_eq!(r.responses[0].partitions[0].error_code, OFFSET_OUT_OF_RANGE);
        let mut unknown = request(0, 0);
        unknown.topics[0].topic = TopicName(name("nope"));
        let (r, _) = fetch(&b.lab.lock(), &unknown, 11);
        assert_eq!(
            r.responses[0].partitions[0].error_code,
            UNKNOWN_TOPIC_OR_PARTITION
        );
    }
}
