//! Fetch: the stored record batches from a fetch position, as a broker serves them.

use crate::broker::Broker;
use crate::delayed_fetch::{DelayedFetch, Read};
use crate::handlers::list_offsets::isolation;
use bytes::Bytes;
use offsetlab_engine::log::PartitionLog;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::txn::IsolationLevel;
use offsetlab_lab::read_view::{LogWait, PartitionRead, ReadView};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::fetch_request::FetchPartition;
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

/// The fetch as the lab's published view answers it (`None`: a log it reads lost records since
/// the view was published — read again under the lab's lock, [`offsetlab_lab::LabHandle::read_locked`]
/// — or, with [`LogWait::Never`], a change is writing to one now).
pub(crate) fn read(view: &ReadView, r: &FetchRequest, version: i16, wait: LogWait) -> Option<Read> {
    let (response, bytes) = fetch(view, r, version, wait)?;
    let errors = response
        .responses
        .iter()
        .flat_map(|t| &t.partitions)
        .any(|p| p.error_code != NONE);
    Some(Read {
        response,
        bytes,
        errors,
    })
}

/// The most a fetch may carry, as its limits say: the response's, else the sum of its
/// partitions' (the first batch of a partition goes out whatever its size, so this bounds the
/// read's work, not its bytes exactly).
pub(crate) fn bound(r: &FetchRequest) -> usize {
    let partitions: usize = r
        .topics
        .iter()
        .flat_map(|t| &t.partitions)
        .map(|p| usize::try_from(p.partition_max_bytes).unwrap_or(0))
        .fold(0, usize::saturating_add);
    match usize::try_from(r.max_bytes).unwrap_or(0) {
        0 => partitions,
        limit => limit.min(partitions),
    }
}

/// The fetch response and how many bytes of record batches it carries; `None` as for [`read`].
fn fetch(view: &ReadView, r: &FetchRequest, version: i16, wait: LogWait) -> Option<(FetchResponse, usize)> {
    // The response's own limit (`fetch.max.bytes`, KIP-74): partitions are served in the order
    // asked until it is reached; the first batch goes out even if it alone is larger.
    let limit = usize::try_from(r.max_bytes).unwrap_or(0);
    let mut reading = Reading {
        view,
        wait,
        level: isolation(r.isolation_level),
        version,
        limit: if limit == 0 { usize::MAX } else { limit },
        total: 0,
    };
    let responses = r
        .topics
        .iter()
        .map(|t| {
            // From v13 a topic is named by its id (KIP-516); one the lab never gave out — or a
            // deleted topic's, after a topic of the same name came back — is UNKNOWN_TOPIC_ID.
            let by_id = t.topic.0.is_empty() && !t.topic_id.is_nil();
            let resolved = if by_id {
                view.topic_named_by_id(t.topic_id.as_bytes()).map(str::to_string)
            } else {
                Some(t.topic.0.to_string())
            };
            let partitions = t
                .partitions
                .iter()
                .map(|p| reading.partition(resolved.as_deref(), p))
                .collect::<Option<Vec<_>>>()?;
            Some(
                FetchableTopicResponse::default()
                    .with_topic(t.topic.clone())
                    .with_topic_id(t.topic_id)
                    .with_partitions(partitions),
            )
        })
        .collect::<Option<Vec<_>>>()?;
    Some((FetchResponse::default().with_responses(responses), reading.total))
}

/// One Fetch being read: what its partitions share — the lab's view and whether it may wait for
/// a log, the isolation level, the request's version, the response's byte limit and the bytes
/// it carries so far.
struct Reading<'a> {
    view: &'a ReadView,
    wait: LogWait,
    level: IsolationLevel,
    version: i16,
    limit: usize,
    total: usize,
}

