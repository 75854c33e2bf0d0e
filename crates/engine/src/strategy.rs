//! Commit strategies and `auto.offset.reset`.
//!
//! A commit strategy stands for the application's own poll loop: it decides when the consumer
//! commits without being told. Each variant names a real-world pattern and the client that
//! behaves that way; [`RULES`] says, one row per strategy, what each one commits when — the
//! engine's consumers and the cluster runner's real application both read it, so a strategy's
//! rules are written once.

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

    /// This strategy's rules: its row of [`RULES`], the one place they are written. The
    /// engine's consumers and the cluster runner's application both decide by it.
    pub const fn rules(self) -> CommitRules {
        RULES[self as usize]
    }

    /// Whether this strategy is `enable.auto.commit=true`: commits on the
    /// `auto.commit.interval.ms` timer (checked on the timer, or inside `poll()`).
    pub fn auto_commits(self) -> bool {
        matches!(self.rules().when, CommitWhen::Timer | CommitWhen::InsidePoll)
    }

    /// Whether a `kafka-tx` sink can use this strategy: the offsets go into the transaction
    /// (`sendOffsetsToTransaction`) once a batch — or a record — is processed, so only the
    /// manual strategies that commit after processing, synchronously, fit.
    pub fn fits_transactions(self) -> bool {
        let r = self.rules();
        r.after_processing() && r.call == CommitCall::Sync
    }

    /// Whether this strategy commits only what was processed, so a crash can replay but never
    /// skip a record: every strategy but the two that commit what poll handed over before it
    /// is processed (librdkafka's timer, and a commit right after poll). The Java client's
    /// auto-commit counts — it commits what *earlier* polls returned, which an application
    /// that processes before polling again has processed.
    pub fn commits_after_processing(self) -> bool {
        !matches!(self.rules().when, CommitWhen::Timer | CommitWhen::AfterPoll)
    }
}

/// When a strategy commits without being told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitWhen {
    /// Every `auto.commit.interval.ms`, on a timer, whatever the application is doing:
    /// librdkafka's auto-commit runs on its background thread, not inside `poll()`.
    Timer,
    /// At the start of `poll()`, once the interval has passed: the Java client's auto-commit
    /// (`ConsumerCoordinator.maybeAutoCommitOffsetsAsync`, called from `poll()`), so it only
    /// ever commits what *earlier* polls returned.
    InsidePoll,
    /// As soon as `poll()` returns, before the first record is processed.
    AfterPoll,
    /// Once each record is processed: `commitSync(offset + 1)` of that record alone.
    AfterEachRecord,
    /// Once the batch's last record is processed.
    AfterBatch,
}

/// Which offsets a commit takes from the consumer's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitSource {
    /// The fetch position: everything handed out by poll (Java's `commitSync()` with no
    /// arguments, and what Java auto-commit commits).
    Position,
    /// librdkafka's offset store: what poll handed to the application.
    Stored,
    /// What the application finished processing.
    Processed,
}

/// How the strategy's own commits are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitCall {
    /// The consumer waits for the coordinator's answer (`commitSync`; an auto-commit at
    /// close or revoke is synchronous too).
    Sync,
    /// `commitAsync()`: sent, not waited for, never retried; it lands a round trip later, and
    /// a crash before it lands forgets it.
    Async,
}

/// What the revoke of partitions commits before they move to another member.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnRevoke {
    /// The client commits by itself what it commits at close: an auto-committing client
    /// commits in its own rebalance step (the Java client's `onJoinPrepare` commits
    /// synchronously; librdkafka commits its stored offsets on revoke).
    Client,
    /// Only an application that registered a rebalance listener (`commit-on-revoke`)
    /// commits there, what it commits at close; without one, nothing is committed and the
    /// next owner starts from the last commit.
    Hook,
    /// Nothing: the strategy has nothing left to commit.
    Nothing,
}

/// A commit strategy's rules: when it commits, what and how, at close and at a revoke.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitRules {
    /// When it commits on its own.
    pub when: CommitWhen,
    /// Which offsets those commits take (after each record: that record's next offset).
    pub takes: CommitSource,
    /// How those commits are sent.
    pub call: CommitCall,
    /// Whether poll stores each record's next offset as it hands it over: librdkafka's
    /// `enable.auto.offset.store=true`, which its auto-commit needs (the timer commits the
    /// store).
    pub stores_on_poll: bool,
    /// What `close()` commits first: the client's own last auto-commit, or the application's
    /// `commitSync()` of what it processed; `None`, nothing left to commit.
    pub on_close: Option<CommitSource>,
    /// Whether a revoke commits what `close()` would.
    pub on_revoke: OnRevoke,
    /// What a `commit()` with no arguments commits: librdkafka's commits the offset store,
    /// Java's `commitSync()` the positions.
    pub explicit: CommitSource,
}

impl CommitRules {
    /// Whether its commits wait for records to be processed (after each, or after the batch).
    pub fn after_processing(self) -> bool {
        matches!(self.when, CommitWhen::AfterEachRecord | CommitWhen::AfterBatch)
    }

    /// Whether it commits once a record is processed — `last_of_batch` when that record ends
    /// its poll's batch.
    pub fn commits_after_record(self, last_of_batch: bool) -> bool {
        match self.when {
            CommitWhen::AfterEachRecord => true,
            CommitWhen::AfterBatch => last_of_batch,
            CommitWhen::Timer | CommitWhen::InsidePoll | CommitWhen::AfterPoll => false,
        }
    }

