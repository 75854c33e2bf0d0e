//! A learner the room could not read back when it opened: their `learner.json` is corrupt, or
//! missing beside a lab. Such a learner is set aside — named on the console and to the
//! instructor, their directory left exactly as it is — and the room opens for everyone else:
//! one damaged file must not keep a whole class out, and no learner's work is dropped or
//! replaced to get past it. Their browser is told their lab could not be read, rather than sent
//! to join again as somebody new.

use super::secret::Secret;
use std::path::PathBuf;

/// One learner set aside.
#[derive(Debug, Clone)]
pub struct Unreadable {
    /// The id their cookie holds (never shown to the instructor).
    pub(crate) id: Secret,
    /// Their directory, untouched.
    pub dir: PathBuf,
    /// What is wrong with it, naming the file.
    pub problem: String,
}

impl Unreadable {
    pub(crate) fn new(id: Secret, dir: PathBuf, problem: String) -> Self {
        tracing::warn!(
            dir = %dir.display(),
            problem = %problem,
            "a learner's file does not read: that learner is set aside (their directory is left as it is; fix or remove it and restart), the room opens for the others"
        );
        Self { id, dir, problem }
    }

    /// What the instructor is shown: the problem with the learner's id taken out (the
    /// instructor never holds one), and where to look.
    pub fn for_instructor(&self) -> serde_json::Value {
        let hide = |s: &str| s.replace(self.id.as_str(), "<learner>");
        serde_json::json!({
            "dir": hide(&self.dir.display().to_string()),
            "problem": hide(&self.problem),
        })
    }
}
