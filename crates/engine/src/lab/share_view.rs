//! The share groups' figures (KIP-932) in the lab's view: per share group its members, state,
//! configs and audit; per share partition the SPSO, the SPEO and every record of the in-flight
//! window with its delivery state, owner, lock deadline and delivery count — and the records the
//! SPSO has passed, so a page can draw what happened to each (acknowledged, or archived).
//! `offsetlab run --json` and `GET /api/state` carry it as `share_groups` and `share_consumers`.

use super::Lab;
use crate::clock::Millis;
use crate::consumer::ConsumerState;
use crate::error::LabError;
use crate::record::{Offset, TopicPartition};
use crate::share::partition::{ArchiveReason, Completion};
use crate::share::{
    AcknowledgementMode, DeliveryState, ShareConsumer, ShareFigures, ShareGroup, ShareGroupConfig,
    SharePartition, SharePartitionAudit,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// Records behind the SPSO a share partition's view lists (the newest): a group that went
/// through a million records is not a million entries on every page refresh.
pub const MAX_VIEW_COMPLETED: usize = 200;

#[derive(Debug, Clone, Serialize)]
pub struct ShareGroupView {
    /// `Empty` or `Stable`.
    pub state: &'static str,
    /// The group epoch: bumped on every membership change.
    pub epoch: i32,
    pub members: Vec<ShareMemberView>,
    /// The group configs (`share.auto.offset.reset`, `share.record.lock.duration.ms`,
    /// `share.delivery.count.limit`, `share.partition.max.record.locks`,
    /// `share.session.timeout.ms`), named by field.
    pub config: ShareGroupConfig,
    /// The audit over every share partition of the group.
    pub audit: ShareAuditView,
    pub partitions: Vec<SharePartitionView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct ShareMemberView {
    /// `s1#1`: a share consumer's incarnation.
    pub id: String,
    /// The share consumer, or a real client's `client.id`.
    pub consumer: String,
    /// The topics it subscribes to, comma-separated.
    pub topic: String,
    /// A real client's member, joined through the Kafka listener.
    pub client: bool,
    /// When it crashed: it stays a member, silent, until its session times out.
    pub crashed_at: Option<Millis>,
    /// When `share.session.timeout.ms` removes a crashed member.
    pub session_expires_at: Option<Millis>,
    /// `topic-partition`, as Kafka prints a TopicPartition.
    pub assignment: Vec<String>,
}

/// The share audit (`docs/SCENARIOS.md`), and the redeliveries the page's card shows.
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq, Eq)]
pub struct ShareAuditView {
    #[serde(flatten)]
    pub figures: ShareFigures,
    /// Records acquired more than once.
    pub redelivered_records: u64,
    /// Acquisitions beyond each record's first: Σ (delivery count − 1).
    pub redeliveries: u64,
}

