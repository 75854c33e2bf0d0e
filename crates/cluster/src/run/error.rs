//! How a cluster run fails: `RunError` for its caller (with the exit code each failure means),
//! `LineFailure` for one line inside it — kept apart from the runner so that every part of it
//! (the lines, the waits, the checks) names its failures the same way.

use super::app::AppError;
use super::INTERRUPTED_EXIT;
use crate::admin::ClusterError;
use crate::names::NameError;
use crate::preflight::Unrunnable;
use offsetlab_scenario::ScenarioError;

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Unrunnable(Vec<Unrunnable>),
    #[error(transparent)]
    Names(#[from] NameError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The model refused the line (or its expect failed): the scenario itself is wrong.
    #[error("{0}")]
    Model(ScenarioError),
    #[error("line {line}: `{text}`: on the cluster: {why}")]
    Line { line: usize, text: String, why: String },
    /// Ctrl-C or SIGTERM: the run stopped before line `line` (0: in the wait after the last).
    #[error("{}", match line {
        0 => "interrupted (Ctrl-C or SIGTERM) after the last line".to_string(),
        n => format!("line {n}: `{text}`: interrupted (Ctrl-C or SIGTERM) before it ran"),
    })]
    Interrupted { line: usize, text: String },
    /// `--reuse-topic` names what the scenario has no `topic` line for, or what the cluster
    /// does not have.
    #[error("--reuse-topic {topic}: {why}")]
    Reuse { topic: String, why: String },
    #[error("line {line}: expectation failed on the cluster: {failures}\n    {text}")]
    Expectation {
        line: usize,
        text: String,
        failures: String,
    },
    /// A partition of the run's topics lost its leader (its broker died) and the line (0: the
    /// figures after the last line) failed: the cluster cannot serve what the run asks.
    #[error("{}the cluster lost the leader of a partition of this run: {lost}; so: {why}", match line {
        0 => String::new(),
        n => format!("line {n}: `{text}`: "),
    })]
    LeaderLost {
        line: usize,
        text: String,
        lost: String,
        why: String,
    },
}

impl RunError {
    /// 1: an expect line did not hold; 2: the scenario cannot run (or the cluster refused what
    /// it asked); 3: the cluster, an agent or a file could not be reached — or a partition of
    /// the run lost its leader; 130: interrupted (128 + SIGINT, as shells report it).
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Interrupted { .. } => INTERRUPTED_EXIT,
            RunError::Expectation { .. } | RunError::Model(ScenarioError::Expectation { .. }) => 1,
            RunError::Unrunnable(_) | RunError::Names(_) | RunError::Model(_) | RunError::Reuse { .. } => 2,
            RunError::Cluster(e) => e.exit_code(),
            RunError::Line { .. } | RunError::LeaderLost { .. } => 3,
        }
    }
}

/// Why one line failed on the cluster.
#[derive(Debug)]
pub(crate) enum LineFailure {
    Cluster(ClusterError),
    Expectation(String),
    Other(String),
}

impl From<ClusterError> for LineFailure {
    fn from(e: ClusterError) -> Self {
        LineFailure::Cluster(e)
    }
}

impl From<AppError> for LineFailure {
    fn from(e: AppError) -> Self {
        LineFailure::Other(e.to_string())
    }
}
