//! ShareFetch (KIP-932): a share consumer's fetch. The request's epoch opens, continues or
//! closes its share session ([`crate::share_sessions`]); the acknowledgements it carries are
//! applied first (each partition's error in `acknowledge_error_code`); then records are
//! acquired for the member — `share-fetch` lines, at most `max_records` in all — from every
//! partition of the session, and answered with the ranges acquired and their delivery counts.
//! A fetch that acquires nothing waits, like a Fetch, until the lab changes in a way that may
//! give it records (a produce, a lock expiring on the live clock, a release) or `max_wait_ms`
//! runs out.
//!
//! The records are encoded from the log, only those acquired: Kafka sends whole stored batches
//! and lets the client drop what it did not acquire; a client reads the two alike.

use super::share_acks;
use crate::broker::Broker;
use crate::change;
use crate::share_sessions::Opened;
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::{Command, ShareFetch, ShareRelease};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::share_fetch_response::{
    AcquiredRecords, PartitionData, ShareFetchableTopicResponse,
};
use offsetlab_wire::kafka_protocol::messages::{ShareFetchRequest, ShareFetchResponse};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::Uuid;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

/// One partition's part of the answer.
#[derive(Debug, Default, Clone)]
struct Part {
    error: i16,
    ack_error: (i16, Option<String>),
    acked: bool,
    /// (offset, delivery count) acquired by this fetch.
    acquired: Vec<(i64, u16)>,
}

/// What the first look at a fetch decided, for the waits after it.
struct Fetching {
    group: String,
    member: String,
    /// The session's partitions, in order.
    partitions: Vec<TopicPartition>,
    /// A new session: every partition is answered, records or not.
    full: bool,
    max_records: usize,
    parts: BTreeMap<TopicPartition, Part>,
    /// Partitions the request named under a topic id the lab does not know (UNKNOWN_TOPIC_ID),
    /// each with whether it carried acknowledgements.
    unknown_ids: Vec<(Uuid, Vec<(i32, bool)>)>,
    /// The session closed (epoch −1): its acknowledgements applied, its records released.
    closed: bool,
}

fn refused(code: i16, message: impl Into<String>) -> ShareFetchResponse {
    ShareFetchResponse::default()
        .with_error_code(code)
        .with_error_message(Some(StrBytes::from_string(message.into())))
}

pub(crate) async fn handle(
    broker: &Arc<Broker>,
    r: ShareFetchRequest,
    connection: u64,
) -> Option<ShareFetchResponse> {
    let mut changes = broker.lab.subscribe();
    let wait = Duration::from_millis(u64::try_from(r.max_wait_ms).unwrap_or(0));
    let deadline = tokio::time::Instant::now() + wait;
    let b = Arc::clone(broker);
    let first = tokio::task::spawn_blocking(move || begin(&b, &r, connection))
        .await
        .ok()?;
    let mut fetching = match first {
        Ok(f) => f,
        Err(response) => return Some(response),
    };
    loop {
        // Records, acknowledgement results or an error are answered at once, as Kafka answers
        // them; so is a session that closed or has nothing to read.
        let got = fetching.closed
            || fetching.partitions.is_empty()
            || fetching
                .parts
                .values()
                .any(|p| !p.acquired.is_empty() || p.acked || p.error != NONE);
        if got || tokio::time::Instant::now() >= deadline {
            break;
        }
        tokio::select! {
            _ = changes.recv() => {}
            () = tokio::time::sleep_until(deadline) => break,
        }
        let b = Arc::clone(broker);
        fetching = tokio::task::spawn_blocking(move || {
            acquire(&b, &mut fetching);
            fetching
        })
        .await
        .ok()?;
    }
    let b = Arc::clone(broker);
    tokio::task::spawn_blocking(move || answer(&b, &fetching))
        .await
        .ok()
}

