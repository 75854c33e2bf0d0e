//! `expect [group=G] [topic=T] [partition=P] [consumer=C] KEY=VALUE …`
//!
//! A claim about the lab's figures at this point of the script. Group keys: `lost`,
//! `duplicates`, `duplicate-rows`, `redeliveries`, `crash-redeliveries`, `replays`, `skipped`,
//! `deliveries`, `sink-rows`, `distinct-keys`, `committed`, `lag`, `aborted-read` (records of
//! aborted transactions the group was handed), `group-state` (Kafka's name of the group's
//! state: `Empty`, `PreparingRebalance`, `Stable`, or `Dead` for a group the coordinator does
//! not have), `metadata` (the string committed with the offset). Log keys: `log-end-offset`,
//! `log-start-offset`, `last-stable-offset`. Consumer keys: `state`, `position`, `in-flight`,
//! `generation`, `polled` (the offsets its last poll handed over: `4..7,9`, `-` for none).
//! Offsets that do not exist are written `-`.
//!
//! Kafka 4's consumer protocol (KIP-848): the group keys `group-epoch` and `group-protocol`
//! (`classic` or `consumer`); the consumer keys `member-epoch`, `member-state` (`stable`,
//! `unrevoked-partitions`, `unreleased-partitions`), and the partitions of its topic it is
//! `assigned` (owns and fetches), `revoking` (must give up at its next poll) and `awaiting` (the
//! target gives it, another member has not released) — written `0,2,5`, `-` for none
//! (`expect_epochs.rs`).
//!
//! With `share-group=G` the keys are a share group's (KIP-932): `spso`, `speo`, `in-flight`
//! (SPEO − SPSO), `acquired`, `available` (records of the window in that state), `archived`,
//! `acquisitions`, `lost`, `duplicates`, `deliveries`, `skipped` (the audit, cumulative),
//! `group-state`; and with `offset=O` one record's `record-state`, `delivery-count`, `owner`.
//!
//! `group` may be left out when the lab has one group; `topic` when the group reads one topic;
//! `partition` when the topic has one partition (group counts are summed over partitions when it
//! is left out).

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use offsetlab_engine::lab::{GroupView, PartitionView};
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

use super::ApplyError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExpectKey {
    Lost,
    Duplicates,
    DuplicateRows,
    Redeliveries,
    CrashRedeliveries,
    Replays,
    Skipped,
    Deliveries,
    SinkRows,
    DistinctKeys,
    Committed,
    Lag,
    LogEndOffset,
    LogStartOffset,
    LastStableOffset,
    AbortedRead,
    State,
    Position,
    InFlight,
    Generation,
    GroupState,
    Metadata,
    Polled,
    Spso,
    Speo,
    Acquired,
    Available,
    Archived,
    Acquisitions,
    RecordState,
    DeliveryCount,
    Owner,
    GroupEpoch,
    GroupProtocol,
    MemberEpoch,
    MemberState,
    Assigned,
    Revoking,
    Awaiting,
}

const KEYS: [(&str, ExpectKey); 39] = [
    ("lost", ExpectKey::Lost),
    ("duplicates", ExpectKey::Duplicates),
    ("duplicate-rows", ExpectKey::DuplicateRows),
    ("redeliveries", ExpectKey::Redeliveries),
    ("crash-redeliveries", ExpectKey::CrashRedeliveries),
    ("replays", ExpectKey::Replays),
    ("skipped", ExpectKey::Skipped),
    ("deliveries", ExpectKey::Deliveries),
    ("sink-rows", ExpectKey::SinkRows),
    ("distinct-keys", ExpectKey::DistinctKeys),
    ("committed", ExpectKey::Committed),
    ("lag", ExpectKey::Lag),
    ("log-end-offset", ExpectKey::LogEndOffset),
    ("log-start-offset", ExpectKey::LogStartOffset),
    ("last-stable-offset", ExpectKey::LastStableOffset),
    ("aborted-read", ExpectKey::AbortedRead),
    ("state", ExpectKey::State),
    ("position", ExpectKey::Position),
    ("in-flight", ExpectKey::InFlight),
    ("generation", ExpectKey::Generation),
    ("group-state", ExpectKey::GroupState),
    ("metadata", ExpectKey::Metadata),
    ("polled", ExpectKey::Polled),
    ("spso", ExpectKey::Spso),
    ("speo", ExpectKey::Speo),
    ("acquired", ExpectKey::Acquired),
    ("available", ExpectKey::Available),
    ("archived", ExpectKey::Archived),
    ("acquisitions", ExpectKey::Acquisitions),
    ("record-state", ExpectKey::RecordState),
    ("delivery-count", ExpectKey::DeliveryCount),
    ("owner", ExpectKey::Owner),
    ("group-epoch", ExpectKey::GroupEpoch),
    ("group-protocol", ExpectKey::GroupProtocol),
    ("member-epoch", ExpectKey::MemberEpoch),
    ("member-state", ExpectKey::MemberState),
    ("assigned", ExpectKey::Assigned),
    ("revoking", ExpectKey::Revoking),
    ("awaiting", ExpectKey::Awaiting),
];

