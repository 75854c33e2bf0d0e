//! Failed SASL authentications, met as Kafka meets them — and told without flooding the log.
//!
//! - **Delayed**: the answer to a failed authentication (and the close that follows it) waits
//!   [`FAILED_AUTHENTICATION_DELAY`], Kafka's `connection.failed.authentication.delay.ms`
//!   default. A client gets one guess per connection, so a password-guessing loop makes at most
//!   one guess per 100 ms per connection it holds — and the connections are capped
//!   (`--max-connections`).
//! - **Logged within bounds**: Kafka writes one line per failure. A guessing loop would then write
//!   the lab's log as fast as it guesses, so here the first [`LINES_PER_WINDOW`] failures of a
//!   [`WINDOW`] are written in full and the rest counted; the first failure after the window
//!   says how many were not written.

use crate::sasl::AuthFailure;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Kafka's `connection.failed.authentication.delay.ms` (KIP-306), its default.
pub(crate) const FAILED_AUTHENTICATION_DELAY: Duration = Duration::from_millis(100);

/// How long a window of the log's accounting lasts.
pub(crate) const WINDOW: Duration = Duration::from_secs(10);

/// How many failures of one window are written in full.
pub(crate) const LINES_PER_WINDOW: u32 = 10;

/// What to do with one failure.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// Write it; `unwritten` failures of the window before were counted, not written; `last`:
    /// the window's last written line (say that the next ones are counted).
    Write { unwritten: u64, last: bool },
    /// Count it.
    Count,
}

/// The accounting of one window.
#[derive(Debug, Default)]
pub(crate) struct Window {
    started: Option<Instant>,
    written: u32,
    counted: u64,
}

impl Window {
    /// What the failure at `now` gets.
    pub(crate) fn note(&mut self, now: Instant) -> Note {
        let mut unwritten = 0;
        if self
            .started
            .is_none_or(|s| now.saturating_duration_since(s) >= WINDOW)
        {
            unwritten = std::mem::take(&mut self.counted);
            self.started = Some(now);
            self.written = 0;
        }
        if self.written < LINES_PER_WINDOW {
            self.written += 1;
            return Note::Write {
                unwritten,
                last: self.written == LINES_PER_WINDOW,
            };
        }
        self.counted += 1;
        Note::Count
    }
}

/// The broker's log of failed authentications: one [`Window`], shared by every connection.
#[derive(Debug, Default)]
pub(crate) struct AuthFailureLog {
    window: Mutex<Window>,
}

impl AuthFailureLog {
    /// Writes `failure` to the server's log, or counts it (see the module's doc).
    pub(crate) fn record(&self, failure: &AuthFailure) {
        let note = offsetlab_lab::lock(&self.window).note(Instant::now());
        if let Note::Write { unwritten, last } = note {
            if unwritten > 0 {
                tracing::warn!(
                    "{unwritten} more failed SASL/PLAIN authentication(s) in the {} s before this one, not written one by one",
                    WINDOW.as_secs()
                );
            }
            failure.log();
            if last {
                tracing::warn!(
                    "{LINES_PER_WINDOW} failed SASL/PLAIN authentications within {} s: further ones are counted, and the count written with the next one after that",
                    WINDOW.as_secs()
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_failures_writes_a_few_lines_and_then_their_count() {
        let mut w = Window::default();
        let t0 = Instant::now();
        let notes: Vec<Note> = (0..1_000).map(|_| w.note(t0)).collect();
        let written = notes.iter().filter(|n| matches!(n, Note::Write { .. })).count();
        assert_eq!(written, LINES_PER_WINDOW as usize);
        assert_eq!(
            notes[LINES_PER_WINDOW as usize - 1],
            Note::Write {
                unwritten: 0,
                last: true
            }
        );
        assert_eq!(notes[LINES_PER_WINDOW as usize], Note::Count);
        // Still within the window: counted.
        assert_eq!(w.note(t0 + WINDOW - Duration::from_millis(1)), Note::Count);
        // The next window's first failure is written, with the count of the ones before.
        assert_eq!(
            w.note(t0 + WINDOW),
            Note::Write {
                unwritten: 991,
                last: false
            }
        );
    }

    #[test]
    fn occasional_failures_are_all_written() {
        let mut w = Window::default();
        let t0 = Instant::now();
        for i in 0..50u32 {
            assert_eq!(
                w.note(t0 + WINDOW * i),
                Note::Write {
                    unwritten: 0,
                    last: false
                }
            );
        }
    }
}