    /// What a revoke commits, given whether the application has a rebalance hook that
    /// commits (`commit-on-revoke`).
    pub fn at_revoke(self, hook: bool) -> Option<CommitSource> {
        match self.on_revoke {
            OnRevoke::Client => self.on_close,
            OnRevoke::Hook if hook => self.on_close,
            OnRevoke::Hook | OnRevoke::Nothing => None,
        }
    }
}

/// The rules of every strategy, one row each, in [`CommitStrategy`]'s order (a test checks
/// it). Read through [`CommitStrategy::rules`].
pub const RULES: [CommitRules; 6] = [
    // AutoTimer: librdkafka's `enable.auto.commit` with `enable.auto.offset.store`. Its
    // `rd_kafka_consumer_close()` and its revoke commit the store once more; `rd_kafka_commit`
    // with no offsets commits the store.
    CommitRules {
        when: CommitWhen::Timer,
        takes: CommitSource::Stored,
        call: CommitCall::Sync,
        stores_on_poll: true,
        on_close: Some(CommitSource::Stored),
        on_revoke: OnRevoke::Client,
        explicit: CommitSource::Stored,
    },
    // AutoPoll: the Java client's `enable.auto.commit`; `close()` and `onJoinPrepare` commit
    // the positions (`maybeAutoCommitOffsetsSync`).
    CommitRules {
        when: CommitWhen::InsidePoll,
        takes: CommitSource::Position,
        call: CommitCall::Sync,
        stores_on_poll: false,
        on_close: Some(CommitSource::Position),
        on_revoke: OnRevoke::Client,
        explicit: CommitSource::Position,
    },
    // ManualBatch: `commitSync()` after the batch; the application commits what it processed
    // before `close()`, and in `onPartitionsRevoked` only if it has such a listener.
    CommitRules {
        when: CommitWhen::AfterBatch,
        takes: CommitSource::Processed,
        call: CommitCall::Sync,
        stores_on_poll: false,
        on_close: Some(CommitSource::Processed),
        on_revoke: OnRevoke::Hook,
        explicit: CommitSource::Position,
    },
    // ManualRecord: `commitSync(offset + 1)` after each record; close and revoke as above.
    CommitRules {
        when: CommitWhen::AfterEachRecord,
        takes: CommitSource::Processed,
        call: CommitCall::Sync,
        stores_on_poll: false,
        on_close: Some(CommitSource::Processed),
        on_revoke: OnRevoke::Hook,
        explicit: CommitSource::Position,
    },
    // ManualAsync: `commitAsync()` after the batch; before `close()` (and in a revoke hook)
    // the application commits synchronously, as Kafka's documentation advises.
    CommitRules {
        when: CommitWhen::AfterBatch,
        takes: CommitSource::Processed,
        call: CommitCall::Async,
        stores_on_poll: false,
        on_close: Some(CommitSource::Processed),
        on_revoke: OnRevoke::Hook,
        explicit: CommitSource::Position,
    },
    // BeforeProcess: `commitSync()` of the positions right after poll; by close or revoke
    // everything polled is committed already.
    CommitRules {
        when: CommitWhen::AfterPoll,
        takes: CommitSource::Position,
        call: CommitCall::Sync,
        stores_on_poll: false,
        on_close: None,
        on_revoke: OnRevoke::Nothing,
        explicit: CommitSource::Position,
    },
];

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

    #[test]
    fn rules_are_in_the_strategies_order() {
        use CommitStrategy::*;
        let whens = CommitStrategy::ALL.map(|s| s.rules().when);
        assert_eq!(
            whens,
            [
                CommitWhen::Timer,
                CommitWhen::InsidePoll,
                CommitWhen::AfterBatch,
                CommitWhen::AfterEachRecord,
                CommitWhen::AfterBatch,
                CommitWhen::AfterPoll,
            ]
        );
        assert_eq!(ManualAsync.rules().call, CommitCall::Async);
        assert!(CommitStrategy::ALL
            .iter()
            .all(|s| (s.rules().call == CommitCall::Async) == (*s == ManualAsync)));
    }

    /// The questions asked of a strategy answer as they did before the table.
    #[test]
    fn derived_answers() {
        use CommitStrategy::*;
        for s in CommitStrategy::ALL {
            assert_eq!(s.auto_commits(), matches!(s, AutoTimer | AutoPoll), "{s}");
            assert_eq!(
                s.fits_transactions(),
                matches!(s, ManualBatch | ManualRecord),
                "{s}"
            );
            assert_eq!(
                s.commits_after_processing(),
                matches!(s, AutoPoll | ManualBatch | ManualRecord | ManualAsync),
                "{s}"
            );
            let r = s.rules();
            assert_eq!(r.stores_on_poll, s == AutoTimer, "{s}");
            let manual = matches!(s, ManualBatch | ManualRecord | ManualAsync);
            for hook in [false, true] {
                let want = match s {
                    AutoTimer => Some(CommitSource::Stored),
                    AutoPoll => Some(CommitSource::Position),
                    _ if manual && hook => Some(CommitSource::Processed),
                    _ => None,
                };
                assert_eq!(r.at_revoke(hook), want, "{s} hook={hook}");
            }
        }
    }
}
