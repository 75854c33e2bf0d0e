//! DelayedFetch: a fetch that cannot be answered yet is parked — not put to sleep, not polled —
//! and completed the moment the lab changes in a way that makes it answerable, or when its
//! `max.wait.ms` runs out, whichever comes first.
//!
//! Kafka parks such a fetch in its fetch purgatory and tries to complete it whenever something
//! it waits on moves: an append, a high watermark, a last stable offset (a transaction's
//! marker), a log start offset, a partition going away. The lab has one feed for all of these:
//! every change to the lab publishes the lab's new version ([`LabHandle::subscribe`]) — a
//! Produce, an EndTxn's markers, a DeleteRecords, a deleted topic, a scenario line from the page,
//! the live clock's timers. A parked fetch wakes on each, reads again, and either completes or
//! parks again. Changes that arrive while it reads are coalesced: one read answers them all.
//!
//! What makes a fetch answerable is Kafka's rule (`DelayedFetch.tryComplete`): at least
//! `fetch.min.bytes` of record batches across all the partitions it reads (control batches count:
//! a transaction's marker is what moves a `read_committed` client on), or any partition in error
//! — unknown, out of range, deleted — which is answered at once rather than at the deadline.

use crate::handlers::fetch::{read, Read};
use offsetlab_lab::LabHandle;
use offsetlab_wire::kafka_protocol::messages::{FetchRequest, FetchResponse};
use std::sync::Arc;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::time::Instant;

/// A fetch waiting for enough to read.
pub(crate) struct DelayedFetch {
    request: Arc<FetchRequest>,
    version: i16,
    min_bytes: usize,
    deadline: Instant,
    /// Subscribed before the first read, so that no change after that read can be missed.
    changes: broadcast::Receiver<u64>,
}

impl DelayedFetch {
    /// A fetch of `request` on `lab`, to be answered by `deadline` at the latest.
    pub(crate) fn new(lab: &LabHandle, request: FetchRequest, version: i16, deadline: Instant) -> Self {
        let min_bytes = usize::try_from(request.min_bytes).unwrap_or(1).max(1);
        Self {
            changes: lab.subscribe(),
            request: Arc::new(request),
            version,
            min_bytes,
            deadline,
        }
    }

    /// The fetch's answer: at once if it can be given now, else when a change makes it
    /// answerable, else at the deadline with what there is then. `None` if a read failed to run
    /// (its thread panicked): the connection is closed, as for any request that cannot be
    /// answered.
    pub(crate) async fn complete(mut self, lab: &LabHandle) -> Option<FetchResponse> {
        let mut now = self.read(lab).await?;
        loop {
            if now.satisfies(self.min_bytes) {
                return Some(now.response);
            }
            match tokio::time::timeout_at(self.deadline, self.changes.recv()).await {
                // Expired: nothing changed since the last read, so it is what there is now.
                Err(_) => return Some(now.response),
                // The lab is gone from this handle (never while the listener serves it): no
                // change will come; answer at the deadline as Kafka would.
                Ok(Err(RecvError::Closed)) => {
                    tokio::time::sleep_until(self.deadline).await;
                    return Some(self.read(lab).await?.response);
                }
                // A change, or so many that some were dropped: read again either way.
                Ok(Ok(_) | Err(RecvError::Lagged(_))) => {}
            }
            self.coalesce();
            now = self.read(lab).await?;
        }
    }

    /// Takes every change already announced: the read that follows sees them all.
    fn coalesce(&mut self) {
        loop {
            match self.changes.try_recv() {
                Ok(_) | Err(TryRecvError::Lagged(_)) => {}
                Err(TryRecvError::Empty | TryRecvError::Closed) => return,
            }
        }
    }

    /// One read of the lab, on a blocking thread (it takes the lab's lock).
    async fn read(&self, lab: &LabHandle) -> Option<Read> {
        let (lab, request, version) = (lab.clone(), Arc::clone(&self.request), self.version);
        tokio::task::spawn_blocking(move || read(&lab.lock(), &request, version))
            .await
            .ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::error::{NONE, UNKNOWN_TOPIC_OR_PARTITION};
    use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
    use offsetlab_wire::kafka_protocol::messages::TopicName;
    use std::time::Duration;

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
    async fn parked(lab: &LabHandle, r: FetchRequest) -> tokio::task::JoinHandle<Option<FetchResponse>> {
        let deadline = Instant::now() + Duration::from_millis(u64::try_from(r.max_wait_ms).unwrap_or(0));
        let fetch = DelayedFetch::new(lab, r, 11, deadline);
        let lab = lab.clone();
        let mut task = tokio::spawn(async move { fetch.complete(&lab).await });
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
        let b = broker();
        let task = parked(&b.lab, request("orders", &[(0, 12)], 30_000, 1)).await;
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
        let b = broker();
        let started = Instant::now();
        let deadline = started + Duration::from_millis(300);
        let r = DelayedFetch::new(&b.lab, request("orders", &[(0, 12)], 300, 1), 11, deadline)
            .complete(&b.lab)
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
        let b = broker();
        change(
            &b.lab,
            &[
                "topic payments",
                "init-txn pay-writer",
                r#"txn-send pay-writer producer-id=1000 epoch=0 topic=payments partition=0 records=[{"key":"p-1","value":"a"},{"key":"p-2","value":"b"}]"#,
            ],
        );
        let task = parked(
            &b.lab,
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
        let b = broker();
        change(
            &b.lab,
            &["topic clicks partitions=2", "produce clicks count=1 partition=0"],
        );
        let one_batch = {
            let s = b.lab.lock();
            crate::handlers::fetch::read(&s, &request("clicks", &[(0, 0)], 0, 1), 11).bytes
        };
        let min_bytes = i32::try_from(one_batch * 3 / 2).expect("small");
        let task = parked(&b.lab, request("clicks", &[(0, 1), (1, 0)], 30_000, min_bytes)).await;
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
        let b = broker();
        change(&b.lab, &["topic clicks", "produce clicks count=2"]);
        let task = parked(&b.lab, request("clicks", &[(0, 2)], 30_000, 1)).await;
        let deleted = Instant::now();
        change(&b.lab, &["delete-topic clicks"]);
        let r = task.await.expect("the fetch ran").expect("an answer");
        assert!(deleted.elapsed() < WOKEN);
        assert_eq!(bytes(&r)[0].1, UNKNOWN_TOPIC_OR_PARTITION);
    }
}
