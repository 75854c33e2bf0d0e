//! # offsetlab-scenario
//!
//! The scenario language: a line-oriented script whose every line is one action a learner can
//! take in the lab (`produce orders count=12`, `poll c1`, `crash c1`, …) or one claim about what
//! must be true afterwards (`expect lost=3`). The web lab speaks it too, so a session can be
//! exported as a script and replayed exactly.
//!
//! - [`token`] splits a line into words and `key=value` options;
//! - [`command`] holds one type per command, each with `parse` and `apply`;
//! - [`script`] parses a whole file (all or nothing: a malformed line stops everything);
//! - [`runner`] applies a script to a [`offsetlab_engine::Lab`];
//! - [`explore`] crashes a consumer at every possible instant of a script, for every commit
//!   strategy × sink, and reports what was lost and duplicated.
//!
//! The full language is documented in `docs/SCENARIOS.md`.

pub mod command;
pub mod error;
pub mod explore;
pub mod explore_share;
pub mod lessons;
pub mod runner;
pub mod script;
pub mod token;
pub mod units;

pub use command::Command;
pub use error::{ParseError, ScenarioError};
pub use runner::Runner;
pub use script::Script;

/// The seed situation of the lab: topic `orders` with 12 order events, group `analytics-prod`
/// at committed offset 0, consumer `c1` processing batches of 4, one record per second.
pub const SEED_SCENARIO: &str = include_str!("../scenarios/seed.scn");

/// The web lab's starting point: the seed's setup lines, before any poll.
pub const LAB_SCENARIO: &str = include_str!("../scenarios/lab.scn");
