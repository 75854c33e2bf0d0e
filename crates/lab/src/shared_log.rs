//! Partition logs another thread can read while the lab is busy: what lets a Fetch read stored
//! bytes without the session's lock.
//!
//! The engine owns its logs as `Box<dyn PartitionLog>` and touches them from one thread at a
//! time — whoever holds the session. A session gives the engine [`SharedLog`]s instead (through
//! [`SharedStore`], the store every session's lab is built over): each is the log behind a
//! mutex of its own, a *cell*, that the engine reaches through the same trait — every call takes
//! the cell's mutex for its duration — and that a reader reaches through a [`LogReader`] taken
//! from the published [`crate::read_view::ReadView`]. So a partition is readable while another
//! partition appends, and while the session runs a long line; a read and an append of the same
//! partition take turns for as long as one of them takes — a read that must not wait its turn (on
//! an async worker, [`LogWait::Never`]) is told the log is in use and goes where it may wait.
//!
//! What a reader may see is decided by the read view, not by the log: it reads below the high
//! watermark (or the last stable offset) the view was published with, so records appended by a
//! change still in progress — possibly taken back, if its save fails — are never handed out.
//! Appends beyond that bound do not disturb the bytes below it. What does disturb them is
//! counted: retention, DeleteRecords, compaction and truncation bump the cell's *epoch* (under
//! its mutex, when they removed something), and so does the log's end — dropped by the lab that
//! owned it (a topic deleted, a lab rebuilt or restored from its files) or closed. A reader whose
//! view was published at another epoch is told so (`None`) and reads again under the session's
//! lock, where the view is current; nothing it read is ever half from before and half after.
//! Every call that may change a log is counted too (`writes`): a view built after a change shares
//! with the view before whatever it knew of a log whose count did not move.

use offsetlab_engine::clock::Millis;
use offsetlab_engine::log::{
    BatchShape, EncodedAppend, LogStore, PartitionLog, SegmentInfo, TimestampType, TopicConfig,
};
use offsetlab_engine::record::{NewRecord, Offset, RecordRef};
use offsetlab_records::ProducedBatches;
use offsetlab_storage::lock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// One log, the count of the changes that removed records from it (or ended it), and the count
/// of all its changes.
struct LogCell {
    log: Mutex<Box<dyn PartitionLog>>,
    /// Bumped, under `log`'s mutex, by every change that removes or rewrites records below the
    /// log end, and when the log's owner lets go of it.
    epoch: AtomicU64,
    /// Bumped, under `log`'s mutex, by every call that may change the log (an append, a roll,
    /// a removal, a close): a view built after a change reuses what it knew of every log whose
    /// count did not move.
    writes: AtomicU64,
}

/// A partition log as a session's lab holds it: the store's log behind a mutex of its own, so
/// that a [`LogReader`] can read it from another thread. Every method of [`PartitionLog`] is the
/// inner log's, each call taking the mutex for its duration (uncontended unless a Fetch is
/// reading this very partition at that moment).
pub struct SharedLog {
    cell: Arc<LogCell>,
}

impl SharedLog {
    pub fn new(log: Box<dyn PartitionLog>) -> Self {
        Self {
            cell: Arc::new(LogCell {
                log: Mutex::new(log),
                epoch: AtomicU64::new(0),
                writes: AtomicU64::new(0),
            }),
        }
    }

    fn log(&self) -> MutexGuard<'_, Box<dyn PartitionLog>> {
        lock(&self.cell.log)
    }

    /// The log, for a call that may change it: counted.
    fn writing(&self) -> MutexGuard<'_, Box<dyn PartitionLog>> {
        let log = lock(&self.cell.log);
        self.cell.writes.fetch_add(1, Ordering::SeqCst);
        log
    }

    /// Runs a change that may remove records, and bumps the epoch if it did (the log's start or
    /// end moved, or `removed` says records went) — before a reader can take the mutex again.
    fn removing(&mut self, change: impl FnOnce(&mut dyn PartitionLog) -> usize) -> usize {
        let mut log = self.writing();
        let before = (log.log_start_offset(), log.log_end_offset());
        let removed = change(&mut **log);
        if removed > 0 || before != (log.log_start_offset(), log.log_end_offset()) {
            self.cell.epoch.fetch_add(1, Ordering::SeqCst);
        }
        drop(log);
        removed
    }
}

impl Drop for SharedLog {
    /// The lab let go of the log (a deleted topic, a lab replaced): a reader still holding its
    /// cell must not read it as the lab's any more.
    fn drop(&mut self) {
        let _log = lock(&self.cell.log);
        self.cell.epoch.fetch_add(1, Ordering::SeqCst);
    }
}

