//! When appended bytes reach the disk: the flush policy and group commit.
//!
//! Every append is written to the file at once (one `write` per append call), so it is in the
//! operating system's page cache before the lab acknowledges it: a killed process loses nothing.
//! Only an `fsync` protects it from a power cut or a kernel crash, and an `fsync` costs a disk
//! round trip. The policy says when to pay it:
//!
//! - `never` — the page cache only, as Kafka runs by default (it relies on replication instead).
//! - `interval=DUR` — a background thread syncs dirty files every DUR.
//! - `always` — nothing is acknowledged before it is synced. Callers ask
//!   [`Durability::sync_upto`] for the writes they made; concurrent callers share one `fsync`:
//!   whoever finds no sync running starts one covering every write so far, the others wait for
//!   it (or for the next one, if their writes came in after it started). That is group commit.

use std::fs::File;
use std::io;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// `--flush never|interval=DUR|always`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlushPolicy {
    Never,
    Interval(Duration),
    Always,
}

impl std::str::FromStr for FlushPolicy {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "never" => Ok(Self::Never),
            "always" => Ok(Self::Always),
            other => {
                let d = other.strip_prefix("interval=").ok_or_else(|| {
                    format!("unknown flush policy '{other}' (expected never, interval=DUR or always)")
                })?;
                let ms: u64 = if let Some(ms) = d.strip_suffix("ms") {
                    ms.parse().map_err(|_| format!("bad duration '{d}'"))?
                } else if let Some(s) = d.strip_suffix('s') {
                    s.parse::<u64>().map_err(|_| format!("bad duration '{d}'"))? * 1000
                } else {
                    return Err(format!("bad duration '{d}' (use e.g. 200ms or 1s)"));
                };
                if ms == 0 {
                    return Err("the flush interval must be longer than 0ms".into());
                }
                Ok(Self::Interval(Duration::from_millis(ms)))
            }
        }
    }
}

impl std::fmt::Display for FlushPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Never => f.write_str("never"),
            Self::Always => f.write_str("always"),
            Self::Interval(d) => write!(f, "interval={}ms", d.as_millis()),
        }
    }
}

#[derive(Default)]
struct State {
    /// Files written since their last sync.
    dirty: Vec<Arc<File>>,
    /// Writes so far (a sequence number per write).
    written: u64,
    /// Every write up to this one is on disk.
    synced: u64,
    syncing: bool,
    /// Syncs performed (for the figures).
    syncs: u64,
    /// A sync failed: Linux may have dropped the dirty pages and a retry can succeed without
    /// writing them, so nothing is acknowledged as durable after that.
    failed: Option<String>,
}

/// The store's shared durability state: which files are dirty and how far syncs have come.
pub struct Durability {
    policy: FlushPolicy,
    state: Mutex<State>,
    done: Condvar,
}

impl Durability {
    /// A new state; with `interval`, also the background thread that syncs on that period (it
    /// stops once the store is gone).
    pub fn new(policy: FlushPolicy) -> Arc<Self> {
        let d = Arc::new(Self {
            policy,
            state: Mutex::new(State::default()),
            done: Condvar::new(),
        });
        if let FlushPolicy::Interval(every) = policy {
            let weak = Arc::downgrade(&d);
            std::thread::spawn(move || loop {
                std::thread::sleep(every);
                let Some(d) = weak.upgrade() else {
                    return;
                };
                let _ = d.sync_all();
            });
        }
        d
    }

    pub fn policy(&self) -> FlushPolicy {
        self.policy
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A panic while holding this lock cannot leave the counters half-updated: recover.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records a write to `file`; returns its sequence number.
    pub fn note_write(&self, file: &Arc<File>) -> u64 {
        if self.policy == FlushPolicy::Never {
            return 0;
        }
        let mut s = self.lock();
        s.written += 1;
        if !s.dirty.iter().any(|f| Arc::ptr_eq(f, file)) {
            s.dirty.push(Arc::clone(file));
        }
        s.written
    }

    /// The sequence number of the latest write.
    pub fn written(&self) -> u64 {
        self.lock().written
    }

    /// The fsync failure that stopped this log directory, if one did (every later sync fails).
    pub fn failure(&self) -> Option<String> {
        self.lock().failed.clone()
    }

    /// How many syncs have run.
    pub fn syncs(&self) -> u64 {
        self.lock().syncs
    }

    /// Syncs every write made so far.
    pub fn sync_all(&self) -> io::Result<()> {
        let target = self.written();
        self.sync_upto(target)
    }

    /// Returns once every write up to `target` is on disk, starting a sync or waiting for one.
    pub fn sync_upto(&self, target: u64) -> io::Result<()> {
        let mut s = self.lock();
        loop {
            if let Some(e) = &s.failed {
                return Err(io::Error::other(format!("an earlier fsync failed: {e}")));
            }
            if s.synced >= target {
                return Ok(());
            }
            if s.syncing {
                s = self.done.wait(s).unwrap_or_else(|p| p.into_inner());
                continue;
            }
            s.syncing = true;
            let upto = s.written;
            let files = std::mem::take(&mut s.dirty);
            drop(s);
            let result = files.iter().try_for_each(|f| f.sync_data());
            s = self.lock();
            s.syncing = false;
            match result {
                Ok(()) => {
                    s.synced = s.synced.max(upto);
                    s.syncs += 1;
                }
                Err(e) => {
                    s.failed = Some(e.to_string());
                    self.done.notify_all();
                    return Err(e);
                }
            }
            self.done.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn policies_parse() {
        assert_eq!("never".parse(), Ok(FlushPolicy::Never));
        assert_eq!("always".parse(), Ok(FlushPolicy::Always));
        assert_eq!(
            "interval=200ms".parse(),
            Ok(FlushPolicy::Interval(Duration::from_millis(200)))
        );
        assert_eq!(
            "interval=2s".parse(),
            Ok(FlushPolicy::Interval(Duration::from_secs(2)))
        );
        assert!("interval=0ms".parse::<FlushPolicy>().is_err());
        assert!("sometimes".parse::<FlushPolicy>().is_err());
    }

    #[test]
    fn concurrent_callers_share_syncs() {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = Durability::new(FlushPolicy::Always);
        let file = Arc::new(std::fs::File::create(dir.path().join("f")).expect("create"));
        let threads: Vec<_> = (0..8)
            .map(|_| {
                let (d, file) = (Arc::clone(&d), Arc::clone(&file));
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        (&*file).write_all(b"0123456789").expect("write");
                        let seq = d.note_write(&file);
                        d.sync_upto(seq).expect("sync");
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("join");
        }
        let s = d.lock();
        assert_eq!((s.written, s.synced), (400, 400));
        assert!(s.syncs <= 400 && s.syncs > 0, "{} syncs", s.syncs);
    }
}
