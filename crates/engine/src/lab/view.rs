//! The figures: a serialisable snapshot of the lab, the one source for the CLI's table, its
//! `--json`, `expect` lines and the web lab's dashboard.

use super::Lab;
use crate::audit::{AuditFigures, Progress};
use crate::clock::Millis;
use crate::consumer::ConsumerState;
use crate::error::LabError;
use crate::lab::{Consumer, Topic};
use crate::log::SegmentInfo;
use crate::offsets::OffsetKey;
use crate::record::{Offset, TopicPartition};
use crate::sink::{SinkKind, SinkStats};
use crate::strategy::{CommitStrategy, CommitWhen};
use crate::txn::IsolationLevel;
use crate::txn::TransactionalProducer;
use serde::Serialize;
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize)]
pub struct LabView {
    /// Logical time, epoch milliseconds.
    pub clock_ms: Millis,
    /// Milliseconds since the lab started.
    pub elapsed_ms: Millis,
    pub topics: Vec<TopicView>,
    pub groups: BTreeMap<String, GroupView>,
    pub consumers: Vec<ConsumerView>,
    pub consumer_offsets: ConsumerOffsetsView,
    pub transactions: Vec<TransactionView>,
    /// Share groups (KIP-932), by name: `lab/share_view.rs`.
    pub share_groups: BTreeMap<String, super::share_view::ShareGroupView>,
    pub share_consumers: Vec<super::share_view::ShareConsumerView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct TopicView {
    pub name: String,
    pub cleanup_policy: String,
    pub partitions: Vec<PartitionLogView>,
}

/// Segments a view lists per partition (the newest).
pub const MAX_VIEW_SEGMENTS: usize = 100;

#[derive(Debug, Clone, Serialize)]
pub struct PartitionLogView {
    pub partition: i32,
    pub log_start_offset: Offset,
    pub log_end_offset: Offset,
    /// The first offset of the oldest open transaction, or the log end.
    pub last_stable_offset: Offset,
    pub records: usize,
    /// How many segments the log has.
    pub segment_count: usize,
    /// The newest [`MAX_VIEW_SEGMENTS`] of them (all when there are fewer), oldest first: a log
    /// of twenty thousand segments is not twenty thousand entries on every page refresh.
    pub segments: Vec<SegmentInfo>,
    /// Transaction markers (control records) in the log.
    pub markers: usize,
    /// Data records of aborted transactions.
    pub aborted_records: usize,
    pub open_transactions: Vec<OpenTxnView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct OpenTxnView {
    pub producer_id: i64,
    pub first_offset: Offset,
}

/// A transactional producer as the transaction coordinator sees it.
#[derive(Debug, Clone, Serialize)]
pub struct TransactionView {
    pub transactional_id: String,
    pub producer_id: i64,
    pub epoch: i16,
    /// `Ready`, `Ongoing` or `TimedOut` (see `TransactionalProducer::state`).
    pub state: &'static str,
    pub timeout_ms: Millis,
    pub started_at: Option<Millis>,
    /// When the coordinator aborts the open transaction on its own.
    pub expires_at: Option<Millis>,
    /// Output partitions of the open transaction.
    pub partitions: Vec<String>,
    /// Records the open transaction has written.
    pub pending_records: usize,
    pub committed: u64,
    pub aborted: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConsumerOffsetsView {
    pub records: usize,
    pub log_end_offset: Offset,
    /// The coordinator's view: the latest committed offset per key.
    pub latest: Vec<CommittedEntry>,
}

#[derive(Debug, Clone, Serialize)]
pub struct CommittedEntry {
    pub key: String,
    pub group: String,
    pub topic: String,
    pub partition: i32,
    pub offset: Offset,
    pub metadata: String,
    pub commit_timestamp: Millis,
}

#[derive(Debug, Clone, Serialize)]
pub struct SinkView {
    pub kind: SinkKind,
    pub rows: u64,
    pub distinct_keys: u64,
    pub duplicate_rows: u64,
}

#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct AuditView {
    pub lost: u64,
    pub duplicates: u64,
    pub duplicate_rows: u64,
    pub redeliveries: u64,
    pub crash_redeliveries: u64,
    pub replays: u64,
    pub skipped: u64,
    pub deliveries: u64,
    /// Records of aborted transactions the group's application was handed.
    pub aborted_read: u64,
    /// Records that were lost when a seek or an offset reset sent the group back over them.
    pub lost_before_rewind: u64,
    /// Of those, the records applied since.
    pub replayed_since_rewind: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct PartitionView {
    pub topic: String,
    pub partition: i32,
    /// Where the group resumes: the sink's offset for a transactional sink, else Kafka's.
    pub committed: Option<Offset>,
    /// The value in `__consumer_offsets`.
    pub kafka_committed: Option<Offset>,
    pub sink_offset: Option<Offset>,
    pub log_start_offset: Offset,
    pub log_end_offset: Offset,
    /// LEO − committed (`None` while nothing is committed).
    pub lag: Option<i64>,
    pub owner: Option<String>,
    /// The owner's fetch position, if it is running.
    pub position: Option<Offset>,
    pub in_flight: Vec<Offset>,
    pub first_start: Option<Offset>,
    pub lost_ranges: Vec<(Offset, Offset)>,
    /// Half-open ranges skipped on purpose by a seek or an offset reset.
    pub skipped_ranges: Vec<(Offset, Offset)>,
    /// `[from, to_exclusive, times applied]`.
    pub delivery_counts: Vec<[i64; 3]>,
    pub audit: AuditFigures,
    /// How far a `read_committed` consumer may read: the first offset of the oldest open
    /// transaction, or the log end.
    pub last_stable_offset: Offset,
    /// Records of aborted transactions the group's application was handed
    /// (`read_uncommitted` only).
    pub aborted_read: u64,
}

#[derive(Debug, Clone, Serialize)]
pub struct GroupView {
    pub state: String,
    pub generation: i32,
    /// Member ids (`c1#2`), in join order.
    pub members: Vec<String>,
    /// Members a rebalance in progress is waiting for.
    pub waiting_for: Vec<String>,
    /// `kafka` (`__consumer_offsets`) or `sink` (transactional sink).
    pub offsets_source: &'static str,
    /// Whether a lab consumer ever opened the group's sink: a group of real clients, or one
    /// that only has offsets (committed from outside), has none.
    pub has_sink: bool,
    /// The isolation level its consumers read with.
    pub isolation: IsolationLevel,
    /// Keyed `topic-partition`, as Kafka prints a TopicPartition.
    pub committed: BTreeMap<String, Option<Offset>>,
    pub log_end_offset: BTreeMap<String, Offset>,
    pub lag: BTreeMap<String, Option<i64>>,
    pub sink: SinkView,
    pub audit: AuditView,
    pub partitions: Vec<PartitionView>,
    /// `classic` or `consumer` (Kafka 4's consumer group protocol, KIP-848).
    pub protocol: crate::group::GroupProtocol,
    /// A consumer-protocol group's epochs and each member's reconciliation; `None` for a
    /// classic group.
    pub consumer_group: Option<super::ConsumerGroupView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ConsumerView {
    pub name: String,
    pub member_id: String,
    pub group: String,
    pub topic: String,
    pub state: ConsumerState,
    pub incarnation: u32,
    pub generation: i32,
    pub strategy: CommitStrategy,
    pub sink: SinkKind,
    pub max_poll_records: usize,
    pub assignor: crate::consumer::Assignor,
    pub group_instance_id: Option<String>,
    pub auto_commit_interval_ms: Millis,
    pub auto_offset_reset: String,
    pub isolation: IsolationLevel,
    /// The output topic of a read-process-write application (`sink=kafka-tx`).
    pub output: Option<String>,
    pub assignment: Vec<AssignmentView>,
    pub in_flight: usize,
    pub pending_async_commits: usize,
    /// Milliseconds until the librdkafka auto-commit timer fires (auto-timer only).
    pub auto_commit_due_in_ms: Option<Millis>,
    /// `group.protocol` and, under the consumer protocol, `group.remote.assignor`.
    pub group_protocol: crate::group::GroupProtocol,
    pub remote_assignor: crate::group::ServerAssignor,
    /// Consumer protocol: partitions the coordinator asked it to revoke, which its next poll
    /// gives up.
    pub revoking: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
pub struct AssignmentView {
    pub topic: String,
    pub partition: i32,
    pub position: Offset,
    pub stored: Option<Offset>,
    pub processed: Option<Offset>,
}

impl Lab {
    pub fn view(&self) -> Result<LabView, LabError> {
        let mut groups = BTreeMap::new();
        for name in self.groups.keys() {
            groups.insert(name.clone(), self.group_view(name)?);
        }
        let latest = self
            .offsets
            .view()
            .iter()
            .map(|(k, v)| CommittedEntry {
                key: k.display(),
                group: k.group.clone(),
                topic: k.topic.clone(),
                partition: k.partition,
                offset: v.offset,
                metadata: v.metadata.clone(),
                commit_timestamp: v.commit_timestamp,
            })
            .collect();
        Ok(LabView {
            clock_ms: self.now(),
            elapsed_ms: self.clock.elapsed(),
            topics: self.topics.values().map(topic_view).collect(),
            groups,
            consumers: self.consumers.values().map(|c| self.consumer_view(c)).collect(),
            transactions: self.producers.values().map(transaction_view).collect(),
            consumer_offsets: ConsumerOffsetsView {
                records: self.offsets.log().record_count(),
                log_end_offset: self.offsets.log().log_end_offset(),
                latest,
            },
            share_groups: self.share_group_views()?,
            share_consumers: self.share_consumer_views(),
        })
    }

    fn consumer_view(&self, c: &Consumer) -> ConsumerView {
        ConsumerView {
            name: c.name().to_string(),
            member_id: c.member_id(),
            group: c.config.group.clone(),
            topic: c.config.topic.clone(),
            state: c.state.clone(),
            incarnation: c.incarnation,
            generation: c.generation,
            strategy: c.config.strategy,
            sink: c.config.sink,
            max_poll_records: c.config.max_poll_records,
            assignor: c.config.assignor,
            group_instance_id: c.config.group_instance_id.clone(),
            auto_commit_interval_ms: c.config.auto_commit_interval_ms,
            auto_offset_reset: c.config.auto_offset_reset.to_string(),
            isolation: c.config.isolation,
            output: c.config.output.clone(),
            assignment: c
                .assignment
                .iter()
                .map(|(tp, f)| AssignmentView {
                    topic: tp.topic.clone(),
                    partition: tp.partition,
                    position: f.position,
                    stored: f.stored,
                    processed: f.processed,
                })
                .collect(),
            in_flight: c.in_flight.len(),
            pending_async_commits: c.pending_async.len(),
            auto_commit_due_in_ms: (c.config.strategy.rules().when == CommitWhen::Timer)
                .then_some(c.next_auto_commit)
                .flatten()
                .map(|t| t - self.now()),
            group_protocol: c.config.group_protocol,
            remote_assignor: c.config.remote_assignor,
            revoking: c.revoking.iter().map(ToString::to_string).collect(),
        }
    }

    /// The figures of one group over all partitions of its topics.
    pub fn group_view(&self, name: &str) -> Result<GroupView, LabError> {
        let g = self.group(name)?;
        let stats: SinkStats = g.sink.stats()?;
        let mut partitions = Vec::new();
        for topic in &g.topics_seen() {
            let t = self.topic(topic)?;
            for p in 0..t.partitions.len() as i32 {
                partitions.push(self.partition_view(name, &TopicPartition::new(topic.clone(), p))?);
            }
        }
        let mut audit = AuditFigures::default();
        for p in &partitions {
            audit += p.audit;
        }
        let key = |p: &PartitionView| format!("{}-{}", p.topic, p.partition);
        Ok(GroupView {
            state: g.state_name().to_string(),
            generation: g.generation,
            members: g
                .members
                .iter()
                .map(|m| m.id.clone())
                .chain(
                    g.external
                        .iter()
                        .flat_map(|e| e.members.iter().map(|m| m.id.clone())),
                )
                .collect(),
            waiting_for: g.waiting_for().iter().map(|m| m.id.clone()).collect(),
            has_sink: g.sink_opened,
            offsets_source: if g.sink_kind == SinkKind::Transactional {
                "sink"
            } else {
                "kafka"
            },
            committed: partitions.iter().map(|p| (key(p), p.committed)).collect(),
            log_end_offset: partitions.iter().map(|p| (key(p), p.log_end_offset)).collect(),
            lag: partitions.iter().map(|p| (key(p), p.lag)).collect(),
            sink: SinkView {
                kind: g.sink_kind,
                rows: stats.rows,
                distinct_keys: stats.distinct_keys,
                duplicate_rows: stats.duplicate_rows,
            },
            audit: AuditView {
                lost: audit.lost,
                duplicates: audit.duplicates,
                duplicate_rows: stats.duplicate_rows,
                redeliveries: audit.redeliveries,
                crash_redeliveries: audit.crash_redeliveries,
                replays: audit.replays,
                skipped: audit.skipped,
                deliveries: audit.deliveries,
                aborted_read: partitions.iter().map(|p| p.aborted_read).sum(),
                lost_before_rewind: audit.lost_before_rewind,
                replayed_since_rewind: audit.replayed_since_rewind,
            },
            isolation: self.group_isolation(name),
            partitions,
            protocol: g.protocol(),
            consumer_group: self.consumer_group_view(name),
        })
    }

    /// The figures of one group on one partition.
    pub fn partition_view(&self, group: &str, tp: &TopicPartition) -> Result<PartitionView, LabError> {
        let g = self.group(group)?;
        let log = self.partition_log(tp)?;
        let kafka_committed = self.offsets.fetch(&OffsetKey::new(group, tp)).map(|v| v.offset);
        let sink_offset = if g.sink_kind == SinkKind::Transactional {
            g.sink.stored_offset(tp)?
        } else {
            None
        };
        // A negative committed offset is no position (consumers treat it as none): the group
        // resumes by auto.offset.reset, and has no lag to show.
        let committed = sink_offset.or(kafka_committed.filter(|&o| o >= 0));
        let owner = g.owners.get(tp).cloned();
        let running_owner = owner
            .as_ref()
            .and_then(|o| self.consumers.get(o.split('#').next().unwrap_or_default()))
            .filter(|c| c.is_running() && owner.as_deref() == Some(c.member_id().as_str()));
        // A record is not lost while a live owner is still going to deliver it: after a rewind,
        // records below the committed offset may be in flight or ahead of the position.
        let live_next = running_owner.and_then(|c| {
            let position = c.assignment.get(tp).map(|f| f.position);
            let in_flight = c
                .in_flight
                .iter()
                .filter(|f| &f.tp == tp)
                .map(|f| f.record.offset)
                .min();
            [position, in_flight].into_iter().flatten().min()
        });
        let resume = match (committed, live_next) {
            (Some(c), Some(l)) => Some(c.min(l)),
            (c, _) => c,
        };
        let isolation = self.group_isolation(group);
        let txns = self.partition_txns(tp)?;
        let hidden = txns.hidden(isolation);
        let progress = Progress {
            resume,
            log,
            hidden: &hidden,
        };
        // Records of aborted transactions this group's application was handed.
        let aborted_read = g.audit.partition(tp).map_or(0, |p| {
            txns.aborted_offsets()
                .iter()
                .filter(|&&o| p.delivered(o) > 0)
                .count() as u64
        });
        Ok(PartitionView {
            topic: tp.topic.clone(),
            partition: tp.partition,
            committed,
            kafka_committed,
            sink_offset,
            log_start_offset: log.log_start_offset(),
            log_end_offset: log.log_end_offset(),
            lag: committed.map(|c| log.log_end_offset() - c),
            position: running_owner
                .and_then(|c| c.assignment.get(tp))
                .map(|f| f.position),
            in_flight: running_owner
                .map(|c| {
                    c.in_flight
                        .iter()
                        .filter(|f| &f.tp == tp)
                        .map(|f| f.record.offset)
                        .collect()
                })
                .unwrap_or_default(),
            owner,
            first_start: g.audit.partition(tp).map(|p| p.first_start),
            lost_ranges: g.audit.lost_ranges(tp, progress),
            skipped_ranges: g
                .audit
                .partition(tp)
                .map(|p| p.skipped_ranges().to_vec())
                .unwrap_or_default(),
            delivery_counts: g
                .audit
                .partition(tp)
                .map(|p| p.delivery_runs())
                .unwrap_or_default(),
            audit: g.audit.figures(tp, progress),
            last_stable_offset: txns.last_stable_offset(log.log_end_offset()),
            aborted_read,
        })
    }

    /// The isolation level the group's consumers read with (`read_committed` if any does).
    pub fn group_isolation(&self, group: &str) -> IsolationLevel {
        if self
            .consumers
            .values()
            .any(|c| c.config.group == group && c.config.isolation == IsolationLevel::ReadCommitted)
        {
            IsolationLevel::ReadCommitted
        } else {
            IsolationLevel::ReadUncommitted
        }
    }
}

fn topic_view(t: &Topic) -> TopicView {
    TopicView {
        name: t.name.clone(),
        cleanup_policy: t.config.cleanup_policy.to_string(),
        partitions: t
            .partitions
            .iter()
            .enumerate()
            .zip(&t.txns)
            .map(|((p, log), txns)| {
                let mut segments = log.segments();
                PartitionLogView {
                    partition: p as i32,
                    log_start_offset: log.log_start_offset(),
                    log_end_offset: log.log_end_offset(),
                    last_stable_offset: txns.last_stable_offset(log.log_end_offset()),
                    records: log.record_count(),
                    segment_count: segments.len(),
                    segments: segments.split_off(segments.len().saturating_sub(MAX_VIEW_SEGMENTS)),
                    markers: txns.markers().len(),
                    aborted_records: txns.aborted_offsets().len(),
                    open_transactions: txns
                        .open_transactions()
                        .into_iter()
                        .map(|(producer_id, first_offset)| OpenTxnView {
                            producer_id,
                            first_offset,
                        })
                        .collect(),
                }
            })
            .collect(),
    }
}

fn transaction_view(p: &TransactionalProducer) -> TransactionView {
    TransactionView {
        transactional_id: p.transactional_id.clone(),
        producer_id: p.producer_id,
        epoch: p.epoch,
        state: p.state(),
        timeout_ms: p.timeout_ms,
        started_at: p.ongoing.as_ref().map(|t| t.started_at),
        expires_at: p.expires_at(),
        partitions: p
            .ongoing
            .as_ref()
            .map(|t| t.partitions().iter().map(ToString::to_string).collect())
            .unwrap_or_default(),
        pending_records: p.ongoing.as_ref().map_or(0, |t| t.writes.len()),
        committed: p.committed,
        aborted: p.aborted,
    }
}
