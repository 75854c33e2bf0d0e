//! The room: every learner of a workshop, their labs opened on demand and dropped from memory
//! when idle, and what the instructor pushed to everyone.
//!
//! Layout on disk, under the data directory:
//!
//! ```text
//! workshop/
//!   push.json                the instructor's last push (a lesson or a scenario)
//!   learners/<id>/           one per learner, named by their secret id
//!     learner.json           name, number, progress, quiz answers, figures
//!     lab/                   their lab, exactly as `serve` keeps one (generations, logs, sinks)
//!   removed/<id>/            a learner the instructor removed, moved here whole, never read
//!                            again (moved back into learners/ and the server restarted, they
//!                            are back; delete it once the workshop is over)
//! ```
//!
//! A learner's lab is one [`LabHandle`] with its own lock: no request of one learner waits for
//! another's. Evicting an idle lab is [`offsetlab_lab::Session::close`] (logs synced, the
//! snapshot written, marked clean) and dropping it; the next request opens it again through the
//! restore path a restart takes. A lab is evicted only when no request holds it — checked under
//! the learner's lock, the only place a request can get it from.

use super::learner::{read_activity, write_activity, Activity, Learner, Resident};
use super::rate::RateLimit;
use super::secret::Secret;
use super::unreadable::Unreadable;
use offsetlab_lab::caps::Caps;
use offsetlab_lab::session::ClockMode;
use offsetlab_lab::LabHandle;
use offsetlab_storage::FlushPolicy;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::broadcast;

/// How a workshop runs (`serve --workshop` and its flags).
#[derive(Debug, Clone)]
pub struct WorkshopConfig {
    /// The data directory's `workshop/` directory.
    pub dir: PathBuf,
    pub flush: FlushPolicy,
    /// How new learner labs' clocks run (`--clock`); `None`: as a new lab of `serve` does.
    pub clock: Option<ClockMode>,
    pub max_learners: usize,
    pub caps: Caps,
    /// The largest request body a learner may send.
    pub max_request_bytes: usize,
    /// A lab unused this long is written to disk and dropped from memory.
    pub evict_after: Duration,
    /// At most this many labs in memory at once; past it the least recently used idle one goes.
    pub max_resident: usize,
    pub rate: RateLimit,
    /// How fast learners may join, the whole room together.
    pub join_rate: RateLimit,
}

impl WorkshopConfig {
    pub fn new(dir: PathBuf) -> Self {
        Self {
            dir,
            flush: FlushPolicy::Never,
            clock: None,
            max_learners: 100,
            caps: Caps::default(),
            max_request_bytes: 256 << 10,
            evict_after: Duration::from_secs(120),
            max_resident: 256,
            rate: RateLimit::default(),
            join_rate: JOIN_RATE,
        }
    }
}

/// What the instructor pushed to every learner: a lesson to start, or a scenario to load.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Push {
    /// 1, 2, …: a page applies each push once (it tells the server the last one it applied).
    pub seq: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lesson: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<String>,
    pub at_ms: i64,
}

/// Why a learner could not join, or their lab could not be opened.
#[derive(Debug, thiserror::Error)]
pub enum RoomError {
    #[error(
        "the room is full: it has {0} learners, the most this workshop takes (the server's --max-learners)"
    )]
    Full(usize),
    #[error("{0}")]
    BadName(String),
    #[error("your lab could not be opened, and nothing was replaced: {0}")]
    Open(String),
    #[error("{0}")]
    Io(String),
    #[error("the server holds {0} labs in memory, the most it keeps (--max-resident), and every one is in use: try again in a moment")]
    Busy(usize),
    #[error("the workshop is stopping")]
    Closing,
    #[error("too many learners are joining at once: try again in {0} ms")]
    JoinsTooFast(u128),
    #[error("there is no learner {0}")]
    NoSuchLearner(u32),
    #[error("the instructor removed you from the workshop: join again")]
    Removed,
}

impl RoomError {
    /// The HTTP status that answers it.
    pub fn status(&self) -> u16 {
        match self {
            RoomError::Full(_) | RoomError::Busy(_) | RoomError::Closing => 503,
            RoomError::JoinsTooFast(_) => 429,
            RoomError::BadName(_) => 400,
            RoomError::NoSuchLearner(_) => 404,
            RoomError::Removed => 401,
            RoomError::Open(_) | RoomError::Io(_) => 500,
        }
    }
}

