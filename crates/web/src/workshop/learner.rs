//! One learner of a workshop: who they are (a name they typed, a number the instructor sees),
//! their lab (resident in memory or only on disk), and what the instructor's page shows of them
//! — the lesson and step they are on, the last thing they did, their figures, their quiz answers.
//!
//! The id is the learner's secret (the cookie); the number is public. The instructor's page
//! names learners by number only, so nothing it shows lets one learner act as another.

use super::rate::{Bucket, RateLimit};
use super::secret::Secret;
use offsetlab_lab::session::State;
use offsetlab_lab::LabHandle;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use tokio::sync::broadcast;

/// The file in a learner's directory that says who they are and where they got to.
pub const LEARNER_FILE: &str = "learner.json";

/// The longest name a learner may type, in characters.
pub const MAX_NAME_CHARS: usize = 64;

/// A name as a learner typed it, checked: 1 to 64 characters once trimmed, no control
/// characters (they would garble the instructor's table). Anything else is kept as typed —
/// quotes, `<`, emoji — and shown escaped.
pub fn checked_name(name: &str) -> Result<String, String> {
    let name = name.trim();
    if name.is_empty() {
        return Err("type your name (or any name the instructor will know you by)".into());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("a name has at most {MAX_NAME_CHARS} characters"));
    }
    if name.chars().any(garbles) {
        return Err("a name cannot hold control or text-direction characters".into());
    }
    Ok(name.to_string())
}

/// Control characters, and the ones that reorder the text around them (bidirectional
/// embeddings, overrides, isolates), would garble the instructor's table.
fn garbles(c: char) -> bool {
    c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}

/// The longest label of an action (what the learner pressed), in characters.
pub const MAX_LABEL_CHARS: usize = 80;

/// What a learner pressed, as their page names it ("Crash mid-batch"), checked as a name is:
/// at most 80 characters once trimmed, no control or text-direction characters. A blank label
/// is no label.
pub fn checked_label(label: Option<&str>) -> Result<Option<String>, String> {
    let Some(label) = label.map(str::trim).filter(|l| !l.is_empty()) else {
        return Ok(None);
    };
    if label.chars().count() > MAX_LABEL_CHARS {
        return Err(format!(
            "an action's label has at most {MAX_LABEL_CHARS} characters (it names the button the learner pressed)"
        ));
    }
    if label.chars().any(garbles) {
        return Err("an action's label cannot hold control or text-direction characters".into());
    }
    Ok(Some(label.to_string()))
}

/// The steps of the guided experiment (the lab's first-minutes walkthrough): a learner reports
/// the step they reached, 0-based, and this when they finished it.
pub const GUIDED_STEPS: u32 = 3;

/// The lesson a learner's page is on (the page reports it; the lab itself does not know).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct Progress {
    pub lesson: u32,
    /// The step they are on, 0-based; `steps` when the lesson is complete.
    pub step: u32,
    pub steps: u32,
}

/// One group's figures, as the lab's cards show them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
pub struct GroupFigures {
    pub group: String,
    pub sink: String,
    /// Committed offset per `topic-partition` (`None`: nothing committed).
    pub committed: BTreeMap<String, Option<i64>>,
    pub log_end_offset: BTreeMap<String, i64>,
    pub lag: i64,
    pub lost: u64,
    pub duplicates: u64,
    pub sink_rows: u64,
    pub distinct_keys: u64,
}

impl GroupFigures {
    /// Every group's figures in `state`.
    pub fn of(state: &State) -> Vec<Self> {
        state
            .view
            .groups
            .iter()
            .map(|(name, g)| GroupFigures {
                group: offsetlab_lab::clip::clip(name, 200).into_owned(),
                sink: g.sink.kind.name().to_string(),
                committed: g.committed.clone(),
                log_end_offset: g.log_end_offset.clone(),
                lag: g.lag.values().flatten().sum(),
                lost: g.audit.lost,
                duplicates: g.audit.duplicates,
                sink_rows: g.sink.rows,
                distinct_keys: g.sink.distinct_keys,
            })
            .collect()
    }
}

/// What the instructor sees of a learner, and what survives a restart of the server.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Activity {
    pub number: u32,
    pub name: String,
    pub joined_ms: i64,
    #[serde(default)]
    pub progress: Option<Progress>,
    /// The last change they made: its first line (clipped), and when (wall time).
    #[serde(default)]
    pub last_action: Option<String>,
    /// What they pressed to make it, as their page named it ("Crash mid-batch"); `None` for a
    /// change the page did not name (a typed line, a reset).
    #[serde(default)]
    pub last_label: Option<String>,
    #[serde(default)]
    pub last_action_ms: Option<i64>,
    #[serde(default)]
    pub figures: Vec<GroupFigures>,
    /// The option they last chose for each quiz question.
    #[serde(default)]
    pub quiz: BTreeMap<u32, u32>,
    /// The last push from the instructor their page applied.
    #[serde(default)]
    pub push_applied: u64,
    /// The lessons they completed (reported a lesson's last step): only lessons that exist.
    #[serde(default)]
    pub completed: BTreeSet<u32>,
    /// The furthest step of the guided experiment they reached (`GUIDED_STEPS`: finished).
    #[serde(default)]
    pub guided: Option<u32>,
}

