//! ListOffsets: a partition's earliest offset (-2), latest (-1: the log end, or the last stable
//! offset for a read_committed client) or the first offset at or after a timestamp.
//!
//! Answered from the lab's published view ([`offsetlab_lab::read_view`]) and the partitions'
//! logs below its bounds, without the lab's lock — unless a log lost records since the view,
//! or the largest timestamp (−3) is asked of a log a change is appending to: then under it.

use crate::broker::Broker;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::txn::IsolationLevel;
use offsetlab_lab::read_view::{LogWait, ReadView};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use offsetlab_wire::kafka_protocol::messages::{ListOffsetsRequest, ListOffsetsResponse};

pub(crate) fn isolation(level: i8) -> IsolationLevel {
    if level == 1 {
        IsolationLevel::ReadCommitted
    } else {
        IsolationLevel::ReadUncommitted
    }
}

/// The offset and timestamp of the first record with the largest timestamp: the segment whose
/// largest timestamp is the largest (the first of equals), then its records. (−1, −1) for an
/// empty log. `None` when the log holds records past `end`, the view's high watermark (a
/// change in progress): its segments' figures count them.
fn max_timestamp(log: &dyn offsetlab_engine::log::PartitionLog, end: i64) -> Option<(i64, i64)> {
    if log.log_end_offset() != end {
        return None;
    }
    let mut best: Option<offsetlab_engine::log::SegmentInfo> = None;
    for s in log.segments() {
        if s.max_timestamp.is_some() && s.max_timestamp > best.as_ref().and_then(|b| b.max_timestamp) {
            best = Some(s);
        }
    }
    let Some(s) = best else {
        return Some((-1, -1));
    };
    let max = s.max_timestamp.unwrap_or(-1);
    let mut found = (-1, -1);
    log.read(s.base_offset, s.records, &mut |r| {
        if found.0 < 0 && r.timestamp == max && !r.control {
            found = (r.offset, r.timestamp);
        }
    });
    Some(found)
}

/// The answer: from the lab's published view, else under its lock. Blocking in the second
/// case; [`answer`] alone never waits.
pub(crate) fn handle(broker: &Broker, r: &ListOffsetsRequest, version: i16) -> ListOffsetsResponse {
    let wait = LogWait::ForTheLog;
    answer(&broker.lab.view(), r, version, wait)
        .or_else(|| broker.lab.read_locked(|view| answer(view, r, version, wait)))
        .unwrap_or_else(|| {
            // Every log of a session's lab is shared: this is a lab built otherwise.
            tracing::error!("ListOffsets could not read a log of the lab even under its lock");
            ListOffsetsResponse::default()
        })
}

/// The answer from `view`; `None` when a log it reads lost records since the view was
/// published, or holds more than the view for the largest timestamp (−3), or — not waiting —
/// is being written to.
pub(crate) fn answer(
    view: &ReadView,
    r: &ListOffsetsRequest,
    version: i16,
    wait: LogWait,
) -> Option<ListOffsetsResponse> {
    let level = isolation(r.isolation_level);
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let name = t.name.0.to_string();
            Some(
                ListOffsetsTopicResponse::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|p| {
                                let tp = TopicPartition::new(name.clone(), p.partition_index);
                                let base = ListOffsetsPartitionResponse::default()
                                    .with_partition_index(p.partition_index);
                                let Some(part) = view.partition(&tp) else {
                                    return Some(base.with_error_code(UNKNOWN_TOPIC_OR_PARTITION));
                                };
                                let end = part.high_watermark();
                                let latest = match level {
                                    IsolationLevel::ReadCommitted => part.last_stable_offset(),
                                    IsolationLevel::ReadUncommitted => end,
                                };
                                let (offset, timestamp) = match p.timestamp {
                                    // Earliest (-2), and earliest local (-4, KIP-405): one broker
                                    // with no tiered storage keeps every retained record locally.
                                    -2 | -4 => (part.log_start_offset(), -1),
                                    -1 => (latest, -1),
                                    // The record with the largest timestamp (KIP-734).
                                    -3 => part.read(wait, |log| max_timestamp(log, end))??,
                                    // Latest tiered (-5, KIP-1005): nothing is tiered here.
                                    -5 => (-1, -1),
                                    // The view's records only: one past its end is none of them.
                                    ts => part.read(wait, |log| match log.offset_for_timestamp(ts) {
                                        Some(o) if o < end => {
                                            let mut at = -1;
                                            log.read(o, 1, &mut |r| at = r.timestamp);
                                            (o, at)
                                        }
                                        _ => (-1, -1),
                                    })?,
                                };
                                // An offset found was written under the partition's one leader epoch
                                // (v4+ says which).
                                let epoch = if offset >= 0 && version >= 4 {
                                    crate::broker::LEADER_EPOCH
                                } else {
                                    -1
                                };
                                Some(
                                    base.with_offset(offset)
                                        .with_timestamp(timestamp)
                                        .with_leader_epoch(epoch),
                                )
                            })
                            .collect::<Option<Vec<_>>>()?,
                    ),
            )
        })
        .collect::<Option<Vec<_>>>()?;
    Some(ListOffsetsResponse::default().with_topics(topics))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::list_offsets_request::{
        ListOffsetsPartition, ListOffsetsTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::TopicName;

    fn ask(b: &Broker, spec: i64) -> (i16, i64, i64) {
        let r = handle(
            b,
            &ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(name("orders")))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(spec)])]),
            9,
        );
        let p = &r.topics[0].partitions[0];
        (p.error_code, p.offset, p.timestamp)
    }

    /// The specs of ListOffsets v7–v9: the largest timestamp (−3, KIP-734), earliest local
    /// (−4, KIP-405) and latest tiered (−5, KIP-1005) — on one broker without tiered storage.
    #[test]
    fn the_specs_of_kafka_4_answer_as_one_broker_without_tiered_storage() {
        let b = broker();
        let lines: Vec<String> = [
            "tick 2s",
            "produce orders count=2",
            "tick 1s",
            "delete-records orders before=3",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        b.lab.lock().apply_lines(&lines).expect("lines");
        let two_seconds_in = offsetlab_engine::clock::LAB_EPOCH_MS + 2_000;
        assert_eq!(
            ask(&b, -3),
            (NONE, 12, two_seconds_in),
            "the first record of the latest instant"
        );
        assert_eq!(ask(&b, -4), (NONE, 3, -1), "earliest local is the log start");
        assert_eq!(ask(&b, -2), (NONE, 3, -1));
        assert_eq!(ask(&b, -5), (NONE, -1, -1), "nothing is tiered");
        assert_eq!(ask(&b, -1), (NONE, 14, -1));
    }
}