#[derive(Default)]
struct Learners {
    by_id: HashMap<Secret, Arc<Learner>>,
    by_number: BTreeMap<u32, Arc<Learner>>,
    /// The highest number any learner had, removed ones too: numbers are never given twice, so
    /// the instructor's "learner 7" is one person for the whole workshop.
    highest: u32,
    /// Learners whose file did not read when the room opened: set aside, never dropped.
    unreadable: Vec<Unreadable>,
}

pub struct Room {
    config: WorkshopConfig,
    learners: Mutex<Learners>,
    /// Joins are one at a time: the room-full check and the new learner's number hold.
    joining: Mutex<()>,
    /// Joins of the whole room: a script creating learners as fast as it can fills the room
    /// no faster than a class arriving would ([`JOIN_RATE`]).
    joins: Mutex<super::rate::Bucket>,
    /// Labs are opened one at a time, so the count of labs in memory is checked and grown as
    /// one step (`--max-resident` holds when a whole class reconnects at once).
    opening: Mutex<()>,
    push: Mutex<Option<Push>>,
    /// Every push, to every open page.
    pushes: broadcast::Sender<u64>,
    /// Set once the server stops: no lab is opened again.
    closing: AtomicBool,
}

const LEARNERS_DIR: &str = "learners";
/// Where a removed learner's directory is moved.
const REMOVED_DIR: &str = "removed";

/// How fast learners may join by default, the whole room together: a class of a hundred at
/// once (the burst), then twenty a second.
pub const JOIN_RATE: RateLimit = RateLimit {
    per_second: 20.0,
    burst: 100.0,
};
const PUSH_FILE: &str = "push.json";

