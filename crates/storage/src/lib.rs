//! # offsetlab-storage
//!
//! The lab's durable log. Each partition is a directory of segment files holding Kafka record
//! batches (magic v2, CRC-32C), each segment with a sparse offset index and a time index, named
//! by base offset as Kafka names them. [`FileStore`] is a [`LogStore`]: the engine asks it for
//! partition logs exactly as it asks the in-memory store, and both pass the same conformance
//! tests (`tests/conformance.rs`), including a property test that random operations give the
//! same observable log.
//!
//! Crash safety, the way Kafka does it:
//! - every append is written (into the page cache) before the lab acknowledges it; when it is
//!   synced to disk is the [`FlushPolicy`]: `never`, `interval=DUR`, or `always` with group
//!   commit ([`Durability`]);
//! - a clean close writes a snapshot of each log's segment metadata and then a clean-shutdown
//!   marker, so the next start reads no record data;
//! - after an unclean stop every segment is scanned: batch headers only below the recovery
//!   point (segments synced when they rolled), every batch validated from there on; a torn or
//!   corrupt tail is truncated, later segments are taken out of the log, indexes rebuilt —
//!   what is cut kept aside in the partition's `cut/` directory, never deleted;
//! - compaction rewrites a segment beside the old one, syncs it, renames it over the old one and
//!   syncs the directory, so a crash leaves either the old or the new segment.

mod aside;
mod durability;
mod health;
mod index;
mod log;
mod pool;
mod segment;
pub mod shape;
mod slots;
mod sync;

pub use aside::CUT_DIR;
pub use durability::{Durability, FlushPolicy};
pub use health::{Fault, FaultKind, Health};
pub use log::{AppendError, FileLog, OpenReport};
pub use pool::{FilePool, PoolStats};
pub use slots::SlotFile;
pub use sync::lock;

use offsetlab_engine::log::{LogStore, PartitionLog, TopicConfig};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Raises the process's file descriptor limit to its hard limit (what `ulimit -n` would allow)
/// and returns the new soft limit. Call before anything opens files: the segment file pool
/// ([`FilePool::global`]) sizes itself from it.
pub fn raise_descriptor_limit() -> io::Result<u64> {
    rlimit::increase_nofile_limit(u64::MAX)
}

/// The process's file descriptor limit (its soft limit).
pub fn descriptor_limit() -> io::Result<u64> {
    rlimit::getrlimit(rlimit::Resource::NOFILE).map(|(soft, _)| soft)
}

/// Writes a small file atomically: a temporary file renamed over the old one; with `sync`, the
/// file and then its directory are synced, so the rename itself survives a power cut.
pub fn write_atomically(path: &Path, bytes: &[u8], sync: bool) -> io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    if sync {
        std::fs::File::open(&tmp)?.sync_all()?;
    }
    std::fs::rename(&tmp, path)?;
    if sync {
        if let Some(dir) = path.parent() {
            std::fs::File::open(dir)?.sync_all()?;
        }
    }
    Ok(())
}

/// Where a deleted partition's directory is moved until the deletion is saved, as Kafka renames
/// a deleted log's directory to `…-delete` before it removes it: `<root>/.deleted/<n>/<dir>`.
/// A directory of its own keeps the partition's name whole (a suffix could push a 249-character
/// topic's name past 255 bytes), and no topic's directory can be named `.deleted` (a partition
/// directory always ends in `-<partition>`).
const DELETED_DIR: &str = ".deleted";

/// How older versions renamed a deleted partition aside: `<dir>.deleted-<n>` beside it.
const LEGACY_DELETED: &str = ".deleted-";

/// The clean-shutdown marker, as Kafka's `.kafka_cleanshutdown`.
const CLEAN_SHUTDOWN: &str = ".clean-shutdown";

/// Partition logs as segment files under one directory.
pub struct FileStore {
    root: PathBuf,
    durability: Arc<Durability>,
    /// The previous run ended with a clean close: logs may trust their snapshots.
    clean: bool,
    reports: Arc<Mutex<Vec<(String, OpenReport)>>>,
    /// Numbers the directories of deleted partitions (a topic may be deleted twice before a save).
    deletions: u64,
    /// Where logs keep the segments client batches went to ([`FileLog::keep_segments_in`]).
    kept_dir: Option<PathBuf>,
    /// Writes the disk refused, in any of the store's logs, until the owner takes them.
    health: Arc<Health>,
}

impl FileStore {
    /// Opens the store in `root` (created if missing). Whether the last run closed cleanly is
    /// read, then forgotten: until the next clean close, a stop counts as a crash.
    pub fn open(root: &Path, policy: FlushPolicy) -> io::Result<Self> {
        std::fs::create_dir_all(root)?;
        Self::reclaim_deleted(root)?;
        // What is still aside was deleted again after the deletion the saved lab knows: a topic
        // that was never acknowledged.
        Self::purge_deleted(root)?;
        let marker = root.join(CLEAN_SHUTDOWN);
        let clean = marker.exists();
        if clean {
            std::fs::remove_file(&marker)?;
            std::fs::File::open(root)?.sync_all()?;
        }
        Ok(Self {
            root: root.to_path_buf(),
            durability: Durability::new(policy),
            clean,
            reports: Arc::new(Mutex::new(Vec::new())),
            deletions: 0,
            kept_dir: None,
            health: Arc::new(Health::default()),
        })
    }

