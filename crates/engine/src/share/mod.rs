//! Share groups (KIP-932, "queues for Kafka"): consumers that read the same partitions
//! together, each record acquired by one member at a time and acknowledged one by one — on a
//! log that an acknowledgement never changes.
//!
//! - [`partition`] — [`SharePartition`]: the SPSO, the in-flight window, each record's
//!   [`DeliveryState`], delivery count and [`AcquisitionLock`]; acquire, acknowledge, release,
//!   lock expiry, the delivery limit, the log start.
//! - [`group`] — [`ShareGroup`]: members, assignment, configs, partitions, audit.
//! - [`assignor`] — Kafka's `SimpleAssignor`. [`config`] — the group configs and their bounds.
//! - [`consumer`] — [`ShareConsumer`]: the application, what it holds, implicit or explicit.
//! - [`audit`] — lost, duplicates and skipped, as for consumer groups.
//!
//! The lab's operations on them are in `lab/share.rs`; the rules are here.

pub mod assignor;
pub mod audit;
pub mod config;
pub mod consumer;
pub mod group;
mod mirror;
pub mod partition;

pub use audit::{ShareFigures, SharePartitionAudit};
pub use config::{ShareAutoOffsetReset, ShareGroupConfig, ShareGroupConfigChange};
pub use consumer::{AcknowledgementMode, AcquireMode, HeldRecord, ShareConsumer, ShareConsumerConfig};
pub use group::{ShareGroup, ShareMember};
pub use partition::{AcknowledgeType, AcquisitionLock, DeliveryState, InFlightRecord, SharePartition};

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Every share group and share consumer of a lab: what its snapshot keeps of them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareState {
    pub groups: BTreeMap<String, ShareGroup>,
    pub consumers: BTreeMap<String, ShareConsumer>,
}

impl ShareState {
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty() && self.consumers.is_empty()
    }
}