impl Activity {
    /// Whether they never did anything the instructor can see: no change to their lab, no
    /// lesson step, no quiz answer, nothing of the guided experiment.
    pub fn untouched(&self) -> bool {
        self.last_action.is_none()
            && self.progress.is_none()
            && self.quiz.is_empty()
            && self.completed.is_empty()
            && self.guided.is_none()
    }
}

/// Quiz questions and options a learner may answer (the page has far fewer).
pub const MAX_QUIZ_QUESTIONS: u32 = 64;
pub const MAX_QUIZ_OPTIONS: u32 = 16;

pub struct Learner {
    pub id: Secret,
    pub number: u32,
    pub dir: PathBuf,
    /// Every change of their lab, to their open pages: outlives the lab's eviction.
    pub changes: broadcast::Sender<u64>,
    pub(super) resident: Mutex<Resident>,
    /// Whether the lab is in memory, readable without waiting for a restore or a close.
    pub(super) in_memory: AtomicBool,
    /// The last version of the lab its pages saw before it was evicted: an opened lab starts
    /// past it (`Session::advance_version_past`), so open pages do not take it for an old one.
    pub(super) seen_version: AtomicU64,
    /// Event streams open now (`/api/events`), bounded per learner.
    pub(super) streams: AtomicUsize,
    pub(super) activity: Mutex<Activity>,
    pub(super) bucket: Mutex<Bucket>,
    /// Wall time of their last request (their joining, after a restart).
    pub(super) seen_ms: AtomicI64,
    /// Set once the instructor removed them: their lab is not opened again, their file not
    /// written again (its directory was moved aside).
    pub(super) removed: AtomicBool,
    /// What the restores of their lab found lost since the room opened (a log's torn tail):
    /// shown to the instructor, who may have to tell them why records went missing.
    pub(super) recovered: Mutex<Vec<offsetlab_lab::session::Recovered>>,
}

/// The learner's lab while it is in memory, and when it was last used.
pub(super) struct Resident {
    pub lab: Option<LabHandle>,
    pub last_used: Instant,
}

impl Learner {
    pub(super) fn new(id: Secret, dir: PathBuf, activity: Activity, rate: RateLimit) -> Self {
        let (changes, _) = broadcast::channel(64);
        let now = Instant::now();
        Self {
            id,
            number: activity.number,
            dir,
            changes,
            resident: Mutex::new(Resident {
                lab: None,
                last_used: now,
            }),
            in_memory: AtomicBool::new(false),
            seen_version: AtomicU64::new(0),
            streams: AtomicUsize::new(0),
            seen_ms: AtomicI64::new(activity.last_action_ms.unwrap_or(0).max(activity.joined_ms)),
            activity: Mutex::new(activity),
            bucket: Mutex::new(Bucket::full(rate, now)),
            removed: AtomicBool::new(false),
            recovered: Mutex::new(Vec::new()),
        }
    }

    /// What the restores of their lab found lost since the room opened.
    pub fn recovered(&self) -> Vec<offsetlab_lab::session::Recovered> {
        offsetlab_lab::lock(&self.recovered).clone()
    }

    pub fn name(&self) -> String {
        offsetlab_lab::lock(&self.activity).name.clone()
    }

    pub fn activity(&self) -> Activity {
        offsetlab_lab::lock(&self.activity).clone()
    }

    /// Changes what the instructor sees and saves it; a save that fails is reported, the
    /// change to memory stays (it is only what the instructor's page shows). A learner the
    /// instructor removed is changed no more (their directory was moved aside).
    pub fn update(&self, f: impl FnOnce(&mut Activity)) -> std::io::Result<()> {
        let mut a = offsetlab_lab::lock(&self.activity);
        if self.is_removed() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::NotFound,
                "the instructor removed this learner from the workshop",
            ));
        }
        f(&mut a);
        write_activity(&self.dir, &a)
    }

    /// Whether the instructor removed them.
    pub fn is_removed(&self) -> bool {
        self.removed.load(Ordering::SeqCst)
    }

    /// Notes a request of theirs now.
    pub fn seen(&self) {
        self.seen_ms
            .store(offsetlab_lab::session::wall_clock_ms(), Ordering::Relaxed);
    }

    /// Wall time of their last request.
    pub fn seen_ms(&self) -> i64 {
        self.seen_ms.load(Ordering::Relaxed)
    }

    /// Their pages open now (event streams).
    pub fn pages(&self) -> usize {
        self.streams.load(Ordering::SeqCst)
    }

    pub fn is_resident(&self) -> bool {
        self.in_memory.load(Ordering::SeqCst)
    }

    /// One more event stream of this learner's, unless `max` are open: the guard closes it.
    pub fn open_stream(self: &std::sync::Arc<Self>, max: usize) -> Option<StreamGuard> {
        let open = self.streams.fetch_add(1, Ordering::SeqCst);
        if open >= max {
            self.streams.fetch_sub(1, Ordering::SeqCst);
            return None;
        }
        Some(StreamGuard(std::sync::Arc::clone(self)))
    }
}

