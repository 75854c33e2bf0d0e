//! A share group's configuration: Kafka's group configs for share groups, with Kafka 4.4's
//! defaults and the bounds its brokers enforce on them.
//!
//! These are *group* configs (`kafka-configs.sh --entity-type groups`, IncrementalAlterConfigs
//! on a GROUP resource), not client settings: every member of a share group shares one lock
//! duration, one delivery limit and one `share.auto.offset.reset`, whatever its own client
//! says. A `ShareConsumer` has no `auto.offset.reset` of its own.

use crate::clock::{format_duration, Millis};
use crate::error::LabError;
use serde::{Deserialize, Serialize};

/// `group.share.record.lock.duration.ms`: how long an acquired record stays with its member.
pub const DEFAULT_RECORD_LOCK_DURATION_MS: Millis = 30_000;
/// `group.share.min.record.lock.duration.ms` and `group.share.max.record.lock.duration.ms`:
/// the bounds a group's `share.record.lock.duration.ms` must keep to.
pub const RECORD_LOCK_DURATION_BOUNDS_MS: (Millis, Millis) = (15_000, 60_000);
/// `group.share.delivery.count.limit`: deliveries before a record is archived.
pub const DEFAULT_DELIVERY_COUNT_LIMIT: u16 = 5;
/// `group.share.min.delivery.count.limit` and `group.share.max.delivery.count.limit`.
pub const DELIVERY_COUNT_LIMIT_BOUNDS: (u16, u16) = (2, 10);
/// `group.share.partition.max.record.locks`: the most records in flight per share partition
/// (Kafka 4.1 raised it from 200 to 2000).
pub const DEFAULT_PARTITION_MAX_RECORD_LOCKS: u32 = 2_000;
/// `group.share.min.partition.max.record.locks` and `group.share.max.partition.max.record.locks`.
pub const PARTITION_MAX_RECORD_LOCKS_BOUNDS: (u32, u32) = (100, 4_000);
/// `group.share.session.timeout.ms`: how long a silent member stays in the group.
pub const DEFAULT_SESSION_TIMEOUT_MS: Millis = 45_000;
/// `group.share.min.session.timeout.ms` and `group.share.max.session.timeout.ms`.
pub const SESSION_TIMEOUT_BOUNDS_MS: (Millis, Millis) = (45_000, 60_000);

/// `share.auto.offset.reset`: where the SPSO of a share partition starts when the group first
/// reads it. `latest` by default — the opposite of what a learner who thinks of a queue
/// expects: a new share group does not see what is already in the topic. (Kafka also has
/// `by_duration:…`, which the lab does not model yet.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ShareAutoOffsetReset {
    #[default]
    Latest,
    Earliest,
}

spelled!(ShareAutoOffsetReset, "share.auto.offset.reset", {
    Latest => "latest",
    Earliest => "earliest",
});

/// A share group's configs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareGroupConfig {
    pub auto_offset_reset: ShareAutoOffsetReset,
    pub record_lock_duration_ms: Millis,
    pub delivery_count_limit: u16,
    pub partition_max_record_locks: u32,
    pub session_timeout_ms: Millis,
}

impl Default for ShareGroupConfig {
    fn default() -> Self {
        Self {
            auto_offset_reset: ShareAutoOffsetReset::Latest,
            record_lock_duration_ms: DEFAULT_RECORD_LOCK_DURATION_MS,
            delivery_count_limit: DEFAULT_DELIVERY_COUNT_LIMIT,
            partition_max_record_locks: DEFAULT_PARTITION_MAX_RECORD_LOCKS,
            session_timeout_ms: DEFAULT_SESSION_TIMEOUT_MS,
        }
    }
}

/// What an `alter-share-group` line sets; the rest stays.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ShareGroupConfigChange {
    pub auto_offset_reset: Option<ShareAutoOffsetReset>,
    pub record_lock_duration_ms: Option<Millis>,
    pub delivery_count_limit: Option<u16>,
    pub partition_max_record_locks: Option<u32>,
    pub session_timeout_ms: Option<Millis>,
}

