//! Commits: what each strategy commits and when, the coordinator's fence, synchronous and
//! asynchronous commits landing in `__consumer_offsets`.

use super::Lab;
use crate::consumer::PendingCommit;
use crate::error::LabError;
use crate::group::{check_commit, EpochFenced, Fenced};
use crate::narrative::EventKind;
use crate::offsets::{OffsetAndMetadata, OffsetKey};
use crate::record::{Offset, TopicPartition};
pub(crate) use crate::strategy::CommitSource;

impl Lab {
    /// An explicit `commitSync()`: commits the current positions, processed or not.
    /// With librdkafka (`auto-timer`), `commit()` commits the stored offsets, which also cover
    /// everything handed out.
    pub fn commit(&mut self, name: &str) -> Result<(), LabError> {
        if self.is_share_consumer(name) {
            return self.share_commit(name);
        }
        let c = self.running(name, "a dead consumer cannot commit")?;
        if c.config.is_transactional_producer() {
            self.commit_transaction(name, "commitTransaction");
        } else {
            let source = c.config.strategy.rules().explicit;
            let why = match source {
                CommitSource::Stored => "explicit commit() of the stored offsets",
                CommitSource::Position | CommitSource::Processed => "explicit commitSync()",
            };
            self.commit_from(name, source, why, false);
        }
        Ok(())
    }

    /// The commit a strategy makes at close or in the revoke hook of a rebalance. Returns
    /// whether the consumer crashed (explorer) while doing it.
    pub(crate) fn close_commit(&mut self, name: &str, at_revoke: bool) -> bool {
        let Some(c) = self.consumers.get(name) else {
            return false;
        };
        if c.config.is_transactional_producer() {
            if at_revoke && !c.config.commit_on_revoke {
                // The partitions move on: the open transaction is aborted, and whoever gets
                // them processes the input again.
                if self.producers.get(name).is_some_and(|p| p.ongoing.is_some()) {
                    let _ = self.abort_transaction(name);
                }
                return false;
            }
            return self.commit_transaction(name, "commitTransaction at close/revoke");
        }
        if !c.config.commits_to_kafka() {
            return false;
        }
        let rules = c.config.strategy.rules();
        let source = if at_revoke {
            rules.at_revoke(c.config.commit_on_revoke)
        } else {
            rules.on_close
        };
        let Some(source) = source else {
            return false;
        };
        let why = match source {
            CommitSource::Stored => "auto-commit of stored offsets at close/revoke",
            CommitSource::Position => "auto-commit of consumed offsets at close/revoke",
            CommitSource::Processed => "commitSync of processed offsets at close/revoke",
        };
        self.commit_from(name, source, why, true)
    }

    /// The librdkafka auto-commit timer fired: it commits what the strategy's commits take
    /// (the offset store).
    pub(crate) fn timer_commit(&mut self, name: &str) -> bool {
        let Some(source) = self.consumers.get(name).map(|c| c.config.strategy.rules().takes) else {
            return false;
        };
        self.commit_from(name, source, "auto-commit timer", true)
    }

    /// Commits the offsets `source` names for all assigned partitions. Returns whether the
    /// consumer crashed (explorer) right after.
    pub(crate) fn commit_from(
        &mut self,
        name: &str,
        source: CommitSource,
        why: &str,
        only_changes: bool,
    ) -> bool {
        let Some(c) = self.consumers.get(name) else {
            return false;
        };
        let offsets: Vec<(TopicPartition, Offset)> = c
            .assignment
            .iter()
            .filter_map(|(tp, f)| {
                let o = match source {
                    CommitSource::Position => Some(f.position),
                    CommitSource::Stored => f.stored,
                    CommitSource::Processed => f.processed,
                }?;
                Some((tp.clone(), o))
            })
            .collect();
        self.commit_offsets(
            name,
            offsets,
            why,
            only_changes,
            source != CommitSource::Processed,
        )
    }