impl ExpectKey {
    pub fn name(self) -> &'static str {
        KEYS.iter().find(|(_, k)| *k == self).map_or("?", |(n, _)| n)
    }

    fn is_consumer_key(self) -> bool {
        matches!(
            self,
            Self::State | Self::Position | Self::InFlight | Self::Generation | Self::Polled
        ) || self.is_member_key()
    }

    /// A consumer-protocol member's keys (KIP-848).
    pub(super) fn is_member_key(self) -> bool {
        matches!(
            self,
            Self::MemberEpoch | Self::MemberState | Self::Assigned | Self::Revoking | Self::Awaiting
        )
    }

    /// Keys whose value is text, not a number (or `-`).
    fn is_text(self) -> bool {
        matches!(
            self,
            Self::State
                | Self::GroupState
                | Self::Metadata
                | Self::Polled
                | Self::RecordState
                | Self::Owner
                | Self::GroupProtocol
                | Self::MemberState
                | Self::Assigned
                | Self::Revoking
                | Self::Awaiting
        )
    }

    /// Keys only a share group has (`share-group=G`).
    pub fn is_share_only(self) -> bool {
        matches!(
            self,
            Self::Spso
                | Self::Speo
                | Self::Acquired
                | Self::Available
                | Self::Archived
                | Self::Acquisitions
                | Self::RecordState
                | Self::DeliveryCount
                | Self::Owner
        )
    }

    /// Keys of one record of a share partition (`offset=O`).
    pub fn is_record_key(self) -> bool {
        matches!(self, Self::RecordState | Self::DeliveryCount | Self::Owner)
    }

    /// Keys a share group answers besides its own.
    fn is_share_key(self) -> bool {
        self.is_share_only()
            || matches!(
                self,
                Self::Lost
                    | Self::Duplicates
                    | Self::Deliveries
                    | Self::Skipped
                    | Self::InFlight
                    | Self::GroupState
            )
    }

    fn is_log_key(self) -> bool {
        matches!(
            self,
            Self::LogEndOffset | Self::LogStartOffset | Self::LastStableOffset
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expect {
    pub group: Option<String>,
    /// A share group's figures instead of a consumer group's.
    pub share_group: Option<String>,
    /// One record of a share partition (`record-state`, `delivery-count`, `owner`).
    pub offset: Option<i64>,
    pub topic: Option<String>,
    pub partition: Option<i32>,
    pub consumer: Option<String>,
    pub checks: Vec<(ExpectKey, String)>,
}

impl Expect {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.option("group");
        let share_group = args.option("share-group");
        let offset = args.parsed("offset", |v| {
            crate::units::count(v, i64::MAX as u64).map(|o| o as i64)
        })?;
        let topic = args.option("topic");
        let partition = args.parsed("partition", |v| crate::units::count(v, 10_000).map(|p| p as i32))?;
        let consumer = args.option("consumer");
        let mut checks = Vec::new();
        for (k, v) in args.take_options() {
            let key = KEYS
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, key)| *key)
                .ok_or_else(|| {
                    ParseError::new(format!(
                        "expect: unknown expect key '{k}' (known: {})",
                        KEYS.map(|(n, _)| n).join(", ")
                    ))
                })?;
            if !key.is_text() && v != "-" && v.parse::<i64>().is_err() {
                return Err(ParseError::new(format!(
                    "expect: {k}={v}: expected a number (or - for none)"
                )));
            }
            if key.is_share_only() && share_group.is_none() {
                return Err(ParseError::new(format!(
                    "expect: {k} is a share group's figure: add share-group=G"
                )));
            }
            if share_group.is_some() && !key.is_share_key() {
                return Err(ParseError::new(format!(
                    "expect: {k} is not a share group's figure"
                )));
            }
            if key.is_record_key() != offset.is_some() {
                return Err(ParseError::new(format!(
                    "expect: {k}: record-state, delivery-count and owner need offset=O, and offset=O takes only them"
                )));
            }
            checks.push((key, v));
        }
        if group.is_some() && share_group.is_some() {
            return Err(ParseError::new("expect: group= or share-group=, not both"));
        }
        if checks.is_empty() {
            return Err(ParseError::new(
                "expect: nothing to check (add KEY=VALUE, e.g. lost=0)",
            ));
        }
        Ok(Self {
            group,
            share_group,
            offset,
            topic,
            partition,
            consumer,
            checks,
        })
    }

    /// Checks every claim; all failures are reported together.
    pub fn check(&self, lab: &Lab) -> Result<(), ApplyError> {
        let mut failures = Vec::new();
        for (key, expected) in &self.checks {
            let actual = self.actual(lab, *key)?;
            if &actual != expected {
                failures.push(format!("{} expected {expected}, got {actual}", key.name()));
            }
        }
        if failures.is_empty() {
            Ok(())
        } else {
            Err(ApplyError::Expectation(failures.join("; ")))
        }
    }

    /// The value of `key` in the lab now, as text.
    pub fn actual(&self, lab: &Lab, key: ExpectKey) -> Result<String, LabError> {
        if let Some(group) = &self.share_group {
            return super::expect_share::share_actual(self, lab, key, group);
        }
        if key.is_consumer_key() {
            return self.consumer_actual(lab, key);
        }
        if key.is_log_key() && self.group.is_none() && self.topic.is_some() {
            let topic = self.topic.clone().unwrap_or_default();
            let tp = self.single_partition(lab, &topic)?;
            let log = lab.partition_log(&tp)?;
            return Ok(match key {
                ExpectKey::LogEndOffset => log.log_end_offset(),
                ExpectKey::LastStableOffset => lab.last_stable_offset(&tp)?,
                _ => log.log_start_offset(),
            }
            .to_string());
        }
        self.group_actual(lab, key)
    }

    /// A consumer's figure: its state, records in flight, generation, last poll or position.
    fn consumer_actual(&self, lab: &Lab, key: ExpectKey) -> Result<String, LabError> {
        let name = match &self.consumer {
            Some(c) => c.clone(),
            None => only(
                lab.consumers().keys().chain(lab.share().consumers.keys()),
                "consumer",
                "consumer=NAME",
            )?,
        };
        if lab.is_share_consumer(&name) {
            return super::expect_share::consumer_actual(self, lab, key, &name);
        }
        if key.is_member_key() {
            return super::expect_epochs::member_actual(lab, &name, key);
        }
        let c = lab.consumer(&name)?;
        Ok(match key {
            ExpectKey::State => c.state.label().to_string(),
            ExpectKey::InFlight => c.in_flight.len().to_string(),
            ExpectKey::Generation => c.generation.to_string(),
            ExpectKey::Polled => {
                let polled: Vec<&(TopicPartition, i64)> = c
                    .last_poll
                    .iter()
                    .filter(|(tp, _)| self.partition.is_none_or(|p| tp.partition == p))
                    .collect();
                let partitions: std::collections::BTreeSet<&TopicPartition> =
                    polled.iter().map(|(tp, _)| tp).collect();
                if partitions.len() > 1 {
                    return Err(LabError::InvalidArgument(format!(
                        "expect: consumer '{name}''s last poll handed over records of several partitions: add partition=P"
                    )));
                }
                offset_ranges(polled.iter().map(|(_, o)| *o))
            }
            _ => {
                let tp = match self.partition {
                    Some(p) => TopicPartition::new(c.config.topic.clone(), p),
                    None => {
                        let mut assigned = c.assignment.keys();
                        match (assigned.next(), assigned.next()) {
                            (Some(tp), None) => tp.clone(),
                            (None, _) => return Ok("-".to_string()),
                            (Some(_), Some(_)) => {
                                return Err(LabError::InvalidArgument(format!(
                                    "expect: consumer '{name}' has several partitions: add partition=P"
                                )))
                            }
                        }
                    }
                };
                or_dash(c.assignment.get(&tp).map(|f| f.position))
            }
        })
    }

    /// A group's figure: its state, what `__consumer_offsets` holds for it, or its view's
    /// figures summed over the partitions the line names.
    fn group_actual(&self, lab: &Lab, key: ExpectKey) -> Result<String, LabError> {
        let group = match &self.group {
            Some(g) => g.clone(),
            None => only(lab.groups().keys(), "group", "group=G")?,
        };
        if matches!(key, ExpectKey::GroupEpoch | ExpectKey::GroupProtocol) {
            return super::expect_epochs::group_actual(lab, &group, key);
        }
        if key == ExpectKey::GroupState {
            // A group the coordinator does not have is Dead, as DescribeGroups reports it.
            return Ok(lab
                .groups()
                .get(&group)
                .map_or("Dead", |g| g.state_name())
                .to_string());
        }
        let in_view = |topic: &str| {
            lab.group_view(&group).is_ok_and(|v| {
                v.partitions
                    .iter()
                    .any(|p| p.topic == topic && self.partition.is_none_or(|want| p.partition == want))
            })
        };
        let stored_key = match (key, &self.topic) {
            (ExpectKey::Metadata, Some(topic)) => Some(topic),
            (ExpectKey::Committed, Some(topic)) if !in_view(topic) => Some(topic),
            _ => None,
        };
        if let Some(topic) = stored_key {
            return self.stored_actual(lab, key, &group, topic);
        }
        let view = lab.group_view(&group)?;
        let parts = self.partitions_named(&view, &group)?;
        let sum = |f: &dyn Fn(&PartitionView) -> u64| parts.iter().map(|p| f(p)).sum::<u64>().to_string();
        Ok(match key {
            ExpectKey::SinkRows => view.sink.rows.to_string(),
            ExpectKey::DistinctKeys => view.sink.distinct_keys.to_string(),
            ExpectKey::DuplicateRows => view.sink.duplicate_rows.to_string(),
            ExpectKey::Lost => sum(&|p| p.audit.lost),
            ExpectKey::Duplicates => sum(&|p| p.audit.duplicates),
            ExpectKey::Redeliveries => sum(&|p| p.audit.redeliveries),
            ExpectKey::CrashRedeliveries => sum(&|p| p.audit.crash_redeliveries),
            ExpectKey::Replays => sum(&|p| p.audit.replays),
            ExpectKey::Skipped => sum(&|p| p.audit.skipped),
            ExpectKey::Deliveries => sum(&|p| p.audit.deliveries),
            ExpectKey::Lag => {
                let lags: Option<Vec<i64>> = parts.iter().map(|p| p.lag).collect();
                or_dash(lags.map(|l| l.iter().sum()))
            }
            // As stored: a negative committed offset (an admin's −1 or −2) is no position, but it
            // is what `__consumer_offsets` holds.
            ExpectKey::Committed => {
                let p = single(&parts)?;
                or_dash(p.committed.or(p.kafka_committed))
            }
            ExpectKey::LogEndOffset => single(&parts)?.log_end_offset.to_string(),
            ExpectKey::LogStartOffset => single(&parts)?.log_start_offset.to_string(),
            ExpectKey::LastStableOffset => single(&parts)?.last_stable_offset.to_string(),
            ExpectKey::AbortedRead => sum(&|p| p.aborted_read),
            ExpectKey::Metadata => {
                return Err(LabError::InvalidArgument(
                    "expect: metadata is per partition: add topic=T (and partition=P)".into(),
                ))
            }
            _ => unreachable_key(key)?,
        })
    }

    /// As OffsetFetch answers for one partition: what `__consumer_offsets` holds, for any group
    /// and partition — one the group no longer reads, a deleted group's, a deleted topic's.
    fn stored_actual(&self, lab: &Lab, key: ExpectKey, group: &str, topic: &str) -> Result<String, LabError> {
        let tp = match self.partition {
            Some(p) => TopicPartition::new(topic, p),
            None => self.single_partition(lab, topic)?,
        };
        let stored = lab
            .offsets()
            .fetch(&offsetlab_engine::offsets::OffsetKey::new(group, &tp));
        Ok(match (key, stored) {
            (_, None) => "-".to_string(),
            (ExpectKey::Committed, Some(v)) => v.offset.to_string(),
            (_, Some(v)) => v.metadata.clone(),
        })
    }

    /// The partitions of `view` the line names (its topic, its partition), at least one.
    fn partitions_named<'v>(
        &self,
        view: &'v GroupView,
        group: &str,
    ) -> Result<Vec<&'v PartitionView>, LabError> {
        let parts: Vec<&PartitionView> = match (&self.topic, self.partition) {
            (None, None) => view.partitions.iter().collect(),
            (topic, partition) => {
                let topic = match topic {
                    Some(t) => t.clone(),
                    None => only(
                        view.partitions
                            .iter()
                            .map(|p| p.topic.clone())
                            .collect::<std::collections::BTreeSet<_>>(),
                        "topic",
                        "topic=T",
                    )?,
                };
                view.partitions
                    .iter()
                    .filter(|p| p.topic == topic && partition.is_none_or(|want| p.partition == want))
                    .collect()
            }
        };
        if parts.is_empty() {
            return Err(LabError::InvalidArgument(format!(
                "group '{group}' reads no such topic-partition"
            )));
        }
        Ok(parts)
    }

    fn single_partition(&self, lab: &Lab, topic: &str) -> Result<TopicPartition, LabError> {
        if let Some(p) = self.partition {
            return Ok(TopicPartition::new(topic, p));
        }
        let t = lab.topic(topic)?;
        match self.partition {
            Some(p) => Ok(TopicPartition::new(topic, p)),
            None if t.partitions.len() == 1 => Ok(TopicPartition::new(topic, 0)),
            None => Err(LabError::InvalidArgument(format!(
                "topic '{topic}' has {} partitions: add partition=P",
                t.partitions.len()
            ))),
        }
    }
}

