//! The lab both front ends share: the [`Session`] behind the write path's lock, the
//! [`ReadView`] readers read instead, the page's state built once per version, and the channel
//! that tells every reader a new version exists.
//!
//! # The concurrency seams
//!
//! - **The write path**: one mutex around the session. Every change — a Produce, a commit, a
//!   join, a page's lines, the live clock's timers — locks it, applies, saves
//!   ([`LabHandle::changed`]) and lets it go; under `--flush always` the save is completed
//!   outside it, so concurrent changes share one fsync. Changes are serialised, as the engine
//!   (pure, on one logical clock) and its history require.
//! - **The read path**: a [`ReadView`] published whenever the write path is let go after a
//!   change ([`SessionGuard`]'s drop: a new version, or a lab rebuilt), then announced on the
//!   change channel — published first, so a parked fetch woken by the announcement reads what
//!   woke it. Fetch, Metadata, ListOffsets and OffsetFetch read it ([`LabHandle::view`]) and a
//!   partition's bytes through the log's own mutex: they never wait for the write path, unless
//!   a log they read lost records since the view ([`LabHandle::read_locked`]).
//! - **The page's state**: built from the session (it is the whole lab), so under the write
//!   path's lock — but once per version, by one builder, and kept: every page asking for that
//!   version or an older one is sent the same bytes without touching the lock
//!   ([`LabHandle::state_json`]). A page that follows the change channel is told a version once
//!   its state is built, so it never waits either.

use crate::read_view::ReadView;
use crate::session::{PendingSave, Session};
use offsetlab_engine::LabError;
use offsetlab_storage::lock;
use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex, MutexGuard, RwLock};
use tokio::sync::broadcast;

#[derive(Clone)]
pub struct LabHandle {
    session: Arc<Mutex<Session>>,
    published: Arc<Published>,
    changes: broadcast::Sender<u64>,
}

/// What readers read instead of the session.
struct Published {
    view: RwLock<Arc<ReadView>>,
    /// The page's state at the newest version built so far, with the session's stamp then (a
    /// lab rebuilt at the same version is another lab: its files are elsewhere).
    state: Mutex<Option<((u64, u64), BuiltState)>>,
    /// Held while the page's state is being built: one build at a time, which the other askers
    /// wait for rather than repeat.
    building: Mutex<()>,
}

/// The page's state (`GET /api/state`, [`Session::state`]) at one version, as JSON.
#[derive(Clone)]
pub struct BuiltState {
    pub version: u64,
    pub json: bytes::Bytes,
}

/// The session, locked: the write path. Derefs to the [`Session`]; when it is let go after a
/// change, the new [`ReadView`] is published and the version announced, before any other
/// holder can take the session.
pub struct SessionGuard<'a> {
    handle: &'a LabHandle,
    session: MutexGuard<'a, Session>,
}

impl Deref for SessionGuard<'_> {
    type Target = Session;

    fn deref(&self) -> &Session {
        &self.session
    }
}

impl DerefMut for SessionGuard<'_> {
    fn deref_mut(&mut self) -> &mut Session {
        &mut self.session
    }
}