/// An open event stream of a learner's; dropped when the stream ends.
pub struct StreamGuard(std::sync::Arc<Learner>);

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `learner.json` written whole (a crash leaves the old one or the new one).
pub fn write_activity(dir: &Path, activity: &Activity) -> std::io::Result<()> {
    let bytes = serde_json::to_vec_pretty(activity).map_err(std::io::Error::other)?;
    offsetlab_storage::write_atomically(&dir.join(LEARNER_FILE), &bytes, false)
}

/// `learner.json` read back; an error names the file (the server does not start over it).
/// Completed lessons the server no longer has are dropped (the set stays bounded by them).
pub fn read_activity(dir: &Path) -> Result<Activity, String> {
    let path = dir.join(LEARNER_FILE);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    let mut a: Activity = serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))?;
    a.completed.retain(|n| lesson_exists(*n));
    a.guided = a.guided.map(|g| g.min(GUIDED_STEPS));
    Ok(a)
}

/// Whether the server has lesson `n`.
pub fn lesson_exists(n: u32) -> bool {
    offsetlab_scenario::lessons::LESSONS
        .iter()
        .any(|l| l.number() == n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_kept_as_typed_within_bounds() {
        assert_eq!(
            checked_name("  Ada \"<b>\" #1 ünïcödé ").expect("ok"),
            "Ada \"<b>\" #1 ünïcödé"
        );
        assert!(checked_name("   ").is_err());
        assert!(checked_name("a\u{7}b").is_err());
        assert!(checked_name("evil\u{202E}txt.exe").is_err());
        assert_eq!(checked_name(&"é".repeat(64)).expect("ok").chars().count(), 64);
        assert!(checked_name(&"é".repeat(65)).is_err());
    }

    #[test]
    fn activity_reads_back_as_written() {
        let dir = tempfile::tempdir().expect("ok");
        let a = Activity {
            number: 7,
            name: "Zoë \"quotes\" # and spaces".into(),
            joined_ms: 1,
            progress: Some(Progress {
                lesson: 2,
                step: 3,
                steps: 9,
            }),
            last_action: Some("poll c1 +2 more".into()),
            last_label: Some("Crash mid-batch".into()),
            last_action_ms: Some(5),
            figures: Vec::new(),
            quiz: BTreeMap::from([(0, 1), (3, 0)]),
            push_applied: 2,
            completed: BTreeSet::from([1, 4]),
            guided: Some(2),
        };
        write_activity(dir.path(), &a).expect("ok");
        let back = read_activity(dir.path()).expect("ok");
        assert_eq!(
            serde_json::to_value(&back).expect("ok"),
            serde_json::to_value(&a).expect("ok")
        );
        assert_eq!(back.last_label.as_deref(), Some("Crash mid-batch"));
        assert_eq!(back.completed, BTreeSet::from([1, 4]));
        assert_eq!(back.guided, Some(2));
    }

    #[test]
    fn a_file_of_an_older_server_reads_and_lessons_gone_are_dropped() {
        let dir = tempfile::tempdir().expect("ok");
        std::fs::write(
            dir.path().join(LEARNER_FILE),
            r#"{"number": 3, "name": "Ada", "joined_ms": 1, "last_action": "poll c1"}"#,
        )
        .expect("ok");
        let a = read_activity(dir.path()).expect("ok");
        assert_eq!((a.last_label.clone(), a.guided), (None, None));
        assert!(a.completed.is_empty() && !a.untouched());
        std::fs::write(
            dir.path().join(LEARNER_FILE),
            r#"{"number": 3, "name": "Ada", "joined_ms": 1, "completed": [1, 999], "guided": 7}"#,
        )
        .expect("ok");
        let a = read_activity(dir.path()).expect("ok");
        assert_eq!(a.completed, BTreeSet::from([1]));
        assert_eq!(a.guided, Some(GUIDED_STEPS));
    }

    #[test]
    fn labels_are_short_text() {
        assert_eq!(checked_label(None), Ok(None));
        assert_eq!(checked_label(Some("   ")), Ok(None));
        assert_eq!(
            checked_label(Some("  Crash mid-batch ")),
            Ok(Some("Crash mid-batch".into()))
        );
        assert_eq!(
            checked_label(Some("Lesson 3 · step 4")),
            Ok(Some("Lesson 3 · step 4".into()))
        );
        assert!(checked_label(Some(&"x".repeat(80))).is_ok());
        assert!(checked_label(Some(&"x".repeat(81))).is_err());
        assert!(checked_label(Some("a\nb")).is_err());
        assert!(checked_label(Some("a\u{202E}b")).is_err());
    }
}
