//! `expect share-group=G [topic=T] [partition=P] [offset=O] KEY=VALUE …`: a share group's
//! figures, and a share consumer's (`expect consumer=s1 state=crashed in-flight=2`).

use super::expect::{offset_ranges, only, Expect, ExpectKey};
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::share::{DeliveryState, ShareGroup, SharePartition};
use offsetlab_engine::{Lab, LabError};

/// The value of `key` for share group `group`.
pub(super) fn share_actual(e: &Expect, lab: &Lab, key: ExpectKey, group: &str) -> Result<String, LabError> {
    share_figure(e, lab.share_group(group)?, key)
}

/// The value of `key` for share group `g` — the model's, or one a run on a cluster kept from
/// what the cluster showed its members: one definition of every figure.
pub fn share_figure(e: &Expect, g: &ShareGroup, key: ExpectKey) -> Result<String, LabError> {
    if key == ExpectKey::GroupState {
        return Ok(g.state_name().to_string());
    }
    let parts = partitions(e, g)?;
    let audit = g.figures(|tp| parts.iter().any(|p| p == tp));
    let window = |f: &dyn Fn(&SharePartition) -> u64| -> u64 {
        parts.iter().filter_map(|tp| g.partitions.get(tp)).map(f).sum()
    };
    let count = |s: DeliveryState| window(&|p| p.count(s) as u64).to_string();
    Ok(match key {
        ExpectKey::Spso | ExpectKey::Speo => {
            let tp = single(&parts)?;
            match g.partitions.get(tp) {
                None => "-".to_string(),
                Some(p) if key == ExpectKey::Spso => p.start_offset.to_string(),
                Some(p) => p.end_offset.to_string(),
            }
        }
        ExpectKey::InFlight => window(&SharePartition::in_flight).to_string(),
        ExpectKey::Acquired => count(DeliveryState::Acquired),
        ExpectKey::Available => count(DeliveryState::Available),
        ExpectKey::Archived => audit.archived.to_string(),
        ExpectKey::Acquisitions => audit.acquisitions.to_string(),
        ExpectKey::Lost => audit.lost.to_string(),
        ExpectKey::Duplicates => audit.duplicates.to_string(),
        ExpectKey::Deliveries => audit.deliveries.to_string(),
        ExpectKey::Skipped => audit.skipped.to_string(),
        ExpectKey::RecordState | ExpectKey::DeliveryCount | ExpectKey::Owner => {
            record(e, g, single(&parts)?, key)?
        }
        other => {
            return Err(LabError::InvalidArgument(format!(
                "expect: {} is not a share group's figure",
                other.name()
            )))
        }
    })
}

/// One record's state, delivery count or owner: from the window while it is in it, from the
/// audit once the SPSO passed it, `-` for a record the group never reached.
fn record(e: &Expect, g: &ShareGroup, tp: &TopicPartition, key: ExpectKey) -> Result<String, LabError> {
    let o = e.offset.unwrap_or_default();
    if let Some(r) = g.partitions.get(tp).and_then(|p| p.record(o)) {
        return Ok(match key {
            ExpectKey::RecordState => r.state.to_string(),
            ExpectKey::DeliveryCount => r.delivery_count.to_string(),
            _ => r.lock.as_ref().map_or("-".to_string(), |l| l.member.clone()),
        });
    }
    let done = g.audit.get(tp).and_then(|a| a.completed.get(&o));
    Ok(match (key, done) {
        // Skipped by an administrator's move: never delivered, no state to show.
        (_, None | Some((offsetlab_engine::share::partition::Completion::Skipped, _))) => "-".to_string(),
        (ExpectKey::RecordState, Some((how, _))) => match how {
            offsetlab_engine::share::partition::Completion::Accepted => DeliveryState::Acknowledged,
            offsetlab_engine::share::partition::Completion::Archived { .. }
            | offsetlab_engine::share::partition::Completion::Skipped => DeliveryState::Archived,
        }
        .to_string(),
        (ExpectKey::DeliveryCount, Some((_, n))) => n.to_string(),
        _ => "-".to_string(),
    })
}

/// The share partitions the line names: all the group reads, or those of `topic=`/`partition=`.
fn partitions(e: &Expect, g: &ShareGroup) -> Result<Vec<TopicPartition>, LabError> {
    let known: std::collections::BTreeSet<TopicPartition> = g
        .partitions
        .keys()
        .chain(g.audit.keys())
        .chain(g.unstarted.keys())
        .cloned()
        .chain(g.members.iter().flat_map(|m| m.assignment.iter().cloned()))
        .collect();
    let topic = match &e.topic {
        Some(t) => Some(t.clone()),
        None if e.partition.is_some() => Some(only(
            known
                .iter()
                .map(|tp| tp.topic.clone())
                .collect::<std::collections::BTreeSet<_>>(),
            "topic",
            "topic=T",
        )?),
        None => None,
    };
    let parts: Vec<TopicPartition> = known
        .into_iter()
        .filter(|tp| topic.as_ref().is_none_or(|t| &tp.topic == t))
        .filter(|tp| e.partition.is_none_or(|p| tp.partition == p))
        .collect();
    if parts.is_empty() {
        if let (Some(t), Some(p)) = (topic, e.partition) {
            return Ok(vec![TopicPartition::new(t, p)]);
        }
    }
    Ok(parts)
}

fn single(parts: &[TopicPartition]) -> Result<&TopicPartition, LabError> {
    match parts {
        [one] => Ok(one),
        _ => Err(LabError::InvalidArgument(format!(
            "this figure is per share partition and {} match: add topic=T partition=P",
            parts.len()
        ))),
    }
}

/// A share consumer's `state`, `in-flight` (records it holds) or `polled`.
pub(super) fn consumer_actual(e: &Expect, lab: &Lab, key: ExpectKey, name: &str) -> Result<String, LabError> {
    let c = lab.share_consumer(name)?;
    Ok(match key {
        ExpectKey::State => c.state.label().to_string(),
        ExpectKey::InFlight => c.held.len().to_string(),
        ExpectKey::Polled => offset_ranges(
            c.last_poll
                .iter()
                .filter(|(tp, _)| e.partition.is_none_or(|p| tp.partition == p))
                .map(|(_, o)| *o),
        ),
        other => {
            return Err(LabError::InvalidArgument(format!(
                "expect: a share consumer has no {} (it has state, in-flight and polled)",
                other.name()
            )))
        }
    })
}
