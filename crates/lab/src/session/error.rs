//! Why a change or a restore was refused, and the small conversions every part of the session shares.

use super::*;

pub(crate) fn storage(e: impl std::fmt::Display) -> LabError {
    LabError::storage(e.to_string())
}

/// An I/O error as a storage error of its kind (a full disk, no descriptors left, …).
pub(crate) fn io_error(e: std::io::Error) -> LabError {
    LabError::Storage(e.into())
}

/// The HTTP status for a storage failure of `kind`.
pub fn storage_status(kind: FaultKind) -> u16 {
    match kind {
        FaultKind::Full => 507,
        FaultKind::NoDescriptors => 503,
        FaultKind::Io => 500,
    }
}

pub(crate) fn internal(e: &dyn std::fmt::Display) -> ActionError {
    ActionError {
        status: 500,
        error: e.to_string(),
        line: 0,
        text: String::new(),
        cause: None,
    }
}

/// Why a request to change the lab was refused. Nothing changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ActionError {
    /// 400 for a malformed line, 422 for a line the lab rejected or an expectation that failed.
    #[serde(skip)]
    pub status: u16,
    pub error: String,
    /// 1-based: the index in the request's `lines`, or the line of an imported scenario.
    pub line: usize,
    /// The offending line's text.
    pub text: String,
    /// The engine's reason, as a type: the Kafka listener picks its error code from it.
    #[serde(skip)]
    pub cause: Option<Box<LabError>>,
}

/// Why the lab in a data directory cannot be restored: which file (and line), and what is
/// wrong with it. The lab refuses to start; nothing in the data directory was changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RestoreError {
    pub path: PathBuf,
    /// 1-based, for a line of the history.
    pub line: Option<usize>,
    pub problem: String,
    /// Found while reading, before anything on disk was changed. A later failure (the lab's
    /// logs already recovered, as a restart recovers them) is `false`.
    pub untouched: bool,
}

impl RestoreError {
    pub(crate) fn new(path: &Path, problem: impl std::fmt::Display) -> Self {
        Self {
            path: path.to_path_buf(),
            line: None,
            problem: problem.to_string(),
            untouched: true,
        }
    }

    /// The same error, found after the restore started changing files.
    pub(crate) fn after_changes(self) -> Self {
        Self {
            untouched: false,
            ..self
        }
    }
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.path.display())?;
        if let Some(line) = self.line {
            write!(f, ", line {line}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

impl std::error::Error for RestoreError {}