impl Room {
    /// The room in `config.dir`, with every learner it had (their labs stay on disk until they
    /// are next used). A learner whose file does not read — corrupt, missing beside a lab, or
    /// giving a number another learner has — is set aside ([`Unreadable`]): named on the
    /// console and to the instructor, their directory untouched, while the room opens for the
    /// others. Only what stops every learner (the room's own directory, its push) stops it.
    pub fn open(config: WorkshopConfig) -> Result<Self, RoomError> {
        let io = |e: std::io::Error, p: &std::path::Path| RoomError::Io(format!("{}: {e}", p.display()));
        let learners_dir = config.dir.join(LEARNERS_DIR);
        std::fs::create_dir_all(&learners_dir).map_err(|e| io(e, &learners_dir))?;
        let mut learners = Learners::default();
        for entry in std::fs::read_dir(&learners_dir).map_err(|e| io(e, &learners_dir))? {
            let entry = entry.map_err(|e| io(e, &learners_dir))?;
            let name = entry.file_name();
            let Some(id) = name.to_str().and_then(Secret::parse) else {
                // Not a learner's directory (a `.tmp` file of an interrupted write, say).
                continue;
            };
            let dir = entry.path();
            if !dir.join(super::learner::LEARNER_FILE).exists() {
                // A join interrupted before its learner existed (the lab is made first, the
                // learner's file last): no browser has this id, unless the file was deleted.
                // Either way the directory is kept and named, never dropped in silence.
                if has_a_lab(&dir) {
                    let problem = format!(
                        "{}: missing (a join cut short, or the file was deleted)",
                        dir.join(super::learner::LEARNER_FILE).display()
                    );
                    learners.unreadable.push(Unreadable::new(id, dir, problem));
                }
                continue;
            }
            let activity = match read_activity(&dir) {
                Ok(a) => a,
                Err(problem) => {
                    learners.unreadable.push(Unreadable::new(id, dir, problem));
                    continue;
                }
            };
            if let Some(other) = learners.by_number.get(&activity.number) {
                let problem = format!(
                    "{}: number {} is learner {}'s too",
                    dir.join(super::learner::LEARNER_FILE).display(),
                    activity.number,
                    other.name()
                );
                learners.highest = learners.highest.max(activity.number);
                learners.unreadable.push(Unreadable::new(id, dir, problem));
                continue;
            }
            let learner = Arc::new(Learner::new(id.clone(), dir, activity, config.rate));
            learners.highest = learners.highest.max(learner.number);
            learners.by_number.insert(learner.number, Arc::clone(&learner));
            learners.by_id.insert(id, learner);
        }
        learners.highest = learners
            .highest
            .max(highest_removed(&config.dir.join(REMOVED_DIR)));
        let push_path = config.dir.join(PUSH_FILE);
        let push = match std::fs::read(&push_path) {
            Ok(bytes) => Some(
                serde_json::from_slice(&bytes)
                    .map_err(|e| RoomError::Io(format!("{}: {e}", push_path.display())))?,
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(e) => return Err(io(e, &push_path)),
        };
        let (pushes, _) = broadcast::channel(16);
        let join_rate = config.join_rate;
        Ok(Self {
            config,
            learners: Mutex::new(learners),
            joining: Mutex::new(()),
            joins: Mutex::new(super::rate::Bucket::full(join_rate, Instant::now())),
            opening: Mutex::new(()),
            push: Mutex::new(push),
            pushes,
            closing: AtomicBool::new(false),
        })
    }

    pub fn config(&self) -> &WorkshopConfig {
        &self.config
    }

    /// The learners set aside when the room opened ([`Unreadable`]).
    pub fn unreadable(&self) -> Vec<Unreadable> {
        offsetlab_lab::lock(&self.learners).unreadable.clone()
    }

    /// Whether `id` is a learner set aside when the room opened.
    pub fn is_unreadable(&self, id: &str) -> bool {
        let Some(id) = Secret::parse(id) else {
            return false;
        };
        offsetlab_lab::lock(&self.learners)
            .unreadable
            .iter()
            .any(|u| u.id == id)
    }

    /// The learner whose cookie this is, if it is one.
    pub fn find(&self, id: &str) -> Option<Arc<Learner>> {
        let id = Secret::parse(id)?;
        offsetlab_lab::lock(&self.learners).by_id.get(&id).cloned()
    }

    pub fn by_number(&self, number: u32) -> Option<Arc<Learner>> {
        offsetlab_lab::lock(&self.learners)
            .by_number
            .get(&number)
            .cloned()
    }

    /// Every learner, by number.
    pub fn learners(&self) -> Vec<Arc<Learner>> {
        offsetlab_lab::lock(&self.learners)
            .by_number
            .values()
            .cloned()
            .collect()
    }

    pub fn len(&self) -> usize {
        offsetlab_lab::lock(&self.learners).by_id.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A new learner named `name`, their lab created (the seed lab). Blocking.
    pub fn join(&self, name: &str) -> Result<Arc<Learner>, RoomError> {
        let name = super::learner::checked_name(name).map_err(RoomError::BadName)?;
        offsetlab_lab::lock(&self.joins)
            .take(self.config.join_rate, Instant::now())
            .map_err(|wait| RoomError::JoinsTooFast(wait.as_millis().max(1)))?;
        let _one_at_a_time = offsetlab_lab::lock(&self.joining);
        let (count, number) = {
            let l = offsetlab_lab::lock(&self.learners);
            (l.by_id.len(), l.highest + 1)
        };
        if count >= self.config.max_learners {
            return Err(RoomError::Full(count));
        }
        let id = Secret::random().map_err(|e| RoomError::Io(format!("no random source: {e}")))?;
        let dir = self.config.dir.join(LEARNERS_DIR).join(id.as_str());
        let activity = Activity {
            number,
            name,
            joined_ms: offsetlab_lab::session::wall_clock_ms(),
            ..Activity::default()
        };
        let learner = Arc::new(Learner::new(
            id.clone(),
            dir.clone(),
            activity.clone(),
            self.config.rate,
        ));
        // The lab first, the learner's file last: a join cut short leaves no learner (its
        // directory has no `learner.json`, and no browser has its id).
        let lab = {
            let _one_at_a_time = offsetlab_lab::lock(&self.opening);
            self.make_room_for_one(None)?;
            let lab = self.open_lab(&learner, self.config.clock)?;
            learner.in_memory.store(true, Ordering::SeqCst);
            lab
        };
        // The instructor sees a new learner's figures (the seed's) before they do anything.
        let activity = match lab.lock().state() {
            Ok(state) => Activity {
                figures: super::learner::GroupFigures::of(&state),
                ..activity
            },
            Err(_) => activity,
        };
        if let Err(e) = write_activity(&dir, &activity) {
            if let Err(close) = lab.lock().close() {
                tracing::warn!("the lab of a join that failed did not close cleanly: {close}");
            }
            return Err(RoomError::Io(format!(
                "{}: {e}",
                dir.join(super::learner::LEARNER_FILE).display()
            )));
        }
        *offsetlab_lab::lock(&learner.activity) = activity;
        offsetlab_lab::lock(&learner.resident).lab = Some(lab);
        let mut l = offsetlab_lab::lock(&self.learners);
        if self.is_closing() {
            // The room closed while this learner joined: their lab is closed here, not left open.
            drop(l);
            if let Some(lab) = offsetlab_lab::lock(&learner.resident).lab.take() {
                let _ = lab.lock().close();
            }
            return Err(RoomError::Closing);
        }
        l.by_number.insert(number, Arc::clone(&learner));
        l.by_id.insert(id, Arc::clone(&learner));
        l.highest = l.highest.max(number);
        Ok(learner)
    }

    /// Removes learner `number`: out of the room at once (their cookie opens nothing: `401`,
    /// and their page joins again), their lab closed, their directory moved whole into
    /// `removed/` — never deleted: a learner removed by mistake is moved back by hand. A move
    /// that fails puts them back as they were. Blocking.
    pub fn remove(&self, number: u32) -> Result<(), RoomError> {
        let _one_at_a_time = offsetlab_lab::lock(&self.joining);
        let learner = {
            let mut l = offsetlab_lab::lock(&self.learners);
            let learner = l
                .by_number
                .remove(&number)
                .ok_or(RoomError::NoSuchLearner(number))?;
            l.by_id.remove(&learner.id);
            learner
        };
        // Under their lock: a request that got them before they left the room opens their lab
        // no more (`Room::lab` checks the flag), and their file is written no more.
        let lab = {
            let mut r = offsetlab_lab::lock(&learner.resident);
            let _a = offsetlab_lab::lock(&learner.activity);
            learner.removed.store(true, Ordering::SeqCst);
            learner.in_memory.store(false, Ordering::SeqCst);
            r.lab.take()
        };
        let version = lab.map(|lab| {
            // Closed: a request still holding it is refused from now on, and writes nothing.
            let mut s = lab.lock();
            if let Err(e) = s.close() {
                tracing::warn!(
                    learner = number,
                    "a removed learner's lab did not close cleanly: {e}"
                );
            }
            s.version()
        });
        let removed = self.config.dir.join(REMOVED_DIR);
        let moved = std::fs::create_dir_all(&removed)
            .and_then(|()| std::fs::rename(&learner.dir, removed.join(learner.id.as_str())));
        if let Err(e) = moved {
            // Back in the room, their lab on disk as the close left it (opened on their next
            // request).
            learner.removed.store(false, Ordering::SeqCst);
            let mut l = offsetlab_lab::lock(&self.learners);
            l.by_number.insert(number, Arc::clone(&learner));
            l.by_id.insert(learner.id.clone(), Arc::clone(&learner));
            return Err(RoomError::Io(format!(
                "learner {number} was not removed: their directory could not be moved into {}: {e}",
                removed.display()
            )));
        }
        // Their open pages look again, are refused, and show the join form.
        let seen = learner.seen_version.load(Ordering::SeqCst);
        let _ = learner.changes.send(version.unwrap_or(seen).max(seen) + 1);
        Ok(())
    }

    /// Removes every learner who never did anything (`Activity::untouched`), has no page open
    /// and made no request for `idle_for`: the room a script flooded, cleared. Returns their
    /// numbers; one that could not be moved stays, and its error is returned with the rest.
    pub fn remove_untouched(&self, idle_for: Duration) -> (Vec<u32>, Vec<RoomError>) {
        let now = offsetlab_lab::session::wall_clock_ms();
        let idle_ms = i64::try_from(idle_for.as_millis()).unwrap_or(i64::MAX);
        let (mut removed, mut errors) = (Vec::new(), Vec::new());
        for learner in self.learners() {
            if !learner.activity().untouched()
                || learner.pages() > 0
                || now.saturating_sub(learner.seen_ms()) < idle_ms
            {
                continue;
            }
            match self.remove(learner.number) {
                Ok(()) => removed.push(learner.number),
                // Removed meanwhile by another request of the instructor's.
                Err(RoomError::NoSuchLearner(_)) => {}
                Err(e) => errors.push(e),
            }
        }
        (removed, errors)
    }

    /// A learner's lab opened from their directory. `clock` is how a *new* lab's clock runs
    /// (a join); a lab opened again keeps the mode it had (`None`).
    fn open_lab(&self, learner: &Learner, clock: Option<ClockMode>) -> Result<LabHandle, RoomError> {
        if self.is_closing() {
            return Err(RoomError::Closing);
        }
        let opened = offsetlab_lab::open(&learner.dir, self.config.flush, false, clock).map_err(|e| {
            // An error names files; the learner's id in their path is no one else's to read.
            RoomError::Open(
                e.to_string()
                    .replace(learner.id.as_str(), &format!("<learner {}>", learner.number)),
            )
        })?;
        let mut session = opened.session;
        for r in session.recovered() {
            // The lab's own warning names the partition; this one names whose lab it is.
            tracing::warn!(
                learner = learner.number,
                loss = %r,
                "learner {}'s lab lost acknowledged records in a crash: shown to the instructor",
                learner.number
            );
        }
        offsetlab_lab::lock(&learner.recovered).extend(session.recovered().iter().cloned());
        session.set_caps(Some(self.config.caps));
        session.advance_version_past(learner.seen_version.load(Ordering::SeqCst));
        Ok(LabHandle::with_changes(session, learner.changes.clone()))
    }

    /// The learner's lab, opened from disk if it was evicted. Blocking (a restore reads files).
    pub fn lab(&self, learner: &Learner) -> Result<LabHandle, RoomError> {
        let mut r = offsetlab_lab::lock(&learner.resident);
        if learner.is_removed() {
            return Err(RoomError::Removed);
        }
        r.last_used = Instant::now();
        if let Some(lab) = &r.lab {
            return Ok(lab.clone());
        }
        let _one_at_a_time = offsetlab_lab::lock(&self.opening);
        self.make_room_for_one(Some(learner.number))?;
        let lab = self.open_lab(learner, None)?;
        r.lab = Some(lab.clone());
        learner.in_memory.store(true, Ordering::SeqCst);
        Ok(lab)
    }

    /// Below `max_resident` labs in memory, or made so by evicting the least recently used lab
    /// nobody is using (never `except`'s, whose lock the caller holds). Other learners' locks
    /// are only tried, never waited for: two restores never wait for each other. Blocking.
    fn make_room_for_one(&self, except: Option<u32>) -> Result<(), RoomError> {
        let learners = self.learners();
        let resident: Vec<&Arc<Learner>> = learners.iter().filter(|l| l.is_resident()).collect();
        if resident.len() < self.config.max_resident {
            return Ok(());
        }
        let mut candidates: Vec<(Instant, &Arc<Learner>)> = resident
            .iter()
            .filter(|l| Some(l.number) != except)
            .filter_map(|l| l.resident.try_lock().ok().map(|r| (r.last_used, *l)))
            .collect();
        candidates.sort_by_key(|(used, _)| *used);
        let mut freed = 0;
        for (_, learner) in candidates {
            let Ok(mut r) = learner.resident.try_lock() else {
                continue;
            };
            if self.evict_locked(learner, &mut r) {
                freed += 1;
                if resident.len() - freed < self.config.max_resident {
                    return Ok(());
                }
            }
        }
        Err(RoomError::Busy(resident.len()))
    }

    /// Closes and drops `learner`'s lab if nobody holds it; `true` when it went. Closed under
    /// the learner's lock: a request that comes meanwhile waits, then opens the lab from what
    /// the close wrote — never from files being written.
    fn evict_locked(&self, learner: &Learner, r: &mut Resident) -> bool {
        if r.lab.as_ref().is_none_or(LabHandle::is_shared) {
            return false;
        }
        let Some(lab) = r.lab.take() else {
            return false;
        };
        learner.in_memory.store(false, Ordering::SeqCst);
        let mut s = lab.lock();
        learner.seen_version.fetch_max(s.version(), Ordering::SeqCst);
        if let Err(e) = s.close() {
            // The next open recovers from the files, as after a crash.
            tracing::warn!(
                learner = learner.number,
                "the learner's lab did not close cleanly: {e}"
            );
        }
        true
    }

    /// Takes one request's token from the learner's bucket; `Err` with how long to wait.
    pub fn admit_request(&self, learner: &Learner) -> Result<(), Duration> {
        offsetlab_lab::lock(&learner.bucket).take(self.config.rate, Instant::now())
    }

    /// Labs idle longer than `evict_after` written to disk and dropped from memory, then — past
    /// `max_resident` — the least recently used idle ones. Returns how many went. Blocking.
    pub fn evict_idle(&self) -> usize {
        self.evict(self.config.evict_after, self.config.max_resident)
    }

    /// Every lab nobody is using written to disk and dropped (a bench's idle room; shutdown).
    pub fn evict_all(&self) -> usize {
        self.evict(Duration::ZERO, 0)
    }

    fn evict(&self, idle_for: Duration, keep: usize) -> usize {
        let now = Instant::now();
        let learners = self.learners();
        let mut resident: Vec<(Instant, &Arc<Learner>)> = learners
            .iter()
            .filter(|l| l.is_resident())
            .filter_map(|l| l.resident.try_lock().ok().map(|r| (r.last_used, l)))
            .collect();
        resident.sort_by_key(|(used, _)| *used);
        let over = resident.len().saturating_sub(keep);
        let mut gone = 0;
        for (i, (_, learner)) in resident.iter().enumerate() {
            // A lab being opened or used right now is skipped, not waited for.
            let Ok(mut r) = learner.resident.try_lock() else {
                continue;
            };
            let unused = now.saturating_duration_since(r.last_used);
            let must = i < over && unused >= idle_for.min(Duration::from_secs(1));
            if (unused >= idle_for || must) && self.evict_locked(learner, &mut r) {
                gone += 1;
            }
        }
        gone
    }

    /// The live clocks of the labs in memory brought to wall time where a timer is due; a lab
    /// someone holds now is left for the next tick. Blocking.
    pub fn catch_up_due_timers(&self) {
        for learner in self.learners() {
            let lab = match learner.resident.try_lock() {
                Ok(r) => r.lab.clone(),
                Err(_) => None,
            };
            if let Some(lab) = lab {
                let _ = lab.catch_up_due_timers_if_free();
            }
        }
    }

    /// How many labs are in memory now.
    pub fn resident(&self) -> usize {
        self.learners().iter().filter(|l| l.is_resident()).count()
    }

    pub fn push(&self) -> Option<Push> {
        offsetlab_lab::lock(&self.push).clone()
    }

    /// Sends `push` (its `seq` assigned here) to every learner; saved, so pages opened later —
    /// or after a restart — apply it too.
    pub fn send_push(&self, lesson: Option<u32>, scenario: Option<String>) -> Result<Push, RoomError> {
        let mut slot = offsetlab_lab::lock(&self.push);
        let push = Push {
            seq: slot.as_ref().map_or(1, |p| p.seq + 1),
            lesson,
            scenario,
            at_ms: offsetlab_lab::session::wall_clock_ms(),
        };
        let bytes = serde_json::to_vec(&push).map_err(|e| RoomError::Io(e.to_string()))?;
        let path = self.config.dir.join(PUSH_FILE);
        offsetlab_storage::write_atomically(&path, &bytes, true)
            .map_err(|e| RoomError::Io(format!("{}: {e}", path.display())))?;
        *slot = Some(push.clone());
        let _ = self.pushes.send(push.seq);
        Ok(push)
    }

    pub fn subscribe_pushes(&self) -> broadcast::Receiver<u64> {
        self.pushes.subscribe()
    }

    /// Every lab closed cleanly (the server stopping); none is opened again after. A lab still
    /// in use is closed once its request lets go of it.
    pub fn close_all(&self) {
        // Set under the room's lock: a join either is in the room by now, and is closed below,
        // or sees it and closes its own lab.
        {
            let _room = offsetlab_lab::lock(&self.learners);
            self.closing.store(true, Ordering::SeqCst);
        }
        for learner in self.learners() {
            let mut r = offsetlab_lab::lock(&learner.resident);
            if let Some(lab) = r.lab.take() {
                learner.in_memory.store(false, Ordering::SeqCst);
                if let Err(e) = lab.lock().close() {
                    tracing::warn!(
                        learner = learner.number,
                        "the learner's lab did not close cleanly: {e}"
                    );
                }
            }
        }
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::SeqCst)
    }
}

/// Whether a learner's directory holds anything besides a half-written file: a lab.
fn has_a_lab(dir: &std::path::Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|mut entries| {
        entries.any(|e| e.is_ok_and(|e| !e.file_name().to_string_lossy().ends_with(".tmp")))
    })
}

/// The highest number of the learners moved into `removed/` (0 if none): a directory that does
/// not read is skipped, since no one is served from there.
fn highest_removed(removed: &std::path::Path) -> u32 {
    let Ok(entries) = std::fs::read_dir(removed) else {
        return 0;
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|e| read_activity(&e.path()).ok())
        .map(|a| a.number)
        .max()
        .unwrap_or(0)
}
