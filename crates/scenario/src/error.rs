//! Errors of the scenario language, always with the line they come from.

use offsetlab_engine::LabError;

/// A line that could not be parsed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
#[error("{message}")]
pub struct ParseError {
    pub message: String,
}

impl ParseError {
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }
}

/// Why a script stopped.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum ScenarioError {
    /// The line is not valid scenario language; nothing of the script ran.
    #[error("line {line}: {message}\n    {text}")]
    Parse {
        line: usize,
        text: String,
        message: String,
    },
    /// The lab refused the action; nothing it would have done happened.
    #[error("line {line}: {error}\n    {text}")]
    Rejected {
        line: usize,
        text: String,
        error: LabError,
    },
    /// An `expect` line did not hold.
    #[error("line {line}: expectation failed: {failures}\n    {text}")]
    Expectation {
        line: usize,
        text: String,
        failures: String,
    },
}

impl ScenarioError {
    pub fn line(&self) -> usize {
        match self {
            Self::Parse { line, .. } | Self::Rejected { line, .. } | Self::Expectation { line, .. } => *line,
        }
    }

    /// The source line, when the error came from one.
    pub fn text(&self) -> Option<&str> {
        match self {
            Self::Parse { text, .. } | Self::Rejected { text, .. } | Self::Expectation { text, .. } => {
                (!text.is_empty() && text != "(explorer)").then_some(text.as_str())
            }
        }
    }

    /// The one-line reason, without the echoed source line.
    pub fn reason(&self) -> String {
        match self {
            Self::Parse { message, .. } => message.clone(),
            Self::Rejected { error, .. } => error.to_string(),
            Self::Expectation { failures, .. } => format!("expectation failed: {failures}"),
        }
    }
}

/// `s` cut to at most `max` characters (with `…` when cut): a refused line or value is named in
/// an error, never echoed whole — a 3 MB line must not come back in a 3 MB error.
pub fn truncated(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        None => s.to_string(),
        Some((at, _)) => format!("{}…", &s[..at]),
    }
}
