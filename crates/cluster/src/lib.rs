//! # offsetlab-cluster
//!
//! The lab's experiments on a real Kafka cluster (`docs/CLUSTER.md`):
//!
//! - [`settings`]: a scenario's consumer as librdkafka properties — the strategy table.
//! - [`protocol`]: the typed messages between the runner and a consumer agent, one JSON line
//!   each.
//! - [`agent`]: a real consumer in a process of its own (`offsetlab agent`), so that `crash`
//!   can be `SIGKILL`.
//! - [`admin`]: reaching the cluster, creating the run's topics (never one that exists),
//!   deleting what the run created.
//! - [`consumer_group`]: a consumer-protocol group (KIP-848) as its coordinator describes it —
//!   epochs and members — asked through a hook the CLI's admin client fills.
//! - [`names`]: the run's prefix, on every topic and group that crosses to the cluster.
//! - [`produce`]: the model's records sent to the cluster at the model's offsets.
//! - [`preflight`]: which lines of a scenario can run on a cluster, decided before anything
//!   runs.
//! - [`run`]: the runner — the model a line ahead, the lines for real, the application (sinks,
//!   audit, the strategies' commits) outside the agents, the cluster's figures beside the
//!   model's; one explorer cell for real; the page's mirror of `serve --bootstrap-server`.

pub mod admin;
pub mod agent;
pub mod consumer_group;
pub mod names;
pub mod preflight;
pub mod produce;
pub mod protocol;
pub mod run;
pub mod settings;

pub use protocol::{Delivered, PartitionOffset, Reply, Request};
pub use settings::ConsumerSettings;