/// The session, the acknowledgements, and a first acquisition.
fn begin(broker: &Broker, r: &ShareFetchRequest, connection: u64) -> Result<Fetching, ShareFetchResponse> {
    let group = r.group_id.as_ref().map(|g| g.0.to_string()).unwrap_or_default();
    let member = r.member_id.as_ref().map(ToString::to_string).unwrap_or_default();
    if group.is_empty() || member.is_empty() {
        return Err(refused(
            INVALID_REQUEST,
            "a share fetch names its group and member",
        ));
    }
    let view = broker.lab.view();
    let mut unknown_ids: Vec<(Uuid, Vec<(i32, bool)>)> = Vec::new();
    let mut added = Vec::new();
    let mut acks = Vec::new();
    let mut missing = Vec::new();
    for t in &r.topics {
        let Some(topic) = view.topic_named_by_id(t.topic_id.as_bytes()).map(str::to_string) else {
            let partitions = t
                .partitions
                .iter()
                .map(|p| (p.partition_index, !p.acknowledgement_batches.is_empty()));
            match unknown_ids.iter_mut().find(|(id, _)| *id == t.topic_id) {
                Some((_, ps)) => ps.extend(partitions),
                None => unknown_ids.push((t.topic_id, partitions.collect())),
            }
            continue;
        };
        let count = view.topic(&topic).map_or(0, |t| t.partitions().len());
        for p in &t.partitions {
            let tp = TopicPartition::new(topic.clone(), p.partition_index);
            if usize::try_from(p.partition_index).map_or(true, |i| i >= count) {
                // Never part of the session: answered once, with its error.
                missing.push(tp);
                continue;
            }
            if !p.acknowledgement_batches.is_empty() {
                let batches = p
                    .acknowledgement_batches
                    .iter()
                    .map(|b| (b.first_offset, b.last_offset, &b.acknowledge_types[..]));
                acks.push((tp.clone(), share_acks::runs_of(batches)));
            }
            added.push(tp);
        }
    }
    let mut forgotten = Vec::new();
    for t in &r.forgotten_topics_data {
        let Some(topic) = view.topic_named_by_id(t.topic_id.as_bytes()).map(str::to_string) else {
            continue;
        };
        forgotten.extend(
            t.partitions
                .iter()
                .map(|&p| TopicPartition::new(topic.clone(), p)),
        );
    }
    if r.share_session_epoch == 0 && !acks.is_empty() {
        return Err(refused(
            INVALID_REQUEST,
            "a share fetch that opens a session carries no acknowledgement",
        ));
    }
    let opened = broker
        .share_sessions
        .update(
            connection,
            &group,
            &member,
            r.share_session_epoch,
            &added,
            &forgotten,
        )
        .map_err(|code| {
            refused(
                code,
                format!(
                    "share session of {member} in {group}: epoch {}",
                    r.share_session_epoch
                ),
            )
        })?;
    let (partitions, full, closed) = match opened {
        Opened::New(s) => (s.partitions.into_iter().collect(), true, false),
        Opened::Continued(s) => (s.partitions.into_iter().collect(), false, false),
        Opened::Closed => (Vec::new(), false, true),
    };
    let mut f = Fetching {
        group,
        member,
        partitions,
        full,
        max_records: usize::try_from(r.max_records).unwrap_or(0).max(1),
        parts: BTreeMap::new(),
        unknown_ids,
        closed,
    };
    for tp in missing {
        f.parts.entry(tp).or_default().error = UNKNOWN_TOPIC_OR_PARTITION;
    }
    // The fetch first, then the acknowledgements it carries: on Kafka a record released in a
    // ShareFetch is not handed out again by that same fetch (its new state is written through
    // the share coordinator while the fetch reads), so neither is it here.
    acquire(broker, &mut f);
    for (tp, runs) in acks {
        let ack_error = match runs {
            Ok(runs) => share_acks::apply(broker, &f.group, &f.member, &tp, runs),
            Err(share_acks::Refused(code, message)) => (code, Some(message)),
        };
        let part = f.parts.entry(tp).or_default();
        part.ack_error = ack_error;
        part.acked = true;
    }
    // A closing fetch: its acknowledgements first (above), then what the member still holds goes
    // back — as Kafka closes a share session.
    if f.closed {
        release(broker, &f.group, &f.member);
    }
    Ok(f)
}

