//! What a store tells its owner when the disk refuses a write.
//!
//! The engine's log interface cannot fail — an append is a fact in the model — so a log whose
//! write fails (a full disk, no file descriptors left) leaves the files as they were before the
//! append, notes the fault here, and answers as if nothing were wrong. The store's owner (the
//! lab's session) checks after every action: a fault means the action did not happen, and the
//! session goes back to the lab it last saved — logs truncated to what that save acknowledged,
//! as a restart would — and answers with a storage error (Kafka's `KAFKA_STORAGE_ERROR`, HTTP
//! 507 or 503). Reads go on; writes succeed again once there is room.
//!
//! An fsync that fails is different: Linux may already have dropped the pages it could not
//! write, so nothing the lab holds in memory can be trusted to match the disk. Those still stop
//! the process ([`crate::log`]), as a broker halts on a failed log directory.

use crate::lock;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What ran out, or broke (the engine's kind of storage error).
pub use offsetlab_engine::error::StorageKind as FaultKind;

/// A write the disk refused: the engine's storage error.
pub use offsetlab_engine::error::StorageError as Fault;

/// The first fault since the owner last looked — and the kept segments whose log file
/// retention (or DeleteRecords) deleted since then, for the owner to shape ([`crate::shape`]).
#[derive(Debug, Default)]
pub struct Health {
    fault: Mutex<Option<Fault>>,
    unlinked: Mutex<Vec<PathBuf>>,
}

impl Health {
    /// Notes that `what` failed on `path`; the first fault is kept until taken.
    pub fn report(&self, what: &str, path: &Path, e: &io::Error) {
        let mut f = lock(&self.fault);
        if f.is_none() {
            *f = Some(Fault {
                kind: FaultKind::of(e),
                message: format!("cannot {what} {}: {e}", path.display()),
            });
        }
    }

    /// The fault noted since the last call, if any.
    pub fn take(&self) -> Option<Fault> {
        lock(&self.fault).take()
    }

    /// Notes that the log file `kept` is a link to was deleted by retention or DeleteRecords.
    pub fn note_unlinked(&self, kept: PathBuf) {
        lock(&self.unlinked).push(kept);
    }

    /// The kept links noted since the last call.
    pub fn take_unlinked(&self) -> Vec<PathBuf> {
        std::mem::take(&mut *lock(&self.unlinked))
    }

    /// Whether a fault is waiting to be taken.
    pub fn failed(&self) -> bool {
        lock(&self.fault).is_some()
    }
}
