//! The narrative: what happened, in plain words, step by step.
//!
//! Every operation of the lab pushes events here. The CLI prints them; the web lab shows them as
//! its log. An event's `kind` lets a front end colour a loss differently from a routine poll.

use crate::clock::{format_instant, Millis};
use serde::{Deserialize, Serialize};
use std::fmt;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    /// Setup: a topic, a consumer, a group starting.
    Setup,
    Produce,
    Poll,
    Process,
    Commit,
    /// Group membership: joins, leaves, rebalances, session timeouts.
    Group,
    Crash,
    Seek,
    /// Something a learner should stop and look at: a commit that covers unprocessed records,
    /// records skipped for good, a redelivery.
    Warning,
    /// An operation that was refused (fenced commit, reset of an active group).
    Refused,
    Clock,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    /// Logical time in epoch milliseconds.
    pub at: Millis,
    pub kind: EventKind,
    pub text: String,
}

impl fmt::Display for Event {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mark = match self.kind {
            EventKind::Warning => "!",
            EventKind::Refused => "x",
            EventKind::Crash => "✗",
            _ => "›",
        };
        write!(f, "[{:>9}] {mark} {}", format_instant(self.at), self.text)
    }
}

/// The events of a lab, oldest first.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Narrative {
    events: Vec<Event>,
}

impl Narrative {
    pub fn push(&mut self, at: Millis, kind: EventKind, text: impl Into<String>) {
        self.events.push(Event {
            at,
            kind,
            text: text.into(),
        });
    }

    pub fn events(&self) -> &[Event] {
        &self.events
    }

    pub fn len(&self) -> usize {
        self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// Events pushed since `mark` (a previous `len()`).
    pub fn since(&self, mark: usize) -> &[Event] {
        &self.events[mark.min(self.events.len())..]
    }
}