/// Offsets as the `polled` key writes them: runs of consecutive offsets as `a..b`, single ones
/// alone, comma-separated (`0..2,4..5`); `-` for none.
pub fn offset_ranges(offsets: impl IntoIterator<Item = i64>) -> String {
    let mut runs: Vec<(i64, i64)> = Vec::new();
    for o in offsets {
        match runs.last_mut() {
            Some((_, last)) if *last + 1 == o => *last = o,
            _ => runs.push((o, o)),
        }
    }
    if runs.is_empty() {
        return "-".to_string();
    }
    runs.iter()
        .map(|&(a, b)| {
            if a == b {
                a.to_string()
            } else {
                format!("{a}..{b}")
            }
        })
        .collect::<Vec<_>>()
        .join(",")
}

/// A figure that may be missing, as `expect` writes it: `-` for none.
fn or_dash(v: Option<i64>) -> String {
    v.map_or("-".to_string(), |v| v.to_string())
}

fn unreachable_key(key: ExpectKey) -> Result<String, LabError> {
    Err(LabError::InvalidArgument(format!(
        "expect: '{}' needs consumer=NAME",
        key.name()
    )))
}

fn single<'a>(parts: &[&'a PartitionView]) -> Result<&'a PartitionView, LabError> {
    match parts {
        [one] => Ok(one),
        _ => Err(LabError::InvalidArgument(format!(
            "this figure is per partition and {} match: add topic=T partition=P",
            parts.len()
        ))),
    }
}

