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
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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
    // Control characters, and the ones that reorder the text around them (bidirectional
    // embeddings, overrides, isolates), would garble the instructor's table.
    let garbles = |c: char| c.is_control() || matches!(c, '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}');
    if name.chars().any(garbles) {
        return Err("a name cannot hold control or text-direction characters".into());
    }
    Ok(name.to_string())
}

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
            activity: Mutex::new(activity),
            bucket: Mutex::new(Bucket::full(rate, now)),
        }
    }

    pub fn name(&self) -> String {
        offsetlab_lab::lock(&self.activity).name.clone()
    }

    pub fn activity(&self) -> Activity {
        offsetlab_lab::lock(&self.activity).clone()
    }

    /// Changes what the instructor sees and saves it; a save that fails is reported, the
    /// change to memory stays (it is only what the instructor's page shows).
    pub fn update(&self, f: impl FnOnce(&mut Activity)) -> std::io::Result<()> {
        let mut a = offsetlab_lab::lock(&self.activity);
        f(&mut a);
        write_activity(&self.dir, &a)
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
pub fn read_activity(dir: &Path) -> Result<Activity, String> {
    let path = dir.join(LEARNER_FILE);
    let bytes = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("{}: {e}", path.display()))
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
            last_action: Some("poll c1".into()),
            last_action_ms: Some(5),
            figures: Vec::new(),
            quiz: BTreeMap::from([(0, 1), (3, 0)]),
            push_applied: 2,
        };
        write_activity(dir.path(), &a).expect("ok");
        let back = read_activity(dir.path()).expect("ok");
        assert_eq!(
            serde_json::to_value(&back).expect("ok"),
            serde_json::to_value(&a).expect("ok")
        );
    }
}
