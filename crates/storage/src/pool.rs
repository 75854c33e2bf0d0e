//! The segment files a process keeps open, bounded.
//!
//! A log of twenty thousand segments, or ten thousand partitions, must not hold a file
//! descriptor per file: the process would run out of them, and the next segment roll — or the
//! next connection — would fail. Segments name their files by path and ask the pool for an open
//! handle when they read or write; the pool keeps at most [`FilePool::capacity`] handles and
//! closes the least recently used when it needs room (a handle still in use elsewhere — a read in
//! progress, a file waiting for its fsync — closes when that use ends). Kafka does the same with
//! its memory-mapped indexes, and bounds the rest with `ulimit` advice; here the bound is part of
//! the program.
//!
//! Opening a file when descriptors run out anyway (other parts of the process hold them)
//! closes half the pool and tries once more; if that fails too, the error goes to the caller,
//! which fails the request that needed the file.

use crate::lock;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

/// Open segment files, least recently used closed first.
#[derive(Debug)]
pub struct FilePool {
    capacity: usize,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    files: HashMap<PathBuf, Entry>,
    /// A use counter: an entry's `used` is when it was last handed out.
    clock: u64,
    opened: u64,
    closed: u64,
}

#[derive(Debug)]
struct Entry {
    file: Arc<File>,
    used: u64,
}

/// How the pool was used, for the benchmarks and the tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolStats {
    pub open: usize,
    pub capacity: usize,
    pub opened: u64,
    pub closed: u64,
}

static GLOBAL: OnceLock<Arc<FilePool>> = OnceLock::new();

/// The descriptors the process may keep for segment files: a quarter of its limit (the rest is
/// for connections, SQLite sinks and the runtime), at least 16, at most 4,096.
fn default_capacity() -> usize {
    let soft = crate::descriptor_limit().unwrap_or(1024);
    usize::try_from(soft / 4).unwrap_or(4096).clamp(16, 4096)
}

fn is_out_of_descriptors(e: &io::Error) -> bool {
    // EMFILE (the process's limit) and ENFILE (the system's).
    matches!(e.raw_os_error(), Some(24 | 23))
}

impl FilePool {
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(Self {
            capacity: capacity.max(2),
            state: Mutex::new(State::default()),
        })
    }

    /// The process's pool, sized from its descriptor limit when first used.
    pub fn global() -> Arc<Self> {
        Arc::clone(GLOBAL.get_or_init(|| Self::new(default_capacity())))
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// An open handle to the file at `path` (read and write), opening it if need be; `create`
    /// creates a missing file.
    pub fn get(&self, path: &Path, create: bool) -> io::Result<Arc<File>> {
        {
            let mut s = self.lock();
            s.clock += 1;
            let now = s.clock;
            if let Some(e) = s.files.get_mut(path) {
                e.used = now;
                return Ok(Arc::clone(&e.file));
            }
        }
        let open = || {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(create)
                .truncate(false)
                .open(path)
        };
        let file = match open() {
            Ok(f) => f,
            Err(e) if is_out_of_descriptors(&e) => {
                self.shrink(self.capacity / 2);
                open()?
            }
            Err(e) => return Err(e),
        };
        let file = Arc::new(file);
        let mut s = self.lock();
        if s.files.len() >= self.capacity {
            // Room for an eighth of the pool at once, so eviction is rare and cheap.
            let keep = self.capacity - self.capacity / 8 - 1;
            Self::evict(&mut s, keep);
        }
        s.clock += 1;
        let used = s.clock;
        s.opened += 1;
        s.files.insert(
            path.to_path_buf(),
            Entry {
                file: Arc::clone(&file),
                used,
            },
        );
        Ok(file)
    }

    /// Forgets the handle to `path`: call when the file is deleted, renamed over or about to be
    /// replaced, so the next use opens what the path names now.
    pub fn forget(&self, path: &Path) {
        let mut s = self.lock();
        if s.files.remove(path).is_some() {
            s.closed += 1;
        }
    }

    /// Forgets every handle to a file under `dir` (a partition's directory renamed aside).
    pub fn forget_under(&self, dir: &Path) {
        let mut s = self.lock();
        let before = s.files.len();
        s.files.retain(|p, _| !p.starts_with(dir));
        s.closed += (before - s.files.len()) as u64;
    }

    /// Closes handles until at most `keep` are open.
    pub fn shrink(&self, keep: usize) {
        let mut s = self.lock();
        Self::evict(&mut s, keep);
    }

    fn evict(s: &mut State, keep: usize) {
        if s.files.len() <= keep {
            return;
        }
        let mut by_age: Vec<(u64, PathBuf)> = s.files.iter().map(|(p, e)| (e.used, p.clone())).collect();
        by_age.sort_unstable();
        let excess = s.files.len() - keep;
        for (_, p) in by_age.into_iter().take(excess) {
            s.files.remove(&p);
            s.closed += 1;
        }
    }

    pub fn stats(&self) -> PoolStats {
        let s = self.lock();
        PoolStats {
            open: s.files.len(),
            capacity: self.capacity,
            opened: s.opened,
            closed: s.closed,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pool_never_holds_more_than_its_capacity() {
        let dir = tempfile::tempdir().expect("dir");
        let pool = FilePool::new(8);
        for i in 0..100 {
            let f = pool
                .get(&dir.path().join(format!("{i}.log")), true)
                .expect("open");
            std::os::unix::fs::FileExt::write_all_at(&*f, format!("{i}").as_bytes(), 0).expect("write");
            assert!(pool.stats().open <= 8);
        }
        // Evicted files open again, with what was written.
        let f = pool.get(&dir.path().join("3.log"), false).expect("reopen");
        let mut buf = [0u8; 1];
        std::os::unix::fs::FileExt::read_exact_at(&*f, &mut buf, 0).expect("read");
        assert_eq!(&buf, b"3");
        assert!(pool.stats().closed >= 90);
    }

    #[test]
    fn a_forgotten_path_opens_what_it_names_now() {
        let dir = tempfile::tempdir().expect("dir");
        let pool = FilePool::new(8);
        let path = dir.path().join("a.log");
        std::fs::write(&path, b"old").expect("old");
        let old = pool.get(&path, false).expect("open");
        let replacement = dir.path().join("b.log");
        std::fs::write(&replacement, b"new").expect("new");
        std::fs::rename(&replacement, &path).expect("rename over");
        pool.forget(&path);
        let new = pool.get(&path, false).expect("open");
        let mut buf = [0u8; 3];
        std::os::unix::fs::FileExt::read_exact_at(&*new, &mut buf, 0).expect("read");
        assert_eq!(&buf, b"new");
        std::os::unix::fs::FileExt::read_exact_at(&*old, &mut buf, 0).expect("read");
        assert_eq!(&buf, b"old", "a handle in use stays valid");
    }
}
