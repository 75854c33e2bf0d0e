//! Why a record reached a sink: the one word a delivery carries into the audit, the sinks' rows,
//! a transaction's pending writes and the narrative. It is vocabulary, not the audit's
//! arithmetic, so it stands apart: a partition's transactions, the consumers and the sinks name
//! it without reaching into the audit, which itself reads the log.

use serde::{Deserialize, Serialize};

/// Why a record was applied to the sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeliveryReason {
    /// The first time this group applied the record.
    First,
    /// Again, because a consumer crashed before its commit covered the record.
    CrashRedelivery,
    /// Again, because the partition moved to another member (or back) in a rebalance.
    RebalanceRedelivery,
    /// Again, after a graceful restart or an automatic `auto.offset.reset`.
    RestartRedelivery,
    /// Again, because someone rewound on purpose: a seek or an offset reset.
    Replay,
}

impl DeliveryReason {
    pub fn is_redelivery(self) -> bool {
        matches!(
            self,
            Self::CrashRedelivery | Self::RebalanceRedelivery | Self::RestartRedelivery
        )
    }

    pub const ALL: [DeliveryReason; 5] = [
        Self::First,
        Self::CrashRedelivery,
        Self::RebalanceRedelivery,
        Self::RestartRedelivery,
        Self::Replay,
    ];

    /// The kebab-case name used in JSON and in the SQLite sink.
    pub fn name(self) -> &'static str {
        match self {
            Self::First => "first",
            Self::CrashRedelivery => "crash-redelivery",
            Self::RebalanceRedelivery => "rebalance-redelivery",
            Self::RestartRedelivery => "restart-redelivery",
            Self::Replay => "replay",
        }
    }

    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.name() == name)
    }

    pub fn label(self) -> &'static str {
        match self {
            Self::First => "first delivery",
            Self::CrashRedelivery => "crash redelivery",
            Self::RebalanceRedelivery => "rebalance redelivery",
            Self::RestartRedelivery => "restart redelivery",
            Self::Replay => "deliberate replay",
        }
    }
}