impl ShareGroupConfigChange {
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    /// Checks every value against the broker's bounds, as Kafka's `GroupConfig` validation
    /// does (INVALID_CONFIG, and nothing is changed).
    pub fn validate(&self) -> Result<(), LabError> {
        let bad = |what: String| Err(LabError::InvalidConfig(what));
        if let Some(ms) = self.record_lock_duration_ms {
            let (lo, hi) = RECORD_LOCK_DURATION_BOUNDS_MS;
            if !(lo..=hi).contains(&ms) {
                return bad(format!(
                    "share.record.lock.duration.ms {} is outside the broker's bounds [{}, {}] (group.share.min/max.record.lock.duration.ms)",
                    format_duration(ms),
                    format_duration(lo),
                    format_duration(hi)
                ));
            }
        }
        if let Some(n) = self.delivery_count_limit {
            let (lo, hi) = DELIVERY_COUNT_LIMIT_BOUNDS;
            if !(lo..=hi).contains(&n) {
                return bad(format!(
                    "share.delivery.count.limit {n} is outside the broker's bounds [{lo}, {hi}] (group.share.min/max.delivery.count.limit)"
                ));
            }
        }
        if let Some(n) = self.partition_max_record_locks {
            let (lo, hi) = PARTITION_MAX_RECORD_LOCKS_BOUNDS;
            if !(lo..=hi).contains(&n) {
                return bad(format!(
                    "share.partition.max.record.locks {n} is outside the broker's bounds [{lo}, {hi}] (group.share.min/max.partition.max.record.locks)"
                ));
            }
        }
        if let Some(ms) = self.session_timeout_ms {
            let (lo, hi) = SESSION_TIMEOUT_BOUNDS_MS;
            if !(lo..=hi).contains(&ms) {
                return bad(format!(
                    "share.session.timeout.ms {} is outside the broker's bounds [{}, {}] (group.share.min/max.session.timeout.ms)",
                    format_duration(ms),
                    format_duration(lo),
                    format_duration(hi)
                ));
            }
        }
        Ok(())
    }

    /// The change as Kafka's group configs spell it (IncrementalAlterConfigs on the GROUP
    /// resource): each set config's name and value, durations in milliseconds.
    pub fn kafka_configs(&self) -> Vec<(&'static str, String)> {
        let mut out = Vec::new();
        if let Some(r) = self.auto_offset_reset {
            out.push(("share.auto.offset.reset", r.to_string()));
        }
        if let Some(ms) = self.record_lock_duration_ms {
            out.push(("share.record.lock.duration.ms", ms.to_string()));
        }
        if let Some(n) = self.delivery_count_limit {
            out.push(("share.delivery.count.limit", n.to_string()));
        }
        if let Some(n) = self.partition_max_record_locks {
            out.push(("share.partition.max.record.locks", n.to_string()));
        }
        if let Some(ms) = self.session_timeout_ms {
            out.push(("share.session.timeout.ms", ms.to_string()));
        }
        out
    }

    /// `config` with this change applied (validate first).
    pub fn applied_to(&self, config: &ShareGroupConfig) -> ShareGroupConfig {
        ShareGroupConfig {
            auto_offset_reset: self.auto_offset_reset.unwrap_or(config.auto_offset_reset),
            record_lock_duration_ms: self
                .record_lock_duration_ms
                .unwrap_or(config.record_lock_duration_ms),
            delivery_count_limit: self.delivery_count_limit.unwrap_or(config.delivery_count_limit),
            partition_max_record_locks: self
                .partition_max_record_locks
                .unwrap_or(config.partition_max_record_locks),
            session_timeout_ms: self.session_timeout_ms.unwrap_or(config.session_timeout_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafka_bounds_are_enforced() {
        let ok = ShareGroupConfigChange {
            delivery_count_limit: Some(2),
            record_lock_duration_ms: Some(15_000),
            ..Default::default()
        };
        assert!(ok.validate().is_ok());
        for bad in [
            ShareGroupConfigChange {
                delivery_count_limit: Some(1),
                ..Default::default()
            },
            ShareGroupConfigChange {
                delivery_count_limit: Some(11),
                ..Default::default()
            },
            ShareGroupConfigChange {
                record_lock_duration_ms: Some(5_000),
                ..Default::default()
            },
            ShareGroupConfigChange {
                partition_max_record_locks: Some(99),
                ..Default::default()
            },
        ] {
            let e = bad.validate().expect_err("out of bounds");
            assert_eq!(e.kafka_error(), Some("INVALID_CONFIG"), "{e}");
        }
    }
}
