//! The lab both front ends share: one [`Session`] behind a lock, and the channel that tells
//! every open page a new version exists.
//!
//! The web page and the Kafka listener change the lab the same way: lock, apply, save
//! ([`LabHandle::changed`]), and — under `--flush always` — complete the save outside the lock,
//! so concurrent requests share one fsync.

use crate::session::{PendingSave, Session};
use offsetlab_engine::LabError;
use offsetlab_storage::lock;
use std::sync::{Arc, Mutex, MutexGuard};
use tokio::sync::broadcast;

#[derive(Clone)]
pub struct LabHandle {
    session: Arc<Mutex<Session>>,
    changes: broadcast::Sender<u64>,
}

impl LabHandle {
    pub fn new(session: Session) -> Self {
        let (changes, _) = broadcast::channel(64);
        Self {
            session: Arc::new(Mutex::new(session)),
            changes,
        }
    }

    /// The session, locked. A thread that panicked holding the lock left the session as the
    /// engine leaves it after any refusal — unchanged or whole — so the lock is taken anyway.
    pub fn lock(&self) -> MutexGuard<'_, Session> {
        lock(&self.session)
    }

    /// The session, if no one holds it now (a lock whose holder panicked is taken, as
    /// [`LabHandle::lock`] takes it).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, Session>> {
        match self.session.try_lock() {
            Ok(s) => Some(s),
            Err(std::sync::TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => None,
        }
    }

    /// The session itself, for work moved to a blocking thread.
    pub fn session(&self) -> Arc<Mutex<Session>> {
        Arc::clone(&self.session)
    }

    /// After a change: save the lab for the next start (or prepare the save that must follow
    /// the fsync, under `--flush always`) and tell every page. An error means the change is not
    /// durable and must not be acknowledged; the session already went back to its last save.
    pub fn changed(&self, session: &mut Session) -> Result<Option<PendingSave>, LabError> {
        let pending = session.save();
        let _ = self.changes.send(session.version());
        pending
    }

    /// The versions the lab reaches from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<u64> {
        self.changes.subscribe()
    }
}