/// A share session closed (epoch −1, or its connection gone): the records its member holds are
/// released — a `share-release` line, when it holds any.
pub(crate) fn release(broker: &Broker, group: &str, member: &str) {
    let s = broker.lab.lock();
    let holds = s.lab().share_group(group).is_ok_and(|g| {
        g.partitions.values().any(|p| {
            p.records()
                .any(|(_, r)| r.lock.as_ref().is_some_and(|l| l.member == member))
        })
    });
    if holds {
        let line = Command::ShareRelease(ShareRelease {
            group: group.to_string(),
            member: member.to_string(),
        });
        let _ = change::apply_commands(&broker.lab, s, vec![line]);
    }
}

/// Acquires records from the session's partitions, up to the fetch's `max_records` in all: a
/// `share-fetch` line for each partition that has something to give (a fetch that finds
/// nothing leaves no line).
fn acquire(broker: &Broker, f: &mut Fetching) {
    for tp in f.partitions.clone() {
        let taken: usize = f.parts.values().map(|p| p.acquired.len()).sum();
        if taken >= f.max_records {
            break;
        }
        if f.parts.get(&tp).is_some_and(|p| p.error != NONE) {
            // Answered with its error; never records beside it.
            continue;
        }
        let s = broker.lab.lock();
        let lab = s.lab();
        if lab.partition_log(&tp).is_err() {
            f.parts.entry(tp).or_default().error = UNKNOWN_TOPIC_OR_PARTITION;
            continue;
        }
        if lab
            .share_group(&f.group)
            .ok()
            .and_then(|g| g.member(&f.member))
            .is_none()
        {
            f.parts.entry(tp).or_default().error = UNKNOWN_MEMBER_ID;
            continue;
        }
        if !lab.share_acquirable(&f.group, &tp) {
            continue;
        }
        let before: Vec<i64> = lab
            .share_held_by(&f.group, &f.member, &tp)
            .iter()
            .map(|(o, _)| *o)
            .collect();
        let line = Command::ShareFetch(ShareFetch {
            group: f.group.clone(),
            member: f.member.clone(),
            tp: tp.clone(),
            max: f.max_records - taken,
        });
        if let Err(e) = change::apply_commands(&broker.lab, s, vec![line]) {
            f.parts.entry(tp).or_default().error = e.code();
            continue;
        }
        let s = broker.lab.lock();
        let now: Vec<(i64, u16)> = s
            .lab()
            .share_held_by(&f.group, &f.member, &tp)
            .into_iter()
            .filter(|(o, _)| !before.contains(o))
            .collect();
        drop(s);
        f.parts.entry(tp).or_default().acquired.extend(now);
    }
}