/// The only element of `items`, or an error asking for the option that picks one.
pub(super) fn only<T: fmt::Display>(
    items: impl IntoIterator<Item = T>,
    what: &str,
    option: &str,
) -> Result<String, LabError> {
    let mut it = items.into_iter();
    match (it.next(), it.next()) {
        (Some(one), None) => Ok(one.to_string()),
        (None, _) => Err(LabError::InvalidArgument(format!(
            "expect: there is no {what} yet"
        ))),
        (Some(_), Some(_)) => Err(LabError::InvalidArgument(format!(
            "expect: more than one {what}: add {option}"
        ))),
    }
}

impl fmt::Display for Expect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "expect")?;
        if let Some(g) = &self.group {
            write!(f, " group={}", Quoted(g))?;
        }
        if let Some(g) = &self.share_group {
            write!(f, " share-group={}", Quoted(g))?;
        }
        if let Some(t) = &self.topic {
            write!(f, " topic={}", Quoted(t))?;
        }
        if let Some(p) = self.partition {
            write!(f, " partition={p}")?;
        }
        if let Some(o) = self.offset {
            write!(f, " offset={o}")?;
        }
        if let Some(c) = &self.consumer {
            write!(f, " consumer={}", Quoted(c))?;
        }
        for (k, v) in &self.checks {
            write!(f, " {}={}", k.name(), Quoted(v))?;
        }
        Ok(())
    }
}
