//! A lab session: the [`Lab`] behind the page, the history of lines that built it, and the
//! all-or-nothing application of a batch of lines.
//!
//! The engine guarantees that a rejected operation changes nothing, so a single line needs no
//! undo. A batch whose third line fails must undo the first two: the session rebuilds the lab by
//! replaying its history into a fresh one. Replay is exact because the engine is deterministic —
//! the same property that makes an exported session reproduce its figures.
//!
//! With the durable backend (what `serve` uses) a lab lives in a *generation* directory of the
//! data directory: `logs/` (segment files, [`FileStore`]), `sinks/` (SQLite), `history.scenario`
//! (the lines that built the lab, append-only), `lab.journal.N` (what each change touched,
//! appended after it) and `lab.json` (the lab's snapshot, taken in the background now and then,
//! and which journal follows it: [`journal`]). A fresh lab — an import,
//! a reset, the undo of a failed batch — is built in a new generation, synced, and switched to by
//! an atomic rename of `current`, so a kill at any moment leaves one complete lab. At start the current
//! generation is restored: logs recovered from disk, sinks reopened with their rows, the lab's
//! state from its snapshot, committed offsets replayed from `__consumer_offsets`.

use offsetlab_engine::lab::{LabView, ResetPlan};
use offsetlab_engine::lab::{SentRecord, MAX_SEND_RECORDS};
use offsetlab_engine::log::MemoryStore;
use offsetlab_engine::narrative::Event;
use offsetlab_engine::offsets::OffsetRecord;
use offsetlab_engine::sink::{MemorySinks, SinkFactory, SinkRow};
use offsetlab_engine::{Lab, LabError};
use offsetlab_records::ProducedBatches;
use offsetlab_scenario::command::{ApplyError, Command, Outcome, Send, SendStored};
use offsetlab_scenario::token::Quoted;
use offsetlab_scenario::Script;
use offsetlab_sqlite::SqliteSinks;
use offsetlab_storage::{
    write_atomically, Durability, Fault, FaultKind, FileStore, FlushPolicy, Health, SlotFile,
};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::shared_log::SharedStore;

mod apply;
mod change;
mod error;
mod files;
mod generation;
mod history;
mod journal;
#[cfg(test)]
mod journal_tests;
mod live_clock;
mod produced;
mod recovered;
#[cfg(test)]
mod recovery_tests;
mod restore;
#[cfg(test)]
mod retention_tests;
mod rollback;
mod save;
mod state;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod undo_tests;

use apply::*;
pub use change::{Applied, Change};
use error::*;
pub use error::{storage_status, ActionError, RestoreError};
use files::*;
pub use generation::SinkBackend;
use generation::*;
use history::*;
use journal::*;
pub use live_clock::{read_clock_mode, starting_at, wall_clock_ms, ClockMode, CLOCK_FILE};
use produced::*;
pub use recovered::Recovered;
use restore::*;
pub use save::PendingSave;
use save::*;
pub use state::{NarrativeTail, SinkTail, State, StorageInfo};

pub struct Session {
    lab: Lab,
    /// Why the session refuses every change: a storage failure it could not take back, or an
    /// fsync that failed. Nothing more is saved; a restart restores the lab from its files.
    broken: Option<String>,
    history: History,
    /// The batches the history's `send … stored=` lines name.
    produced: ProducedStore,
    backend: SinkBackend,
    version: u64,
    /// The durable lab's directory (durable backend only).
    generation: Option<Generation>,
    /// Whether the clock follows wall time (`serve`'s live clock) or waits to be stepped.
    clock: ClockMode,
    /// The version at which the live clock was last brought to wall time: a change applied at
    /// that same version (under the same lock) happens at that instant, and needs no second
    /// `clock` line ([`Session::catch_up_if_stale`]).
    caught_up_at: Option<u64>,
    /// [`Lab::next_deadline`] as last computed, keyed by what it depends on (the version, the
    /// history's length, the clock): the live clock's ticker asks four times a second.
    deadline: std::cell::Cell<Option<(DeadlineKey, Option<offsetlab_engine::clock::Millis>)>>,
    /// What the lab may grow to (a workshop's learner lab); `None` bounds only what the engine
    /// itself bounds.
    caps: Option<crate::caps::Caps>,
    /// What the last start found lost ([`Session::recovered`]).
    recovered: Vec<Recovered>,
    /// How many times a freshly built lab replaced the one in memory ([`Session::install`]: an
    /// undo by replay keeps the version, but not the logs): with the version, what tells the
    /// read view it must be published again ([`Session::stamp`]).
    installs: u64,
}

/// What [`Lab::next_deadline`] is a function of, as far as a session can tell.
type DeadlineKey = (u64, usize, offsetlab_engine::clock::Millis);

impl Session {
    /// A session built by running `source` (which must succeed).
    pub fn new(backend: SinkBackend, source: &str) -> Result<Self, ActionError> {
        Self::built(backend, source, None)
    }