impl Reading<'_> {
    /// One partition's answer: its offsets and the records from its fetch position, within
    /// its own limit and what is left of the response's; `topic` is `None` for an id the lab
    /// does not know. `None` when its log lost records since the view was published.
    fn partition(&mut self, topic: Option<&str>, p: &FetchPartition) -> Option<PartitionData> {
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
            .with_aborted_transactions(match self.level {
                IsolationLevel::ReadCommitted => Some(Vec::new()),
                IsolationLevel::ReadUncommitted => None,
            });
        let Some(name) = topic else {
            return Some(refused(UNKNOWN_TOPIC_ID));
        };
        let tp = TopicPartition::new(name, p.partition);
        let Some(part) = self.view.partition(&tp) else {
            return Some(refused(UNKNOWN_TOPIC_OR_PARTITION));
        };
        let (start, end, lso) = (
            part.log_start_offset(),
            part.high_watermark(),
            part.last_stable_offset(),
        );
        let base = base
            .with_high_watermark(end)
            .with_last_stable_offset(lso)
            .with_log_start_offset(start);
        if p.fetch_offset < start || p.fetch_offset > end {
            return Some(refused(OFFSET_OUT_OF_RANGE));
        }
        // The records the client may see: no markers; with read_committed, nothing
        // at or past the last stable offset and nothing aborted (dropped here, so the
        // client needs no aborted-transactions list).
        let upper = match self.level {
            IsolationLevel::ReadCommitted => lso,
            IsolationLevel::ReadUncommitted => end,
        };
        if self.total > 0 && self.total >= self.limit {
            return Some(base.with_records(Some(Bytes::new())));
        }
        let budget = usize::try_from(p.partition_max_bytes)
            .unwrap_or(0)
            .min(self.limit - self.total)
            .max(1);
        // The stored batches as they are, when nothing in them must be hidden: what a
        // broker does, and no record is decoded or encoded. Aborted records under
        // read_committed take the path below, which drops them.
        let hides_nothing = self.level == IsolationLevel::ReadUncommitted
            || part
                .aborted_offsets()
                .range(p.fetch_offset..upper.max(p.fetch_offset))
                .next()
                .is_none();
        // Below the view's bounds only: the log may already hold a change in progress.
        let (from, level) = (p.fetch_offset, self.level);
        let out = part.read(self.wait, |log| {
            if hides_nothing && from < upper {
                let mut raw = Vec::new();
                if log.read_batches(from, upper, budget, &mut raw).is_some() {
                    return raw;
                }
            }
            encoded(log, part, from, upper, budget, level)
        })?;
        if self.version < FIRST_ZSTD_FETCH && holds_zstd(&out) {
            return Some(refused(UNSUPPORTED_COMPRESSION_TYPE));
        }
        self.total += out.len();
        Some(base.with_records(Some(Bytes::from(out))))
    }
}

/// The records from `from` (below `upper`, about `budget` bytes) encoded again, a batch per run
/// of data or control records: what a read_committed client gets where the stored batches hold
/// aborted records, and what an in-memory log serves.
fn encoded(
    log: &dyn PartitionLog,
    txns: &PartitionRead,
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
    let bound = bound(&r);
    DelayedFetch::new(&broker.lab, (r, version), deadline, read, bound)
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
        let (r, bytes) =
            fetch(&b.lab.view(), &request(5, 0), 11, LogWait::ForTheLog).expect("read from the view");
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
        let (r, _) = fetch(&b.lab.view(), &by_id(id), 11, LogWait::ForTheLog).expect("read from the view");
        let p = &r.responses[0].partitions[0];
        assert_eq!((p.error_code, offsets(p).len()), (NONE, 5));
        assert_eq!(r.responses[0].topic_id.as_bytes(), &id);
        apply(&["delete-topic clicks", "topic clicks", "produce clicks count=3"]);
        let (r, _) = fetch(&b.lab.view(), &by_id(id), 11, LogWait::ForTheLog).expect("read from the view");
        assert_eq!(r.responses[0].partitions[0].error_code, UNKNOWN_TOPIC_ID);
        let new = b.lab.lock().lab().topic_id_of("clicks").expect("an id");
        assert_ne!(new, id, "a topic created again has a new id");
        let (r, _) = fetch(&b.lab.view(), &by_id(new), 11, LogWait::ForTheLog).expect("read from the view");
        assert_eq!(offsets(&r.responses[0].partitions[0]).len(), 3);
    }

    #[test]
    fn an_unknown_partition_and_a_position_past_the_end_are_errors() {
        let b = broker();
        let (r, _) =
            fetch(&b.lab.view(), &request(99, 0), 11, LogWait::ForTheLog).expect("read from the view");
        assert_eq!(r.responses[0].partitions[0].error_code, OFFSET_OUT_OF_RANGE);
        let mut unknown = request(0, 0);
        unknown.topics[0].topic = TopicName(name("nope"));
        let (r, _) = fetch(&b.lab.view(), &unknown, 11, LogWait::ForTheLog).expect("read from the view");
        assert_eq!(
            r.responses[0].partitions[0].error_code,
            UNKNOWN_TOPIC_OR_PARTITION
        );
    }
}