    /// Every log this store opens keeps the segments client batches go to as hard links in
    /// `dir` ([`FileLog::keep_segments_in`]). Put it beside the logs' root, on the same file
    /// system, and outside every partition's directory.
    pub fn keeping_segments_in(mut self, dir: PathBuf) -> Self {
        self.kept_dir = Some(dir);
        self
    }

    /// A partition deleted by a change that was never saved comes back: its directory was only
    /// moved aside. Of several deletions of the same partition the first is the one the saved
    /// lab knows. Whatever the lab then does not know is removed by its owner (the session's
    /// start removes partition directories of unknown topics).
    fn reclaim_deleted(root: &Path) -> io::Result<()> {
        let mut deleted: std::collections::BTreeMap<String, Vec<(u64, PathBuf)>> = Default::default();
        let aside = root.join(DELETED_DIR);
        if aside.is_dir() {
            for numbered in std::fs::read_dir(&aside)? {
                let numbered = numbered?;
                let Ok(n) = numbered.file_name().to_string_lossy().parse::<u64>() else {
                    continue;
                };
                for entry in std::fs::read_dir(numbered.path())? {
                    let entry = entry?;
                    let name = entry.file_name().to_string_lossy().into_owned();
                    deleted.entry(name).or_default().push((n, entry.path()));
                }
            }
        }
        for entry in std::fs::read_dir(root)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // Older versions' `<topic>-<p>.deleted-<n>`; the part before must itself be a
            // partition directory's name.
            if let Some((base, n)) = name.rsplit_once(LEGACY_DELETED) {
                let partition_dir = base
                    .rsplit_once('-')
                    .is_some_and(|(t, p)| !t.is_empty() && p.parse::<u32>().is_ok());
                if let (Ok(n), true) = (n.parse::<u64>(), partition_dir) {
                    deleted
                        .entry(base.to_string())
                        .or_default()
                        .push((n, entry.path()));
                }
            }
        }
        for (base, mut dirs) in deleted {
            dirs.sort();
            let live = root.join(&base);
            if !live.exists() {
                if let Some((_, first)) = dirs.first() {
                    std::fs::rename(first, &live)?;
                }
            }
        }
        Ok(())
    }

    /// Removes the directories of deleted partitions: call once the deletion is saved.
    pub fn purge_deleted(root: &Path) -> io::Result<()> {
        let aside = root.join(DELETED_DIR);
        match std::fs::remove_dir_all(&aside) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The shared durability state: `serve` syncs through it after each action (group commit).
    pub fn durability(&self) -> Arc<Durability> {
        Arc::clone(&self.durability)
    }

    /// Where the store's logs note a write the disk refused: check it after every action.
    pub fn health(&self) -> Arc<Health> {
        Arc::clone(&self.health)
    }

    /// Whether the previous run ended with a clean close.
    pub fn was_clean(&self) -> bool {
        self.clean
    }

    /// How each log opened so far came back (recovery notes, truncated bytes).
    pub fn reports(&self) -> Arc<Mutex<Vec<(String, OpenReport)>>> {
        Arc::clone(&self.reports)
    }

    /// The directory of one partition: `<root>/<topic>-<partition>`, as Kafka names it.
    pub fn partition_dir(root: &Path, topic: &str, partition: i32) -> PathBuf {
        root.join(format!("{topic}-{partition}"))
    }

    /// Writes the clean-shutdown marker. Call after every log was closed
    /// ([`PartitionLog::close`]).
    pub fn mark_clean(root: &Path) -> io::Result<()> {
        std::fs::write(root.join(CLEAN_SHUTDOWN), b"")?;
        std::fs::File::open(root)?.sync_all()
    }
}

impl LogStore for FileStore {
    fn open(
        &mut self,
        topic: &str,
        partition: i32,
        config: &TopicConfig,
    ) -> Result<Box<dyn PartitionLog>, String> {
        let dir = Self::partition_dir(&self.root, topic, partition);
        let log = FileLog::open(
            &dir,
            config.segment_limits(),
            Arc::clone(&self.durability),
            self.clean,
        )
        .map_err(|e| {
            self.health.report("open the log in", &dir, &e);
            format!("cannot open the log in {}: {e}", dir.display())
        })?;
        let mut log = log;
        log.report_faults_to(Arc::clone(&self.health));
        if let Some(kept) = &self.kept_dir {
            log.keep_segments_in(kept.clone());
        }
        if let Ok(mut r) = self.reports.lock() {
            r.push((format!("{topic}-{partition}"), log.open_report().clone()));
        }
        Ok(Box::new(log))
    }

    /// Renames the partition's directory aside: the files go only once the deletion is saved
    /// ([`FileStore::purge_deleted`]); a crash before that brings them back at the next open.
    fn remove(&mut self, topic: &str, partition: i32) -> Result<(), String> {
        let dir = Self::partition_dir(&self.root, topic, partition);
        if !dir.exists() {
            return Ok(());
        }
        self.deletions += 1;
        let numbered = self.root.join(DELETED_DIR).join(self.deletions.to_string());
        let aside = numbered.join(format!("{topic}-{partition}"));
        // Handles to its files would keep reading (and writing) the moved files.
        FilePool::global().forget_under(&dir);
        std::fs::create_dir_all(&numbered)
            .and_then(|()| std::fs::rename(&dir, &aside))
            .map_err(|e| {
                self.health.report("delete the log in", &dir, &e);
                format!("cannot delete the log in {}: {e}", dir.display())
            })
    }
}
