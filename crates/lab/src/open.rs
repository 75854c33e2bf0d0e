//! The lab of a data directory, as a start finds it: restored, or — where there is none yet —
//! built from a session file of before the durable log, or the seed. Never the seed over a lab
//! that exists: a lab that cannot be restored stops the start and says what and where.

use crate::session::{
    read_clock_mode, starting_at, wall_clock_ms, ClockMode, RestoreError, Session, SinkBackend, CLOCK_FILE,
};
use offsetlab_storage::FlushPolicy;
use std::path::{Path, PathBuf};

/// The directory of generations inside a data directory.
pub const LAB_DIR: &str = "lab";

/// The file in the data directory that held the session before the durable log; a data
/// directory that has it and no lab yet starts from it.
pub const SESSION_FILE: &str = "session.scn";

/// Why the lab of a data directory was not opened. Nothing in it was replaced.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error("--reset-data: cannot remove {}: {source}", path.display())]
    Reset { path: PathBuf, source: std::io::Error },
    #[error(
        "the lab in {} cannot be restored, and the server will not start over it.\n  {error}\n{} To keep it, fix or restore that file; to start a new lab, use another directory (--data DIR) or discard this one with `offsetlab serve --reset-data`.",
        data_dir.display(),
        if error.untouched {
            format!("Nothing in {} was changed.", data_dir.display())
        } else {
            "Only what a restart changes was changed (unacknowledged tails cut, as after a crash); the lab's own files are as they were.".to_string()
        }
    )]
    Restore { data_dir: PathBuf, error: RestoreError },
    #[error(
        "{} holds lab generations ({}) but no `current` file naming one, so the lab cannot be restored and the server will not start over them. Write the number of the generation to keep into {}, use another directory (--data DIR), or discard them with `offsetlab serve --reset-data`.",
        root.display(),
        generations.join(", "),
        root.join("current").display()
    )]
    Orphans { root: PathBuf, generations: Vec<String> },
    #[error(
        "{}, line {line}: {error}\nThe server will not start over this lab. Fix the file, use another directory (--data DIR), or discard it with `offsetlab serve --reset-data`.",
        path.display()
    )]
    SessionFile {
        path: PathBuf,
        line: usize,
        error: String,
    },
    #[error("{}: {source}", path.display())]
    Io { path: PathBuf, source: std::io::Error },
    #[error("the seed lab does not build: {0}")]
    Seed(String),
}

/// A lab opened from a data directory.
pub struct Opened {
    pub session: Session,
    /// How the restore went (clean or not, what was cut), when there was a lab to restore.
    pub restored: Option<String>,
    /// What `reset` removed.
    pub removed: Vec<PathBuf>,
}

/// Opens the lab in `data_dir` (created if missing). `reset` discards the lab there first —
/// the one way to discard a lab that exists: asked for by name.
///
/// `clock` is how the lab's clock runs from now on (`serve --clock`); without it a lab keeps
/// the mode it had (`paused` for one from before the live clock: it was built on the logical
/// clock, and going live would move it months ahead), and a new lab starts `live`, its seed
/// built at wall time (`clock NOW` as its first line).
pub fn open(
    data_dir: &Path,
    flush: FlushPolicy,
    reset: bool,
    clock: Option<ClockMode>,
) -> Result<Opened, OpenError> {
    let mut removed = Vec::new();
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| OpenError::Io { path, source }
    };
    std::fs::create_dir_all(data_dir).map_err(io(data_dir))?;
    let root = data_dir.join(LAB_DIR);
    let session_file = data_dir.join(SESSION_FILE);
    if reset {
        for (path, dir) in [(&root, true), (&session_file, false)] {
            let gone = if dir {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            match gone {
                Ok(()) => removed.push(path.clone()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => {
                    return Err(OpenError::Reset {
                        path: path.clone(),
                        source,
                    })
                }
            }
        }
    }
    let restore_error = |error| OpenError::Restore {
        data_dir: data_dir.to_path_buf(),
        error,
    };
    // The mode the lab kept, unless `--clock` says which: a file that does not read stops the
    // start then (it is the lab's), but not when the flag replaces it.
    let kept = match clock {
        Some(_) => None,
        None => read_clock_mode(&root).map_err(restore_error)?,
    };
    let mut opened = match Session::restore(&root, flush).map_err(restore_error)? {
        Some((session, summary)) => {
            let mode = clock.or(kept).unwrap_or(ClockMode::Paused);
            (session, Some(summary), mode)
        }
        None => {
            // A session file from before the durable log is a lab built on the logical clock.
            let fresh = if session_file.exists() {
                ClockMode::Paused
            } else {
                ClockMode::Live
            };
            let mode = clock.or(kept).unwrap_or(fresh);
            (new_session(&root, flush, &session_file, mode)?, None, mode)
        }
    };
    opened.0.set_clock_mode(opened.2).map_err(|e| OpenError::Io {
        path: root.join(CLOCK_FILE),
        source: std::io::Error::other(e.to_string()),
    })?;
    Ok(Opened {
        session: opened.0,
        restored: opened.1,
        removed,
    })
}

/// The lab of a data directory that has none yet: a session file from before the durable log
/// replayed, or the seed. A session file that does not replay stops the start — it is a user's
/// lab, and the seed never takes its place.
fn new_session(
    root: &Path,
    flush: FlushPolicy,
    session_file: &Path,
    clock: ClockMode,
) -> Result<Session, OpenError> {
    // Generations without `current` naming one: a first start interrupted before its switch —
    // or a `current` that was lost. Which one cannot be told from here, so nothing is removed
    // and nothing started over them.
    let generations: Vec<String> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("gen-"))
                .collect()
        })
        .unwrap_or_default();
    if !generations.is_empty() {
        return Err(OpenError::Orphans {
            root: root.to_path_buf(),
            generations,
        });
    }
    let backend = SinkBackend::Durable {
        root: root.to_path_buf(),
        flush,
    };
    if session_file.exists() {
        let text = std::fs::read_to_string(session_file).map_err(|source| OpenError::Io {
            path: session_file.to_path_buf(),
            source,
        })?;
        return Session::new(backend, &text).map_err(|e| OpenError::SessionFile {
            path: session_file.to_path_buf(),
            line: e.line,
            error: e.error,
        });
    }
    let seed = match clock {
        ClockMode::Live => starting_at(wall_clock_ms()) + offsetlab_scenario::LAB_SCENARIO,
        ClockMode::Paused => offsetlab_scenario::LAB_SCENARIO.to_string(),
    };
    Session::new(backend, &seed).map_err(|e| OpenError::Seed(e.error))
}