impl std::ops::Add for ShareAuditView {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            figures: self.figures + o.figures,
            redelivered_records: self.redelivered_records + o.redelivered_records,
            redeliveries: self.redeliveries + o.redeliveries,
        }
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct SharePartitionView {
    pub topic: String,
    pub partition: i32,
    /// The share-partition start offset: every record below it is delivery-complete. `None`
    /// until the group's first fetch initialises the partition.
    pub spso: Option<Offset>,
    /// The end of the in-flight window, exclusive (the next offset never acquired).
    pub speo: Option<Offset>,
    pub log_start_offset: Offset,
    pub log_end_offset: Offset,
    /// SPEO − SPSO: what `share.partition.max.record.locks` limits.
    pub in_flight: u64,
    pub available: usize,
    pub acquired: usize,
    pub acknowledged: usize,
    pub archived: usize,
    /// The window `[SPSO, SPEO)`, by offset.
    pub records: Vec<ShareRecordView>,
    /// Records behind the SPSO whose delivery completed, the newest [`MAX_VIEW_COMPLETED`],
    /// oldest first: acknowledged or archived.
    pub completed: Vec<ShareRecordView>,
    /// How many records behind the SPSO `completed` leaves out.
    pub completed_not_listed: usize,
    pub audit: ShareAuditView,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ShareRecordView {
    pub offset: Offset,
    pub state: DeliveryState,
    pub delivery_count: u16,
    /// The member holding it while it is acquired.
    pub owner: Option<String>,
    /// When its acquisition lock expires (the logical clock, epoch ms) while acquired.
    pub lock_expires_at: Option<Millis>,
    /// Why an archived record was archived: `rejected`, `delivery-limit` or `log-start`.
    pub archive_reason: Option<ArchiveReason>,
    /// How many times the group's application applied it (a `process` line).
    pub applied: u32,
}

#[derive(Debug, Clone, Serialize)]
pub struct ShareConsumerView {
    pub name: String,
    pub member_id: String,
    pub group: String,
    pub topic: String,
    pub state: ConsumerState,
    pub incarnation: u32,
    pub acknowledgement_mode: AcknowledgementMode,
    pub max_poll_records: usize,
    pub acquire_mode: crate::share::AcquireMode,
    /// What its polls handed over and it has not acknowledged.
    pub held: Vec<HeldRecordView>,
}

#[derive(Debug, Clone, Serialize)]
pub struct HeldRecordView {
    pub topic: String,
    pub partition: i32,
    pub offset: Offset,
    pub delivery_count: u16,
    pub processed: bool,
}

impl Lab {
    /// Every share group's view, by name.
    pub fn share_group_views(&self) -> Result<BTreeMap<String, ShareGroupView>, LabError> {
        self.share
            .groups
            .iter()
            .map(|(name, g)| Ok((name.clone(), self.share_group_view(g)?)))
            .collect()
    }

    fn share_group_view(&self, g: &ShareGroup) -> Result<ShareGroupView, LabError> {
        // The partitions the group reads or is assigned, each once, in order.
        // A partition whose state was forgotten (deleted offsets, a negative start offset) keeps
        // its audit: its figures stay on the page.
        let mut tps: Vec<TopicPartition> = g
            .partitions
            .keys()
            .chain(g.audit.keys())
            .chain(g.unstarted.keys())
            .cloned()
            .collect();
        for m in &g.members {
            tps.extend(m.assignment.iter().cloned());
        }
        tps.sort();
        tps.dedup();
        let mut partitions = Vec::new();
        for tp in tps {
            let log = self.partition_log(&tp)?;
            let audit = g.audit.get(&tp);
            partitions.push(share_partition_view(
                &tp,
                g.partitions.get(&tp),
                audit,
                (log.log_start_offset(), log.log_end_offset()),
            ));
        }
        let audit = partitions
            .iter()
            .map(|p| p.audit)
            .fold(ShareAuditView::default(), |a, b| a + b);
        Ok(ShareGroupView {
            state: g.state_name(),
            epoch: g.epoch,
            members: g
                .members
                .iter()
                .map(|m| ShareMemberView {
                    id: m.id.clone(),
                    consumer: m.consumer.clone(),
                    topic: m.topics.join(","),
                    client: m.client,
                    crashed_at: m.crashed_at,
                    session_expires_at: m.crashed_at.map(|t| t + g.config.session_timeout_ms),
                    assignment: m.assignment.iter().map(ToString::to_string).collect(),
                })
                .collect(),
            config: g.config.clone(),
            audit,
            partitions,
        })
    }

    /// Every share consumer's view.
    pub fn share_consumer_views(&self) -> Vec<ShareConsumerView> {
        self.share.consumers.values().map(share_consumer_view).collect()
    }
}

fn share_consumer_view(c: &ShareConsumer) -> ShareConsumerView {
    ShareConsumerView {
        name: c.config.name.clone(),
        member_id: c.member_id(),
        group: c.config.group.clone(),
        topic: c.config.topic.clone(),
        state: c.state.clone(),
        incarnation: c.incarnation,
        acknowledgement_mode: c.config.acknowledgement_mode,
        max_poll_records: c.config.max_poll_records,
        acquire_mode: c.config.acquire_mode,
        held: c
            .held
            .iter()
            .map(|r| HeldRecordView {
                topic: r.tp.topic.clone(),
                partition: r.tp.partition,
                offset: r.offset,
                delivery_count: r.delivery_count,
                processed: r.processed,
            })
            .collect(),
    }
}

fn share_partition_view(
    tp: &TopicPartition,
    p: Option<&SharePartition>,
    audit: Option<&SharePartitionAudit>,
    (log_start_offset, log_end_offset): (Offset, Offset),
) -> SharePartitionView {
    let applied = |o: Offset| audit.and_then(|a| a.applied.get(&o).copied()).unwrap_or(0);
    let records: Vec<ShareRecordView> = p
        .map(|p| {
            p.records()
                .map(|(offset, r)| ShareRecordView {
                    offset,
                    state: r.state,
                    delivery_count: r.delivery_count,
                    owner: r.lock.as_ref().map(|l| l.member.clone()),
                    lock_expires_at: r.lock.as_ref().map(|l| l.expires_at),
                    archive_reason: audit
                        .and_then(|a| a.completed.get(&offset))
                        .and_then(|(how, _)| reason(*how)),
                    applied: applied(offset),
                })
                .collect()
        })
        .unwrap_or_default();
    let spso = p.map(|p| p.start_offset);
    let behind: Vec<ShareRecordView> = audit
        .map(|a| {
            a.completed
                .range(..spso.unwrap_or(Offset::MIN))
                // A record an administrator skipped was never delivered: nothing to draw.
                .filter(|(_, (how, _))| *how != Completion::Skipped)
                .map(|(&offset, &(how, delivery_count))| ShareRecordView {
                    offset,
                    state: match how {
                        Completion::Accepted => DeliveryState::Acknowledged,
                        Completion::Archived { .. } | Completion::Skipped => DeliveryState::Archived,
                    },
                    delivery_count,
                    owner: None,
                    lock_expires_at: None,
                    archive_reason: reason(how),
                    applied: applied(offset),
                })
                .collect()
        })
        .unwrap_or_default();
    let skip = behind.len().saturating_sub(MAX_VIEW_COMPLETED);
    // Redeliveries over every record the group reached: the window's counts, else the count
    // its delivery completed with.
    let mut counts: BTreeMap<Offset, u16> = audit
        .map(|a| a.completed.iter().map(|(&o, &(_, n))| (o, n)).collect())
        .unwrap_or_default();
    counts.extend(records.iter().map(|r| (r.offset, r.delivery_count)));
    let figures = audit.map(SharePartitionAudit::figures).unwrap_or_default();
    let count = |s: DeliveryState| records.iter().filter(|r| r.state == s).count();
    SharePartitionView {
        topic: tp.topic.clone(),
        partition: tp.partition,
        spso,
        speo: p.map(|p| p.end_offset),
        log_start_offset,
        log_end_offset,
        in_flight: p.map_or(0, SharePartition::in_flight),
        available: count(DeliveryState::Available),
        acquired: count(DeliveryState::Acquired),
        acknowledged: count(DeliveryState::Acknowledged),
        archived: count(DeliveryState::Archived),
        completed_not_listed: skip,
        completed: behind.into_iter().skip(skip).collect(),
        audit: ShareAuditView {
            figures,
            redelivered_records: counts.values().filter(|&&n| n > 1).count() as u64,
            redeliveries: counts.values().map(|&n| u64::from(n.saturating_sub(1))).sum(),
        },
        records,
    }
}

fn reason(how: Completion) -> Option<ArchiveReason> {
    match how {
        Completion::Accepted | Completion::Skipped => None,
        Completion::Archived { reason } => Some(reason),
    }
}
