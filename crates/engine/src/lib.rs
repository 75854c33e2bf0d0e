//! # offsetlab-engine
//!
//! The pure, deterministic heart of offsetlab: a model of Kafka's partition logs, the group
//! coordinator with its compacted `__consumer_offsets` topic, consumers with their commit
//! strategies, the sinks they write to, and the audit that tells what was lost or duplicated.
//!
//! Nothing in this crate opens a socket, spawns a thread or reads the wall clock. Time is a
//! [`clock::Clock`] that only moves when [`lab::Lab::tick`] is called, so a scenario replays
//! identically every time and every figure can be tested exactly. I/O enters through two ports:
//! [`log::LogStore`] (where partition logs live) and [`sink::SinkFactory`] (where a group's
//! processed records are written).

#[macro_use]
mod spelled;
pub mod audit;
pub mod clock;
pub mod consumer;
pub mod delivery;
pub mod error;
pub mod group;
pub mod lab;
pub mod log;
pub mod names;
pub mod narrative;
pub mod offsets;
pub mod order;
pub mod record;
mod serde_pairs;
pub mod share;
pub mod sink;
pub mod strategy;
pub mod tracked;
pub mod txn;

pub use error::LabError;
pub use lab::Lab;
