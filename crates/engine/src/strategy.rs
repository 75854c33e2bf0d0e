//! Commit strategies and `auto.offset.reset`.
//!
//! A commit strategy stands for the application's own poll loop: it decides when the consumer
//! commits without being told. Each variant names a real-world pattern and the client that
//! behaves that way.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CommitStrategy {
    /// librdkafka's `enable.auto.commit` with `enable.auto.offset.store=true`: an offset is
    /// stored when poll hands its record to the application, and a background timer commits the
    /// stored offsets every interval, whether or not the records were processed.
    AutoTimer,
    /// The Java `KafkaConsumer`'s `enable.auto.commit`: inside `poll()`, once the interval has
    /// passed, it commits the position reached by the earlier polls.
    AutoPoll,
    /// `commitSync()` as soon as the last record of a polled batch is processed.
    ManualBatch,
    /// `commitSync(offset + 1)` after every record.
    ManualRecord,
    /// `commitAsync()` after each batch: it lands after a round trip, does not retry, and a
    /// crash before it lands forgets it.
    ManualAsync,
    /// `commitSync()` right after poll returns, before any record is processed.
    BeforeProcess,
}

impl CommitStrategy {
    /// One line a learner can read next to the setting.
    pub fn explanation(self) -> &'static str {
        match self {
            Self::AutoTimer => "librdkafka auto-commit: offsets are stored when poll hands records over and a timer commits them, processed or not (can lose in-flight records)",
            Self::AutoPoll => "Java auto-commit: each poll commits what earlier polls returned once the interval passed (at-least-once if you process before polling again)",
            Self::ManualBatch => "commitSync after the whole batch is processed (at-least-once; a crash mid-batch replays the batch)",
            Self::ManualRecord => "commitSync after every record (at-least-once with the smallest replay window, one commit per record)",
            Self::ManualAsync => "commitAsync after each batch: cheap, but it lands later and a crash can forget it (at-least-once, bigger replays)",
            Self::BeforeProcess => "commitSync right after poll, before processing (at-most-once: a crash skips the rest of the batch)",
        }
    }

    /// Whether this strategy is `enable.auto.commit=true`: commits on the
    /// `auto.commit.interval.ms` timer (checked on the timer, or inside `poll()`).
    pub fn auto_commits(self) -> bool {
        matches!(self, Self::AutoTimer | Self::AutoPoll)
    }

    /// Whether a `kafka-tx` sink can use this strategy: the offsets go into the transaction
    /// (`sendOffsetsToTransaction`) once a batch — or a record — is processed, so only the
    /// manual strategies that commit after processing, synchronously, fit.
    pub fn fits_transactions(self) -> bool {
        matches!(self, Self::ManualBatch | Self::ManualRecord)
    }

    /// Whether this strategy commits only what was processed, so a crash can replay but never
    /// skip a record.
    pub fn commits_after_processing(self) -> bool {
        matches!(
            self,
            Self::AutoPoll | Self::ManualBatch | Self::ManualRecord | Self::ManualAsync
        )
    }
}

spelled!(CommitStrategy, "commit strategy", {
    AutoTimer => "auto-timer",
    AutoPoll => "auto-poll",
    ManualBatch => "manual-batch",
    ManualRecord => "manual-record",
    ManualAsync => "manual-async",
    BeforeProcess => "before-process",
});

/// `auto.offset.reset`: where to start when there is no committed offset, or it is out of range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum AutoOffsetReset {
    Earliest,
    /// Kafka's default.
    #[default]
    Latest,
    /// Raise an error instead of guessing.
    None,
}

spelled!(AutoOffsetReset, "auto.offset.reset", { Earliest => "earliest", Latest => "latest", None => "none" });

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in CommitStrategy::ALL {
            assert_eq!(s.name().parse::<CommitStrategy>(), Ok(s));
        }
        assert!("auto".parse::<CommitStrategy>().is_err());
    }
}
