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
//!
//! A read takes no lock of the lab's: it reads the published view ([`LabHandle::view`]), which
//! the change is published in before it is announced, and the partitions' bytes through their
//! own logs. A read bounded to [`INLINE_READ_BYTES`] runs where the request was read, unless a
//! log it reads is being written to at that moment; a larger one, or that one, on a blocking
//! thread, where it waits for the log — as does, for the lab's lock, the rare read that must (a
//! log it reads lost records since the view: [`LabHandle::read_locked`]).

use offsetlab_lab::read_view::{LogWait, ReadView};
use offsetlab_lab::LabHandle;
use offsetlab_wire::kafka_protocol::messages::{FetchRequest, FetchResponse};
use std::sync::Arc;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio::time::Instant;

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

/// How a fetch reads the lab's view (`handlers::fetch::read`; `None`: a log it reads lost
/// records since the view was published, or — not waiting — is being written to): the
/// purgatory decides when and where, the handler what.
pub(crate) type ReadFn = fn(&ReadView, &FetchRequest, i16, LogWait) -> Option<Read>;

/// A fetch that can carry at most this much (`handlers::fetch::bound`) is read on the async
/// worker that read the request: a read of the page cache this size takes well under a
/// millisecond, less than the hop to a blocking thread and back costs a loaded machine. A
/// larger one is read on a blocking thread, so that a consumer catching up on megabytes never
/// holds up the other connections of its worker.
pub(crate) const INLINE_READ_BYTES: usize = 1 << 20;

/// A fetch waiting for enough to read.
pub(crate) struct DelayedFetch {
    request: Arc<FetchRequest>,
    version: i16,
    min_bytes: usize,
    deadline: Instant,
    read: ReadFn,
    /// Whether it is read where it was received ([`INLINE_READ_BYTES`]).
    inline: bool,
    /// Subscribed before the first read, so that no change after that read can be missed.
    changes: broadcast::Receiver<u64>,
}

impl DelayedFetch {
    /// A fetch of `request` on `lab`, read with `read`, to be answered by `deadline` at the
    /// latest; it can carry at most `bound` bytes.
    pub(crate) fn new(
        lab: &LabHandle,
        (request, version): (FetchRequest, i16),
        deadline: Instant,
        read: ReadFn,
        bound: usize,
    ) -> Self {
        let min_bytes = usize::try_from(request.min_bytes).unwrap_or(1).max(1);
        Self {
            changes: lab.subscribe(),
            request: Arc::new(request),
            version,
            min_bytes,
            deadline,
            read,
            inline: bound <= INLINE_READ_BYTES,
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

    /// One read of the lab: of its published view, here or on a blocking thread; under its lock
    /// if a log lost records since that view.
    async fn read(&self, lab: &LabHandle) -> Option<Read> {
        if self.inline {
            if let Some(now) = (self.read)(&lab.view(), &self.request, self.version, LogWait::Never) {
                return Some(now);
            }
        }
        let (lab, request, version) = (lab.clone(), Arc::clone(&self.request), self.version);
        let read = self.read;
        tokio::task::spawn_blocking(move || {
            read(&lab.view(), &request, version, LogWait::ForTheLog).or_else(|| {
                let locked = lab.read_locked(|view| read(view, &request, version, LogWait::ForTheLog));
                if locked.is_none() {
                    // Every log of a session's lab is shared: this is a lab built otherwise.
                    tracing::error!("a fetch could not read a log of the lab even under its lock");
                }
                locked
            })
        })
        .await
        .ok()
        .flatten()
    }
}
