//! A share consumer's acknowledgements, as ShareFetch and ShareAcknowledge both carry them:
//! per partition, batches of `first_offset..=last_offset` with one type for the whole batch or
//! one per offset (0 gap, 1 accept, 2 release, 3 reject). Checked as Kafka checks them, then
//! applied to the lab as one `share-acknowledge` line per partition: all of a partition's or
//! none (INVALID_RECORD_STATE when the member does not hold one of the records).

use crate::broker::Broker;
use crate::change;
use offsetlab_engine::record::{Offset, TopicPartition};
use offsetlab_engine::share::AcknowledgeType;
use offsetlab_scenario::command::{Command, ShareAcknowledge};
use offsetlab_wire::error::*;

/// Runs of offsets with one type each, in order; gaps (type 0: an offset with no record, such as
/// a transaction's marker) are left out — the lab's window holds no record there to change.
pub(crate) type Runs = Vec<(Offset, Offset, AcknowledgeType)>;

/// The most offsets one partition's acknowledgements may cover: a window never holds more
/// records than `share.partition.max.record.locks` allows (10,000 at most). A client naming more
/// is told the records are not its own (INVALID_RECORD_STATE, as Kafka answers offsets it has
/// not in flight) without the lab walking them one by one.
pub(crate) const MAX_ACKNOWLEDGED_SPAN: i64 = 1 << 20;

/// Why a partition's acknowledgements were refused before the lab saw them: Kafka's code.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Refused(pub(crate) i16, pub(crate) String);

fn kind_of(code: i8) -> Result<Option<AcknowledgeType>, Refused> {
    Ok(Some(match code {
        0 => return Ok(None),
        1 => AcknowledgeType::Accept,
        2 => AcknowledgeType::Release,
        3 => AcknowledgeType::Reject,
        other => {
            return Err(Refused(
                INVALID_REQUEST,
                format!("acknowledge type {other} is not 0 (gap), 1 (accept), 2 (release) or 3 (reject)"),
            ))
        }
    }))
}

fn push(runs: &mut Runs, first: Offset, last: Offset, kind: AcknowledgeType) {
    match runs.last_mut() {
        Some((_, end, t)) if *end + 1 == first && *t == kind => *end = last,
        _ => runs.push((first, last, kind)),
    }
}

/// Kafka's checks of one partition's acknowledgement batches (`validateAcknowledgementBatches`):
/// ascending, not overlapping, each with one type or one per offset, every type known.
pub(crate) fn runs_of<'a>(batches: impl Iterator<Item = (i64, i64, &'a [i8])>) -> Result<Runs, Refused> {
    let invalid = |m: String| Refused(INVALID_REQUEST, m);
    let mut runs: Runs = Vec::new();
    let mut last_end: Option<Offset> = None;
    let mut covered: i64 = 0;
    for (first, last, types) in batches {
        if first > last || first < 0 {
            return Err(invalid(format!(
                "acknowledgement batch {first}-{last} is not a range of offsets"
            )));
        }
        if last_end.is_some_and(|end| first <= end) {
            return Err(invalid(format!(
                "acknowledgement batch {first}-{last} overlaps or precedes the one before it"
            )));
        }
        last_end = Some(last);
        // Both ends are non-negative: the difference cannot overflow; the count can.
        let span = (last - first).saturating_add(1);
        covered = covered.saturating_add(span);
        if covered > MAX_ACKNOWLEDGED_SPAN {
            return Err(Refused(
                INVALID_RECORD_STATE,
                format!("acknowledgements covering more than {MAX_ACKNOWLEDGED_SPAN} offsets: no member holds that many records"),
            ));
        }
        match types {
            [one] => {
                if let Some(kind) = kind_of(*one)? {
                    push(&mut runs, first, last, kind);
                }
            }
            many if i64::try_from(many.len()) == Ok(span) => {
                for (o, code) in (first..=last).zip(many) {
                    if let Some(kind) = kind_of(*code)? {
                        push(&mut runs, o, o, kind);
                    }
                }
            }
            _ => {
                return Err(invalid(format!(
                    "acknowledgement batch {first}-{last} has {} types: one, or one per offset",
                    types.len()
                )))
            }
        }
    }
    Ok(runs)
}

/// Applies a partition's acknowledgements; Kafka's error code for the partition (NONE when they
/// all took effect).
pub(crate) fn apply(
    broker: &Broker,
    group: &str,
    member: &str,
    tp: &TopicPartition,
    runs: Runs,
) -> (i16, Option<String>) {
    if runs.is_empty() {
        return (NONE, None);
    }
    let line = Command::ShareAcknowledge(ShareAcknowledge {
        group: group.to_string(),
        member: member.to_string(),
        tp: tp.clone(),
        acks: runs,
    });
    match change::apply_commands(&broker.lab, broker.lab.lock(), vec![line]) {
        Ok(()) => (NONE, None),
        Err(change::Failure::Refused(offsetlab_engine::LabError::UnknownMember { .. })) => (
            INVALID_RECORD_STATE,
            Some(format!(
                "{member} is not a member of share group {group}: it holds no record"
            )),
        ),
        Err(e) => (e.code(), Some(e.message())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_become_runs_and_bad_ones_are_refused() {
        let runs = runs_of([(3, 5, &[1i8][..]), (6, 8, &[1, 0, 3][..])].into_iter()).expect("valid");
        assert_eq!(
            runs,
            vec![(3, 6, AcknowledgeType::Accept), (8, 8, AcknowledgeType::Reject)]
        );
        assert!(runs_of([(5, 3, &[1i8][..])].into_iter()).is_err());
        assert!(runs_of([(3, 5, &[1i8][..]), (5, 6, &[1][..])].into_iter()).is_err());
        assert!(runs_of([(3, 5, &[1i8, 2][..])].into_iter()).is_err());
        assert!(runs_of([(3, 3, &[4i8][..])].into_iter()).is_err());
        // A range no member can hold is refused before anything walks it.
        assert_eq!(
            runs_of([(0, i64::MAX, &[1i8][..])].into_iter()).map_err(|r| r.0),
            Err(INVALID_RECORD_STATE)
        );
    }
}
