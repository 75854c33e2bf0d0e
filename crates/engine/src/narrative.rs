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

/// The events of a lab, oldest first. A lab that keeps its narrative elsewhere (the web lab
/// writes it to a file) may forget the oldest events held in memory ([`Narrative::forget_before`]):
/// positions stay counted from the lab's first event.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Narrative {
    events: Vec<Event>,
    /// Events forgotten from the front.
    #[serde(default, skip_serializing_if = "is_zero")]
    forgotten: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Narrative {
    /// A narrative of `events`, the first of them at position `first`.
    pub fn from_events(first: usize, events: Vec<Event>) -> Self {
        Self {
            events,
            forgotten: first,
        }
    }

    pub fn push(&mut self, at: Millis, kind: EventKind, text: impl Into<String>) {
        self.events.push(Event {
            at,
            kind,
            text: text.into(),
        });
    }

    /// The events held in memory (all of them, unless some were forgotten).
    pub fn events(&self) -> &[Event] {
        &self.events
    }

    /// How many events the lab has told, forgotten ones included.
    pub fn len(&self) -> usize {
        self.forgotten + self.events.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The position of the first event held in memory.
    pub fn first(&self) -> usize {
        self.forgotten
    }

    /// Events pushed since `mark` (a previous `len()`), as far as they are held.
    pub fn since(&self, mark: usize) -> &[Event] {
        let at = mark.saturating_sub(self.forgotten).min(self.events.len());
        &self.events[at..]
    }

    /// Forgets the events before position `position`.
    pub fn forget_before(&mut self, position: usize) {
        let n = position.saturating_sub(self.forgotten).min(self.events.len());
        self.events.drain(..n);
        self.forgotten += n;
    }

    /// Keeps the first `len` events (positions), dropping what came after.
    pub fn truncate(&mut self, len: usize) {
        self.events.truncate(len.saturating_sub(self.forgotten));
    }
}