    /// A synchronous commit of explicit offsets, checked against the group's generation.
    /// Returns whether the consumer crashed (explorer) right after.
    /// `handed_over`: the offsets come from what poll handed out (a position, librdkafka's
    /// stored offsets), not from what was processed — so records they pass unprocessed are the
    /// application's loss.
    pub(crate) fn commit_offsets(
        &mut self,
        name: &str,
        offsets: Vec<(TopicPartition, Offset)>,
        why: &str,
        only_changes: bool,
        handed_over: bool,
    ) -> bool {
        // Requests on one connection are handled in order: async commits sent earlier land first.
        if self
            .consumers
            .get(name)
            .is_some_and(|c| !c.pending_async.is_empty())
            && self.land_async(name, i64::MAX)
        {
            return true;
        }
        let Some(c) = self.consumers.get(name) else {
            return false;
        };
        let group = c.config.group.clone();
        // A position sought past the log end is not validated until the next fetch resets it;
        // like the Java client, only positions inside the log are committed.
        let offsets: Vec<(TopicPartition, Offset)> = offsets
            .into_iter()
            .filter(|(tp, o)| self.partition_log(tp).is_ok_and(|log| *o <= log.log_end_offset()))
            .filter(|(tp, o)| {
                !only_changes || self.offsets.fetch(&OffsetKey::new(&group, tp)).map(|v| v.offset) != Some(*o)
            })
            .collect();
        if offsets.is_empty() {
            return false;
        }
        let generation = c.generation;
        let offsets = self.accepted_offsets(name, generation, offsets);
        if offsets.is_empty() {
            return false;
        }
        self.write_commit(name, &offsets, why, handed_over);
        self.effect(name)
    }

    /// Of `offsets` committed by `name` at `generation` (a member epoch under the consumer
    /// protocol), those the coordinator stores. A classic group takes all or none
    /// ([`Lab::accepts_commit`]). A consumer group checks each partition (Kafka 4.4, KIP-1251): a
    /// commit at the member's epoch, or at an older one no older than the epoch it was given that
    /// partition at, is its own; a partition it has given away since — the zombie's part — is
    /// refused with STALE_MEMBER_EPOCH, and the rest is stored.
    pub(crate) fn accepted_offsets(
        &mut self,
        name: &str,
        generation: i32,
        offsets: Vec<(TopicPartition, Offset)>,
    ) -> Vec<(TopicPartition, Offset)> {
        let per_partition = self.consumers.get(name).and_then(|c| {
            let member = c.member_id();
            let cg = self.groups.get(&c.config.group)?.consumer.as_ref()?;
            let m = cg.members.get(&member)?;
            (!m.classic && generation < m.member_epoch)
                .then(|| (member, c.config.group.clone(), m.member_epoch))
        });
        let Some((member, group, current)) = per_partition else {
            return if self.accepts_commit(name, generation) {
                offsets
            } else {
                Vec::new()
            };
        };
        let Some(cg) = self.groups.get(&group).and_then(|g| g.consumer.as_ref()) else {
            return Vec::new();
        };
        let (kept, fenced): (Vec<_>, Vec<_>) = offsets
            .into_iter()
            .partition(|(tp, _)| cg.check_commit_partition(&member, generation, tp).is_ok());
        if !fenced.is_empty() {
            let names: Vec<String> = fenced.iter().map(|(tp, _)| tp.to_string()).collect();
            self.say(
                EventKind::Refused,
                format!(
                    "commit of {} from {member} rejected with STALE_MEMBER_EPOCH: it carries member epoch {generation}, and {member} (now at epoch {current}) no longer owns {} — the zombie's part is fenced{}",
                    names.join(", "),
                    if names.len() == 1 { "it" } else { "them" },
                    if kept.is_empty() {
                        String::new()
                    } else {
                        format!("; its partitions it had by epoch {generation} are still its own (KIP-1251) and stored")
                    }
                ),
            );
        }
        kept
    }

    /// The coordinator's check: only a current member of the current generation may commit.
    pub(crate) fn accepts_commit(&mut self, name: &str, generation: i32) -> bool {
        let Some(c) = self.consumers.get(name) else {
            return false;
        };
        let member = c.member_id();
        let group = c.config.group.clone();
        let Some(g) = self.groups.get(&group) else {
            return false;
        };
        if let Some(cg) = &g.consumer {
            let why = match cg.check_commit(&member, generation) {
                Ok(()) => return true,
                Err(EpochFenced::UnknownMember) => format!(
                    "commit from {member} rejected with UNKNOWN_MEMBER_ID: consumer group {group} has no such member (the zombie is fenced)"
                ),
                Err(EpochFenced::StaleMemberEpoch { current }) => format!(
                    "commit from {member} rejected with STALE_MEMBER_EPOCH: it carries member epoch {generation}, the member is at epoch {current} in group {group}"
                ),
                Err(EpochFenced::IllegalGeneration { current }) => format!(
                    "commit from {member} rejected with ILLEGAL_GENERATION: a classic member of consumer group {group}, at generation {current}, not {generation}"
                ),
            };
            self.say(EventKind::Refused, why);
            return false;
        }
        let why = match check_commit(g.state(), g.is_member(&member), generation, g.generation) {
            Ok(()) => return true,
            Err(Fenced::UnknownMember) => format!(
                "commit from {member} rejected with UNKNOWN_MEMBER_ID: it is no longer a member of {group} (the zombie is fenced)"
            ),
            Err(Fenced::IllegalGeneration { current }) => format!(
                "commit from {member} rejected with ILLEGAL_GENERATION: it was made in generation {generation}, group {group} is at generation {current}"
            ),
            Err(Fenced::RebalanceInProgress) => format!(
                "commit from {member} rejected with REBALANCE_IN_PROGRESS: group {group} is settling its assignment"
            ),
        };
        self.say(EventKind::Refused, why);
        false
    }