    /// A session built by running `source`, resolving its `send … stored=` lines from `stored`.
    fn built(
        backend: SinkBackend,
        source: &str,
        stored: Option<&ProducedStore>,
    ) -> Result<Self, ActionError> {
        let mut s = Self {
            lab: Lab::new(Box::new(SharedStore::new(MemoryStore)), Box::new(MemorySinks)),
            broken: None,
            history: History::default(),
            produced: ProducedStore::Memory(Vec::new()),
            backend,
            version: 0,
            generation: None,
            clock: ClockMode::Paused,
            caught_up_at: None,
            deadline: std::cell::Cell::new(None),
            caps: None,
            recovered: Vec::new(),
            installs: 0,
        };
        s.load_from(source, stored)?;
        Ok(s)
    }

    /// Where the durable lab lives, if it is durable.
    pub fn generation_dir(&self) -> Option<&Path> {
        self.generation.as_ref().map(|g| g.dir.as_path())
    }

    pub fn version(&self) -> u64 {
        self.version
    }

    /// What the published read view of the session is a function of: the version, which every
    /// change moves, and the lab's installs, which replace its logs ([`crate::read_view`]).
    pub(crate) fn stamp(&self) -> (u64, u64) {
        (self.version, self.installs)
    }

    /// Moves the version past `seen`: a lab opened again (a workshop's evicted lab, restored at
    /// version 1) must not look older to the pages that saw it before, or they would ignore it.
    pub fn advance_version_past(&mut self, seen: u64) {
        if self.version <= seen {
            self.version = seen + 1;
        }
    }

    /// Whether saving a change waits for the disk (an fsync, under `--flush interval` or
    /// `always`): a caller that must not block — an async worker — leaves such a change to a
    /// blocking thread. A lab in memory, or one under `--flush never`, writes into the page
    /// cache and waits for nothing.
    pub fn saves_wait_for_disk(&self) -> bool {
        self.generation
            .as_ref()
            .is_some_and(|g| g.durability.policy() != FlushPolicy::Never)
    }

    /// How many lines the history holds. A storage failure takes the lab back to its last save,
    /// which can shorten it: the caller of several batches learns which of them survived.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    pub fn lab(&self) -> &Lab {
        &self.lab
    }

    /// Bounds what every change from now on may grow the lab to ([`crate::caps`]): a change
    /// that would pass a cap is refused whole, before it runs.
    pub fn set_caps(&mut self, caps: Option<crate::caps::Caps>) {
        self.caps = caps;
    }

    pub fn caps(&self) -> Option<crate::caps::Caps> {
        self.caps
    }

    /// Refuses, before anything runs, a batch that would take the lab past a cap.
    fn admit(&self, changes: &[(usize, Change)]) -> Result<(), ActionError> {
        let Some(caps) = &self.caps else {
            return Ok(());
        };
        let growth = changes.iter().map(|(_, c)| match c {
            Change::Command(c) => crate::caps::Growth::Command(c),
            Change::Produced { batches, .. } => {
                crate::caps::Growth::Records(batches.records() as u64, batches.bytes().len() as u64)
            }
        });
        caps.admit_changes(&self.lab, self.usage(), growth)
            .map_err(|e| cap_refusal(&e, changes.get(e.line.saturating_sub(1)).map(|(n, c)| (*n, c))))
    }

    /// What the lab holds, as the caps count it: its records, logs and sinks, and the history
    /// and narrative it keeps as text.
    pub(crate) fn usage(&self) -> crate::caps::Usage {
        let mut usage = crate::caps::Usage::of(&self.lab, self.history.len());
        usage.bytes += self.text_bytes();
        usage
    }

    /// The bytes of the history and narrative files (as of the last save; 0 in memory).
    fn text_bytes(&self) -> u64 {
        self.generation.as_ref().map_or(0, |g| {
            offsetlab_storage::lock(&g.history).bytes + offsetlab_storage::lock(&g.narrative).bytes
        })
    }

    /// Refuses, before anything runs, a lab to load that would pass a cap.
    fn admit_script(&self, script: &Script) -> Result<(), ActionError> {
        match &self.caps {
            Some(caps) => caps.admit_script(script).map_err(|e| {
                let text = script
                    .lines
                    .iter()
                    .find(|l| l.number == e.line)
                    .map(|l| l.text.clone())
                    .unwrap_or_default();
                ActionError {
                    status: CAP_STATUS,
                    error: e.to_string(),
                    line: e.line,
                    text,
                    cause: None,
                }
            }),
            None => Ok(()),
        }
    }
}

/// The status of a change refused by a cap: the server forbids it, whatever the lab says.
pub const CAP_STATUS: u16 = 403;

fn cap_refusal(e: &crate::caps::CapExceeded, change: Option<(usize, &Change)>) -> ActionError {
    ActionError {
        status: CAP_STATUS,
        error: e.to_string(),
        line: change.map_or(e.line, |(n, _)| n),
        text: change.map(|(_, c)| c.to_string()).unwrap_or_default(),
        cause: None,
    }
}