/// The response: the partitions with something to say (all of them for a new session).
fn answer(broker: &Broker, f: &Fetching) -> ShareFetchResponse {
    let view = broker.lab.view();
    let s = broker.lab.lock();
    let lab = s.lab();
    let lock_ms = lab
        .share_group(&f.group)
        .map_or(30_000, |g| g.config.record_lock_duration_ms);
    let mut by_topic: BTreeMap<String, Vec<PartitionData>> = BTreeMap::new();
    let mut scope: Vec<TopicPartition> = if f.full { f.partitions.clone() } else { Vec::new() };
    for tp in f.parts.keys() {
        if !scope.contains(tp) {
            scope.push(tp.clone());
        }
    }
    for tp in scope {
        let part = f.parts.get(&tp).cloned().unwrap_or_default();
        if !f.full && part.acquired.is_empty() && !part.acked && part.error == NONE {
            continue;
        }
        let mut acquired = part.acquired.clone();
        acquired.sort_unstable();
        let records = records_of(lab, &tp, &acquired);
        let mut data = PartitionData::default()
            .with_partition_index(tp.partition)
            .with_error_code(part.error)
            .with_acknowledge_error_code(part.ack_error.0)
            .with_acknowledge_error_message(part.ack_error.1.map(StrBytes::from_string))
            .with_records(Some(records.into()))
            .with_acquired_records(ranges(&acquired));
        if part.error != NONE {
            data = data.with_records(Some(Default::default()));
        }
        by_topic.entry(tp.topic.clone()).or_default().push(data);
    }
    let mut responses: Vec<ShareFetchableTopicResponse> = by_topic
        .into_iter()
        .filter_map(|(topic, partitions)| {
            let id = view.topic_id_of(&topic)?;
            Some(
                ShareFetchableTopicResponse::default()
                    .with_topic_id(Uuid::from_bytes(id))
                    .with_partitions(partitions),
            )
        })
        .collect();
    for (id, partitions) in &f.unknown_ids {
        responses.push(
            ShareFetchableTopicResponse::default()
                .with_topic_id(*id)
                .with_partitions(
                    partitions
                        .iter()
                        .map(|&(p, acked)| {
                            // Kafka's acknowledge_error_code stays 0 where nothing was acknowledged.
                            PartitionData::default()
                                .with_partition_index(p)
                                .with_error_code(UNKNOWN_TOPIC_ID)
                                .with_acknowledge_error_code(if acked { UNKNOWN_TOPIC_ID } else { NONE })
                                .with_records(Some(Default::default()))
                        })
                        .collect(),
                ),
        );
    }
    ShareFetchResponse::default()
        .with_acquisition_lock_timeout_ms(i32::try_from(lock_ms).unwrap_or(i32::MAX))
        .with_responses(responses)
}

/// Runs of consecutive offsets with one delivery count, as `AcquiredRecords`.
fn ranges(acquired: &[(i64, u16)]) -> Vec<AcquiredRecords> {
    let mut out: Vec<AcquiredRecords> = Vec::new();
    for &(o, count) in acquired {
        let count = i16::try_from(count).unwrap_or(i16::MAX);
        match out.last_mut() {
            Some(r) if r.last_offset + 1 == o && r.delivery_count == count => r.last_offset = o,
            _ => out.push(
                AcquiredRecords::default()
                    .with_first_offset(o)
                    .with_last_offset(o)
                    .with_delivery_count(count),
            ),
        }
    }
    out
}

/// The batches holding the acquired records: the stored batches, whole, as Kafka sends them
/// (the client keeps only what its acquired ranges name), or — from a log that keeps no batches
/// (a lab in memory) — the acquired records encoded, a batch for each run of offsets.
fn records_of(lab: &offsetlab_engine::Lab, tp: &TopicPartition, acquired: &[(i64, u16)]) -> Vec<u8> {
    let mut out = Vec::new();
    let Ok(log) = lab.partition_log(tp) else {
        return out;
    };
    let offsets: Vec<i64> = acquired.iter().map(|(o, _)| *o).collect();
    // Where the batches already sent reach: a batch holding two runs (records between them
    // acquired by another member) goes out once.
    let mut sent_to = i64::MIN;
    for run in offsets.chunk_by(|a, b| a + 1 == *b) {
        let (first, end) = (run[0].max(sent_to), run[run.len() - 1] + 1);
        if first >= end {
            continue;
        }
        let mut from = first;
        let mut stored = true;
        while from < end {
            let at = out.len();
            if log.read_batches(from, i64::MAX, 0, &mut out).is_none() {
                stored = false;
                break;
            }
            match offsetlab_records::BatchHeader::parse(&out[at..]) {
                Ok(h) if h.last_offset() >= from => {
                    from = h.last_offset() + 1;
                    sent_to = from;
                }
                _ => {
                    out.truncate(at);
                    stored = false;
                    break;
                }
            }
        }
        if stored {
            continue;
        }
        let mut records = Vec::new();
        log.read(from, (end - from) as usize, &mut |r| {
            if r.offset < end && !r.control {
                records.push(r.to_owned());
            }
        });
        let run: Vec<(i64, offsetlab_records::NewRecord<'_>)> =
            records.iter().map(|r| (r.offset, r.as_new())).collect();
        offsetlab_records::batch::encode(&mut out, &run, -1);
    }
    out
}