#[cfg(test)]
mod waiting {
    //! A Fetch with nothing to read yet waits parked ([`DelayedFetch`]) and is answered by the
    //! change that gives it enough, or at its `max.wait.ms`.
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_lab::LabHandle;
    use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use offsetlab_wire::kafka_protocol::messages::TopicName;
    use tokio::time::Instant;

    /// A fetch of `topic`'s partitions, each from its offset, waiting up to `wait_ms` for
    /// `min_bytes`.
    fn request(topic: &str, partitions: &[(i32, i64)], wait_ms: i32, min_bytes: i32) -> FetchRequest {
        FetchRequest::default()
            .with_max_wait_ms(wait_ms)
            .with_min_bytes(min_bytes)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(name(topic)))
                .with_partitions(
                    partitions
                        .iter()
                        .map(|&(partition, offset)| {
                            FetchPartition::default()
                                .with_partition(partition)
                                .with_fetch_offset(offset)
                                .with_partition_max_bytes(1 << 20)
                        })
                        .collect(),
                )])
    }

    /// Applies `lines` as a front end does: the change saved and announced.
    fn change(lab: &LabHandle, lines: &[&str]) {
        let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
        let mut s = lab.lock();
        s.apply_lines(&lines).expect("the lines apply");
        lab.changed(&mut s).expect("saved");
    }

    /// Starts the fetch and checks that it is parked: nothing to answer, so no answer within
    /// a moment (the fetch's own wait is far longer).
    async fn parked(b: &Arc<Broker>, r: FetchRequest) -> tokio::task::JoinHandle<Option<FetchResponse>> {
        let b = Arc::clone(b);
        let mut task = tokio::spawn(async move { handle(&b, r, 11).await });
        let early = tokio::time::timeout(Duration::from_millis(200), &mut task).await;
        assert!(early.is_err(), "answered with nothing to read: {early:?}");
        task
    }

    /// Bytes of record batches per partition of an answer.
    fn bytes(r: &FetchResponse) -> Vec<(i32, i16, usize)> {
        r.responses
            .iter()
            .flat_map(|t| &t.partitions)
            .map(|p| {
                (
                    p.partition_index,
                    p.error_code,
                    p.records.as_ref().map_or(0, |b| b.len()),
                )
            })
            .collect()
    }

    /// The answer is woken by the append, not by its deadline (30 s away). How soon is a
    /// benchmark's question (docs/BENCHMARKS.md: a few milliseconds); a quarter second here
    /// tells a woken fetch from one that polls or sleeps out a wait.
    const WOKEN: Duration = Duration::from_millis(250);

    #[tokio::test]
    async fn a_parked_fetch_is_answered_when_a_record_is_appended() {
        let b = Arc::new(broker());
        let task = parked(&b, request("orders", &[(0, 12)], 30_000, 1)).await;
        let appended = Instant::now();
        change(&b.lab, &["produce orders count=1 partition=0"]);
        let r = task.await.expect("the fetch ran").expect("an answer");
        assert!(
            appended.elapsed() < WOKEN,
            "answered {:?} after the append",
            appended.elapsed()
        );
        let got = bytes(&r);
        assert_eq!((got[0].0, got[0].1), (0, NONE));
        assert!(got[0].2 > 0, "the appended record: {got:?}");
    }

    #[tokio::test]
    async fn with_nothing_appended_it_is_answered_at_max_wait_with_nothing() {
        let b = Arc::new(broker());
        let started = Instant::now();
        let r = handle(&b, request("orders", &[(0, 12)], 300, 1), 11)
            .await
            .expect("an answer");
        assert!(
            started.elapsed() >= Duration::from_millis(300),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(bytes(&r), vec![(0, NONE, 0)]);
    }

    /// A `read_committed` fetch sees nothing of an open transaction: it is answered by the
    /// commit's marker, which moves the last stable offset past the records.
    #[tokio::test]
    async fn a_read_committed_fetch_waits_for_the_transactions_commit() {
        let b = Arc::new(broker());
        change(
            &b.lab,
            &[
                "topic payments",
                "init-txn pay-writer",
                r#"txn-send pay-writer producer-id=1000 epoch=0 topic=payments partition=0 records=[{"key":"p-1","value":"a"},{"key":"p-2","value":"b"}]"#,
            ],
        );
        let task = parked(
            &b,
            request("payments", &[(0, 0)], 30_000, 1).with_isolation_level(1),
        )
        .await;
        let committed = Instant::now();
        change(&b.lab, &["end-txn pay-writer producer-id=1000 epoch=0 commit"]);
        let r = task.await.expect("the fetch ran").expect("an answer");
        assert!(
            committed.elapsed() < WOKEN,
            "answered {:?} after the commit",
            committed.elapsed()
        );
        let p = &r.responses[0].partitions[0];
        assert_eq!(
            (p.error_code, p.last_stable_offset),
            (NONE, 3),
            "two records and the marker"
        );
        assert!(bytes(&r)[0].2 > 0);
    }

    /// `fetch.min.bytes` counts across the fetch's partitions: one partition's record is not
    /// enough, the second partition's completes it.
    #[tokio::test]
    async fn min_bytes_is_counted_across_partitions() {
        let b = Arc::new(broker());
        change(
            &b.lab,
            &["topic clicks partitions=2", "produce clicks count=1 partition=0"],
        );
        let one_batch = {
            read(
                &b.lab.view(),
                &request("clicks", &[(0, 0)], 0, 1),
                11,
                LogWait::ForTheLog,
            )
            .expect("read from the view")
            .bytes
        };
        let min_bytes = i32::try_from(one_batch * 3 / 2).expect("small");
        let task = parked(&b, request("clicks", &[(0, 1), (1, 0)], 30_000, min_bytes)).await;
        change(&b.lab, &["produce clicks count=1 partition=0"]);
        // Partition 1 has nothing yet: one batch is not enough.
        let mut task = task;
        let one = tokio::time::timeout(Duration::from_millis(200), &mut task).await;
        assert!(
            one.is_err(),
            "answered with one batch of {one_batch} bytes, under {min_bytes}"
        );
        let appended = Instant::now();
        change(&b.lab, &["produce clicks count=2 partition=1"]);
        let r = task.await.expect("the fetch ran").expect("an answer");
        assert!(appended.elapsed() < WOKEN);
        let got = bytes(&r);
        assert!(got.iter().all(|(_, e, n)| *e == NONE && *n > 0), "{got:?}");
    }

    /// A partition that goes away is an error, answered at once — not at the deadline.
    #[tokio::test]
    async fn a_deleted_topic_is_answered_at_once() {
        let b = Arc::new(broker());
        change(&b.lab, &["topic clicks", "produce clicks count=2"]);
        let task = parked(&b, request("clicks", &[(0, 2)], 30_000, 1)).await;
        let deleted = Instant::now();
        change(&b.lab, &["delete-topic clicks"]);
        let r = task.await.expect("the fetch ran").expect("an answer");
        assert!(deleted.elapsed() < WOKEN);
        assert_eq!(bytes(&r)[0].1, UNKNOWN_TOPIC_OR_PARTITION);
    }
}