impl PartitionLog for SharedLog {
    fn append(&mut self, record: NewRecord<'_>, now: Millis) -> Offset {
        self.writing().append(record, now)
    }

    fn append_batch(&mut self, records: &[NewRecord<'_>], now: Millis) -> Offset {
        self.writing().append_batch(records, now)
    }

    fn append_whole(&mut self, records: &[NewRecord<'_>], now: Millis, stamp: TimestampType) -> Offset {
        self.writing().append_whole(records, now, stamp)
    }

    fn append_shaped(
        &mut self,
        records: &[NewRecord<'_>],
        shape: &BatchShape<'_>,
        now: Millis,
        stamp: TimestampType,
    ) -> Offset {
        self.writing().append_shaped(records, shape, now, stamp)
    }

    fn append_encoded(
        &mut self,
        batches: &mut ProducedBatches,
        now: Millis,
        stamp: TimestampType,
    ) -> Result<EncodedAppend, String> {
        self.writing().append_encoded(batches, now, stamp)
    }

    fn log_start_offset(&self) -> Offset {
        self.log().log_start_offset()
    }

    fn log_end_offset(&self) -> Offset {
        self.log().log_end_offset()
    }

    fn read(&self, from: Offset, max_records: usize, visit: &mut dyn FnMut(RecordRef<'_>)) -> usize {
        self.log().read(from, max_records, visit)
    }

    fn read_batches(
        &self,
        from: Offset,
        upper: Offset,
        max_bytes: usize,
        out: &mut Vec<u8>,
    ) -> Option<usize> {
        self.log().read_batches(from, upper, max_bytes, out)
    }

    fn batch_end(&self, offset: Offset) -> Offset {
        self.log().batch_end(offset)
    }

    fn offset_for_timestamp(&self, timestamp: i64) -> Option<Offset> {
        self.log().offset_for_timestamp(timestamp)
    }

    fn segments(&self) -> Vec<SegmentInfo> {
        self.log().segments()
    }

    fn delete_segments_before(&mut self, offset: Offset) -> usize {
        self.removing(|log| log.delete_segments_before(offset))
    }

    fn delete_records_before(&mut self, offset: Offset) -> usize {
        self.removing(|log| log.delete_records_before(offset))
    }

    fn compact(&mut self, keep: &mut dyn FnMut(RecordRef<'_>) -> bool) -> usize {
        self.removing(|log| log.compact(keep))
    }

    fn size_in_bytes(&self) -> usize {
        self.log().size_in_bytes()
    }

    fn record_count(&self) -> usize {
        self.log().record_count()
    }

    fn truncate_to(&mut self, offset: Offset) -> usize {
        self.removing(|log| log.truncate_to(offset))
    }

    fn seal_active(&mut self, now: Millis) {
        self.writing().seal_active(now);
    }

    fn close(&mut self) -> Result<(), String> {
        let mut log = lock(&self.cell.log);
        self.cell.epoch.fetch_add(1, Ordering::SeqCst);
        self.cell.writes.fetch_add(1, Ordering::SeqCst);
        log.close()
    }

    fn shared(&self) -> Option<&(dyn std::any::Any + Send + Sync)> {
        Some(&self.cell)
    }
}

/// Whether a read may wait for a partition's log while a change writes to it (an append, for
/// as long as it takes; a compaction, for as long as that takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogWait {
    /// It waits: a read on a blocking thread.
    ForTheLog,
    /// It does not: a read on an async worker, which other connections share. A log in use is
    /// then `None`, as one that lost records is, and the read goes on where it may wait.
    Never,
}

/// A log as a reader found it in a published view: the log's cell, and its epoch and count of
/// changes then.
#[derive(Clone)]
pub struct LogReader {
    cell: Option<Arc<LogCell>>,
    epoch: u64,
    writes: u64,
}

impl LogReader {
    /// The reader of `log` as it is now (the caller holds the session, so nothing moves it):
    /// one that never reads if the log is not a [`SharedLog`] — the session builds every lab over
    /// a [`SharedStore`], so that is a lab built some other way.
    pub(crate) fn of(log: &dyn PartitionLog) -> Self {
        let cell = cell_of(log);
        let (epoch, writes) = cell.map_or((0, 0), |c| {
            (c.epoch.load(Ordering::SeqCst), c.writes.load(Ordering::SeqCst))
        });
        Self {
            cell: cell.cloned(),
            epoch,
            writes,
        }
    }

    /// Whether `log` is this log, unchanged since this was taken: what a view built after a
    /// change reuses of the one before. No count of references moves: a view asks it of every
    /// log of the lab.
    pub(crate) fn unchanged_in(&self, log: &dyn PartitionLog) -> bool {
        match (cell_of(log), &self.cell) {
            (Some(now), Some(then)) => {
                Arc::ptr_eq(now, then)
                    && now.epoch.load(Ordering::SeqCst) == self.epoch
                    && now.writes.load(Ordering::SeqCst) == self.writes
            }
            _ => false,
        }
    }

    /// Runs `f` on the log as it is now, under its mutex, if nothing removed records from it
    /// (or ended it) since the view was published; `None` otherwise: read again under the
    /// session's lock. Everything below the view's bounds is then as it was when published.
    /// With [`LogWait::Never`], `None` too when a change is writing to the log at that moment.
    pub fn read<T>(&self, wait: LogWait, f: impl FnOnce(&dyn PartitionLog) -> T) -> Option<T> {
        let cell = self.cell.as_ref()?;
        let log = match wait {
            LogWait::ForTheLog => lock(&cell.log),
            LogWait::Never => match cell.log.try_lock() {
                Ok(log) => log,
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
                Err(std::sync::TryLockError::WouldBlock) => return None,
            },
        };
        (cell.epoch.load(Ordering::SeqCst) == self.epoch).then(|| f(&**log))
    }

    /// Whether `other` reads the same log, whatever was removed from it since.
    pub(crate) fn is_log_of(&self, other: &LogReader) -> bool {
        match (&self.cell, &other.cell) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

/// The cell of a [`SharedLog`].
fn cell_of(log: &dyn PartitionLog) -> Option<&Arc<LogCell>> {
    log.shared()?.downcast_ref::<Arc<LogCell>>()
}

/// A store whose every log is a [`SharedLog`]: what a session builds its lab over.
pub struct SharedStore<S> {
    inner: S,
}

impl<S: LogStore> SharedStore<S> {
    pub fn new(inner: S) -> Self {
        Self { inner }
    }
}

impl<S: LogStore> LogStore for SharedStore<S> {
    fn open(
        &mut self,
        topic: &str,
        partition: i32,
        config: &TopicConfig,
    ) -> Result<Box<dyn PartitionLog>, String> {
        let log = self.inner.open(topic, partition, config)?;
        Ok(Box::new(SharedLog::new(log)))
    }

    fn remove(&mut self, topic: &str, partition: i32) -> Result<(), String> {
        self.inner.remove(topic, partition)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use offsetlab_engine::log::memory::MemoryLog;

    fn log() -> SharedLog {
        let limits = offsetlab_engine::log::TopicConfig::default().segment_limits();
        let mut log = SharedLog::new(Box::new(MemoryLog::new(limits)));
        for i in 0..4i64 {
            let v = i.to_string();
            log.append(NewRecord::new(i, Some(v.as_bytes()), Some(b"x")), i);
        }
        log
    }

    #[test]
    fn a_reader_reads_while_appends_go_on_and_not_after_records_were_removed() {
        let mut log = log();
        let reader = LogReader::of(&log);
        let read = |r: &LogReader, f: fn(&dyn PartitionLog) -> i64| r.read(LogWait::ForTheLog, f);
        log.append(NewRecord::new(9, None, Some(b"y")), 9);
        assert_eq!(
            read(&reader, |l| l.log_end_offset()),
            Some(5),
            "an append beyond disturbs nothing"
        );
        assert_eq!(log.delete_records_before(0), 0);
        assert!(read(&reader, |_| 0).is_some(), "nothing removed, nothing moved");
        log.delete_records_before(2);
        assert!(
            read(&reader, |_| 0).is_none(),
            "records went: read again under the lock"
        );
        let again = LogReader::of(&log);
        assert_eq!(read(&again, |l| l.log_start_offset()), Some(2));
        {
            let _writing = log.log();
            assert!(
                again.read(LogWait::Never, |_| ()).is_none(),
                "in use: not waited for"
            );
        }
        assert!(again.read(LogWait::Never, |_| ()).is_some());
        drop(log);
        assert!(read(&again, |_| 0).is_none(), "the lab let go of the log");
    }

    #[test]
    fn a_log_that_is_not_shared_is_never_read_aside() {
        let plain = MemoryLog::new(offsetlab_engine::log::TopicConfig::default().segment_limits());
        assert!(LogReader::of(&plain).read(LogWait::ForTheLog, |_| ()).is_none());
    }
}
