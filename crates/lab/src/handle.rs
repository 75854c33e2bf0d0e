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
        Self::with_changes(session, changes)
    }

    /// A handle whose change notifications go to `changes`: a channel that outlives the handle,
    /// so pages listening to a lab that is dropped from memory and opened again (a workshop's
    /// idle learner) keep listening to the same channel.
    pub fn with_changes(session: Session, changes: broadcast::Sender<u64>) -> Self {
        Self {
            session: Arc::new(Mutex::new(session)),
            changes,
        }
    }

    /// Whether another clone of this handle exists (a request in flight holds one). A holder
    /// that alone can create clones — a workshop's room, under its learner's lock — may drop the
    /// lab when this is `false`: nobody is using it, and nobody can start to.
    pub fn is_shared(&self) -> bool {
        Arc::strong_count(&self.session) > 1
    }

    /// The session, locked. A thread that panicked holding the lock left the session as the
    /// engine leaves it after any refusal — unchanged or whole — so the lock is taken anyway.
    pub fn lock(&self) -> MutexGuard<'_, Session> {
        let mut s = lock(&self.session);
        // A catch-up counts for the hold that made it only (`Session::catch_up_if_stale`).
        s.new_hold();
        s
    }

    /// The session, if no one holds it now (a lock whose holder panicked is taken, as
    /// [`LabHandle::lock`] takes it).
    pub fn try_lock(&self) -> Option<MutexGuard<'_, Session>> {
        let mut s = match self.session.try_lock() {
            Ok(s) => s,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        s.new_hold();
        Some(s)
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

    /// The session, locked, its live clock brought to wall time first: what every change locks
    /// with, so a record, a commit or a join happens at the instant it happens. A clock that
    /// cannot catch up (a broken session) is left behind; the change that follows says why.
    pub fn lock_for_change(&self) -> MutexGuard<'_, Session> {
        self.caught_up(self.lock())
    }

    /// A session locked otherwise ([`LabHandle::try_lock`]) made ready for a change, as
    /// [`LabHandle::lock_for_change`] makes it.
    pub fn caught_up<'a>(&self, mut s: MutexGuard<'a, Session>) -> MutexGuard<'a, Session> {
        if let Ok(true) = s.catch_up(crate::session::wall_clock_ms()) {
            // Saved with the change that follows (or the next one, if it is refused); the pages
            // learn the clock moved now.
            let _ = self.changes.send(s.version());
        }
        s
    }

    /// The live clock's ticker: when a timer of a live lab is due by wall time, the clock
    /// catches up (its `clock` line saved, every page told). `true` when it moved. Blocking:
    /// call it from a blocking thread.
    pub fn catch_up_due_timers(&self) -> Result<bool, LabError> {
        self.catch_up_locked(self.lock())
    }

    /// [`LabHandle::catch_up_due_timers`] unless someone holds the lab now (`Ok(false)`): a
    /// ticker serving many labs never waits behind one of them.
    pub fn catch_up_due_timers_if_free(&self) -> Result<bool, LabError> {
        match self.try_lock() {
            Some(s) => self.catch_up_locked(s),
            None => Ok(false),
        }
    }

    fn catch_up_locked(&self, mut s: MutexGuard<'_, Session>) -> Result<bool, LabError> {
        let wall = crate::session::wall_clock_ms();
        if !s.timer_due(wall) {
            return Ok(false);
        }
        s.catch_up(wall).map_err(|e| match e.cause {
            Some(cause) => *cause,
            None => LabError::InvalidArgument(e.error),
        })?;
        let pending = self.changed(&mut s)?;
        drop(s);
        if let Some(p) = pending {
            p.complete()?;
        }
        Ok(true)
    }

    /// The versions the lab reaches from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<u64> {
        self.changes.subscribe()
    }
}