impl Drop for SessionGuard<'_> {
    fn drop(&mut self) {
        self.handle.publish_if_changed(&self.session);
    }
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
        let view = ReadView::of(&session, None);
        Self {
            session: Arc::new(Mutex::new(session)),
            published: Arc::new(Published {
                view: RwLock::new(Arc::new(view)),
                state: Mutex::new(None),
                building: Mutex::new(()),
            }),
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
    pub fn lock(&self) -> SessionGuard<'_> {
        let mut s = lock(&self.session);
        // A catch-up counts for the hold that made it only (`Session::catch_up_if_stale`).
        s.new_hold();
        SessionGuard {
            handle: self,
            session: s,
        }
    }

    /// The session, if no one holds it now (a lock whose holder panicked is taken, as
    /// [`LabHandle::lock`] takes it).
    pub fn try_lock(&self) -> Option<SessionGuard<'_>> {
        let mut s = match self.session.try_lock() {
            Ok(s) => s,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        s.new_hold();
        Some(SessionGuard {
            handle: self,
            session: s,
        })
    }

    /// The lab as readers see it now: the view published when the write path was last let go
    /// after a change. Never waits for the write path.
    pub fn view(&self) -> Arc<ReadView> {
        Arc::clone(
            &self
                .published
                .view
                .read()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        )
    }

    /// Runs `f` on a view built now under the write path's lock, held while `f` runs: how a read
    /// goes on when a log it reads lost records since the published view (`f` then never finds
    /// one stale). Blocking: it waits for the write path.
    pub fn read_locked<T>(&self, f: impl FnOnce(&ReadView) -> T) -> T {
        let s = self.lock();
        let view = Arc::new(ReadView::of(&s, Some(&self.view())));
        self.install_view(Arc::clone(&view));
        f(&view)
    }

    fn install_view(&self, view: Arc<ReadView>) {
        *self
            .published
            .view
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = view;
    }

    /// Publishes the session's view and announces its version, if it changed since the view
    /// now published (a new version, or a lab rebuilt at the same one).
    fn publish_if_changed(&self, session: &Session) {
        let before = self.view();
        if before.stamp() == session.stamp() {
            return;
        }
        self.install_view(Arc::new(ReadView::of(session, Some(&before))));
        let _ = self.changes.send(session.version());
    }

    /// After a change: save the lab for the next start (or prepare the save that must follow
    /// the fsync, under `--flush always`). An error means the change is not durable and must not
    /// be acknowledged; the session already went back to its last save. Either way, what the
    /// session holds is published and announced when the caller lets it go.
    pub fn changed(&self, session: &mut Session) -> Result<Option<PendingSave>, LabError> {
        session.save()
    }

    /// The session, locked, its live clock brought to wall time first: what every change locks
    /// with, so a record, a commit or a join happens at the instant it happens. A clock that
    /// cannot catch up (a broken session) is left behind; the change that follows says why.
    pub fn lock_for_change(&self) -> SessionGuard<'_> {
        self.caught_up(self.lock())
    }

    /// A session locked otherwise ([`LabHandle::try_lock`]) made ready for a change, as
    /// [`LabHandle::lock_for_change`] makes it. The clock's line is saved with the change that
    /// follows (or the next one, if it is refused); the pages learn the clock moved when the
    /// session is let go.
    pub fn caught_up<'a>(&self, mut s: SessionGuard<'a>) -> SessionGuard<'a> {
        let _ = s.catch_up(crate::session::wall_clock_ms());
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

    fn catch_up_locked(&self, mut s: SessionGuard<'_>) -> Result<bool, LabError> {
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

    /// The versions the lab reaches from now on, each announced once its view is published.
    pub fn subscribe(&self) -> broadcast::Receiver<u64> {
        self.changes.subscribe()
    }

    /// The page's state built so far, if it is at `at_least` or newer (what was published when
    /// asked, when `None`). Never waits.
    pub fn built_state(&self, at_least: Option<u64>) -> Option<BuiltState> {
        let published = self.view();
        let kept = lock(&self.published.state);
        let (stamp, built) = kept.as_ref()?;
        let new_enough = match at_least {
            // A version the asker was told, or an older one — never past the version published
            // (a page's version from before a restart may be any number).
            Some(v) => built.version >= v.min(published.version()),
            None => *stamp >= published.stamp(),
        };
        new_enough.then(|| built.clone())
    }

    /// The page's state at `at_least` or newer — at the version published when asked, when
    /// `None`: what a client that just made a change must see. `at_least` is a version the
    /// asker was told (a page following the change channel, told only of versions already
    /// built): then it is answered at once. Otherwise it is built, under the write path's lock,
    /// by one asker while the others wait for it, and kept for the next. Blocking.
    pub fn state_json(&self, at_least: Option<u64>) -> Result<BuiltState, LabError> {
        if let Some(built) = self.built_state(at_least) {
            return Ok(built);
        }
        let _building = lock(&self.published.building);
        if let Some(built) = self.built_state(at_least) {
            return Ok(built);
        }
        let (stamp, state) = {
            let s = self.lock();
            (s.stamp(), s.state()?)
        };
        // Serialised once the lock is let go.
        let json = serde_json::to_vec(&state).map_err(|e| LabError::InvalidArgument(e.to_string()))?;
        let built = BuiltState {
            version: state.version,
            json: bytes::Bytes::from(json),
        };
        let mut kept = lock(&self.published.state);
        if kept.as_ref().is_none_or(|(k, _)| *k <= stamp) {
            *kept = Some((stamp, built.clone()));
        }
        Ok(built)
    }
}