    pub(crate) fn write_commit(
        &mut self,
        name: &str,
        offsets: &[(TopicPartition, Offset)],
        why: &str,
        handed_over: bool,
    ) {
        let now = self.now();
        let Some(c) = self.consumers.get(name) else {
            return;
        };
        let member = c.member_id();
        let group = c.config.group.clone();
        let strategy = c.config.strategy;
        let mut warnings = Vec::new();
        // Records handed to the application and committed over unprocessed are the
        // application's loss, even inside a range that was once skipped on purpose.
        let committed_over: Vec<(TopicPartition, Offset)> = offsets
            .iter()
            .flat_map(|(tp, o)| {
                c.in_flight
                    .iter()
                    .filter(move |f| &f.tp == tp && f.record.offset < *o)
                    .map(|f| (f.tp.clone(), f.record.offset))
            })
            .collect();
        for (tp, o) in offsets {
            let unprocessed = c.unprocessed_below(tp, *o);
            if unprocessed > 0 {
                warnings.push(format!(
                    "{why} advanced {group}/{}/{} to {o} while {unprocessed} polled record(s) were unprocessed: if {member} dies now they are skipped for good",
                    tp.topic, tp.partition
                ));
            }
        }
        if handed_over {
            if let Some(g) = self.groups.get_mut(&group) {
                for (tp, o) in &committed_over {
                    g.audit.unskip(tp, *o, o + 1);
                }
            }
        }
        let mut parts = Vec::new();
        for (tp, o) in offsets {
            let key = OffsetKey::new(&group, tp);
            let at = self.offsets.commit(
                key.clone(),
                OffsetAndMetadata {
                    offset: *o,
                    leader_epoch: -1,
                    metadata: format!("{member} {strategy}"),
                    commit_timestamp: now,
                },
                now,
            );
            parts.push(format!(
                "{} = {o} (record @{at} of __consumer_offsets)",
                key.display()
            ));
        }
        self.say(
            EventKind::Commit,
            format!("{why}: {member} committed {}", parts.join(", ")),
        );
        for w in warnings {
            self.say(EventKind::Warning, w);
        }
    }

    /// `commitAsync()` of the processed offsets: it lands after the commit latency.
    pub(crate) fn send_async(&mut self, name: &str) -> bool {
        let now = self.now();
        let Some(c) = self.consumers.get_mut(name) else {
            return false;
        };
        let offsets: Vec<(TopicPartition, Offset)> = c
            .assignment
            .iter()
            .filter_map(|(tp, f)| f.processed.map(|o| (tp.clone(), o)))
            .collect();
        if offsets.is_empty() {
            return false;
        }
        let lands_at = now + c.config.async_commit_latency_ms;
        let generation = c.generation;
        let member = c.member_id();
        let text: Vec<String> = offsets.iter().map(|(tp, o)| format!("{tp} = {o}")).collect();
        c.pending_async.push(PendingCommit {
            lands_at,
            offsets,
            generation,
        });
        self.say(
            EventKind::Commit,
            format!(
                "{member} sent commitAsync({}); it lands at {} unless {member} dies first",
                text.join(", "),
                crate::clock::format_instant(lands_at)
            ),
        );
        self.effect(name)
    }

    /// Async commits of `name` due by `now` land (or are fenced).
    pub(crate) fn land_async(&mut self, name: &str, now: i64) -> bool {
        let Some(c) = self.consumers.get_mut(name) else {
            return false;
        };
        let (due, rest): (Vec<PendingCommit>, Vec<PendingCommit>) =
            c.pending_async.drain(..).partition(|p| p.lands_at <= now);
        c.pending_async = rest;
        for p in due {
            let offsets = self.accepted_offsets(name, p.generation, p.offsets);
            if !offsets.is_empty() {
                self.write_commit(name, &offsets, "commitAsync (landed)", false);
                if self.effect(name) {
                    return true;
                }
            }
        }
        false
    }
}
