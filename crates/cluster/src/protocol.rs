//! What the runner and a consumer agent say to each other: one JSON object per line, the
//! runner's [`Request`]s on the agent's stdin, the agent's [`Reply`]s on its stdout.
//!
//! Layout (each a single line; JSON escapes every newline a key or value holds):
//!
//! ```text
//! → {"op":"poll","max":4,"timeout_ms":10000}
//! ← {"event":"records","records":[{"topic":"orders","partition":0,"offset":0,"key":"o-1","value":"…"}]}
//! → {"op":"commit"}
//! ← {"event":"committed","offsets":[{"topic":"orders","partition":0,"offset":4}]}
//! ```
//!
//! Keys and values are any bytes: a string when they are UTF-8, `{"base64": …}` otherwise
//! ([`RecordBytes`]), so a record reaches the audit exactly as the cluster handed it out.

use offsetlab_records::RecordBytes;
use serde::{Deserialize, Serialize};

/// What the runner asks an agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Request {
    /// `poll()`: waits up to `timeout_ms` for a first record (a group's first join takes a few
    /// seconds), then takes records until `max` — one batch, as `max.poll.records` bounds a
    /// Java client's — or until the consumer has caught up with the partition's end. With
    /// nothing to read it answers once the consumer has held its partitions a moment and
    /// nothing came.
    ///
    /// `assigned` is the model's assignment of this consumer after the poll (partitions of its
    /// topic): the agent fetches only once the group has given it exactly those — a rebalance
    /// the model completed inside this poll (a dead member's session ran out) is waited for,
    /// up to `timeout_ms`; one the cluster completed earlier than the model is held back, its
    /// partitions paused. Empty: the model's group is still rebalancing, and nothing is handed
    /// out. Absent: whatever the group gives.
    Poll {
        max: usize,
        timeout_ms: u64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        assigned: Option<Vec<i32>>,
        /// A transactional sink's next offsets now, by partition: where a partition given to
        /// the consumer in this poll starts.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        starts: Vec<(i32, i64)>,
        /// How many records of each partition the model's poll handed out: the batch is made
        /// of those shares (what the cluster holds decides the records), not of whichever
        /// partition's fetch answered first. Absent: up to `max`, in fetch order.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        shares: Option<Vec<(i32, usize)>>,
    },
    /// `commitSync()` of the positions poll reached.
    Commit,
    /// `commitSync(offsets)`: each the next offset to read of its partition.
    CommitOffsets { offsets: Vec<PartitionOffset> },
    /// `commitAsync()` of the positions poll reached: answered at once, lands later.
    CommitAsync,
    /// `commitAsync(offsets)`: each the next offset to read of its partition; answered at
    /// once, lands later.
    CommitOffsetsAsync { offsets: Vec<PartitionOffset> },
    /// A read-process-write application's output record, sent in its open transaction (one
    /// begins with the first): `topic` is the output topic's name on the cluster.
    TxnSend {
        topic: String,
        key: Option<RecordBytes>,
        value: Option<RecordBytes>,
    },
    /// `sendOffsetsToTransaction(offsets, the consumer's group metadata)` then
    /// `commitTransaction()`: the output and the consumed offsets become visible together.
    TxnCommit { offsets: Vec<PartitionOffset> },
    /// `seek(partition, offset)` of each: the next poll of those partitions fetches from
    /// there (nothing is committed).
    Seek { offsets: Vec<PartitionOffset> },
    /// What the group's coordinator holds as committed for the consumer's assignment.
    Committed { timeout_ms: u64 },
    /// `close()`: the client's final commit (with auto-commit) and its LeaveGroup.
    Close,
    /// A share consumer's `poll()` that hands out records: empty polls before it are waited
    /// through for up to `timeout_ms` (`settle_ms` when the model's poll acquired nothing:
    /// long enough for anything the broker would hand out to come).
    SharePoll {
        want: usize,
        timeout_ms: u64,
        settle_ms: u64,
    },
    /// `acknowledge(record, type)` of each, then `commitSync()`.
    ShareAck { acks: Vec<ShareAck> },
}

/// One share acknowledgement: a record of the consumer's topic and how it ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareAck {
    pub partition: i32,
    pub offset: i64,
    /// `accept`, `release` or `reject`.
    #[serde(rename = "type")]
    pub kind: String,
}

/// What an agent answers, one per request (and [`Reply::Ready`] first).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "kebab-case")]
pub enum Reply {
    /// The consumer exists and has joined its group (or gave up waiting); `client_id` is how
    /// the cluster knows it, `created_ms_ago` when its client — and its auto-commit timer —
    /// was created.
    Ready {
        client_id: String,
        #[serde(default)]
        created_ms_ago: u64,
        /// The client stopped as it was given its partitions (see [`Reply::Stopped`]).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stopped: Option<String>,
    },
    /// The client stopped instead of polling: a partition it was given has no committed offset
    /// and `auto.offset.reset` is `none` (librdkafka's `error`, the Java client's
    /// `NoOffsetForPartitionException`). The application stops; the runner closes it.
    Stopped {
        message: String,
    },
    /// The records a poll handed to the application, in order.
    Records {
        records: Vec<Delivered>,
    },
    /// The offsets a commit committed, or that the coordinator holds.
    Committed {
        offsets: Vec<PartitionOffset>,
    },
    /// The group's coordinator refused a commit: the consumer is no longer a member of the
    /// group's generation (a zombie fenced: `UNKNOWN_MEMBER_ID`, `ILLEGAL_GENERATION`), or the
    /// group is settling a rebalance. Nothing was committed; the agent goes on.
    CommitRefused {
        message: String,
    },
    /// An asynchronous commit was sent.
    CommitSent,
    /// The consumer's fetch positions are where a seek put them.
    Sought {
        offsets: Vec<PartitionOffset>,
    },
    /// An output record was sent in the open transaction.
    Sent,
    Closed,
    /// The records a share consumer's poll handed to the application, with the delivery
    /// count the broker gave each.
    ShareRecords {
        records: Vec<ShareDelivered>,
    },
    /// The broker accepted a share consumer's acknowledgements.
    Acknowledged,
    /// The request failed (the client's error); the agent goes on.
    Failed {
        message: String,
    },
}

/// A record as the cluster handed it to the application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Delivered {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<RecordBytes>,
    pub value: Option<RecordBytes>,
}

/// A record as the cluster handed it to a share consumer's application.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShareDelivered {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
    pub key: Option<RecordBytes>,
    pub value: Option<RecordBytes>,
    /// `ConsumerRecord.deliveryCount()`: 1 the first time the record is handed out.
    pub delivery_count: u16,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartitionOffset {
    pub topic: String,
    pub partition: i32,
    pub offset: i64,
}

/// A line that is not a message of the protocol.
#[derive(Debug, thiserror::Error)]
#[error("not a message of the agent protocol: {0}")]
pub struct ProtocolError(String);

/// A message as one line (no newline inside, none at the end).
pub fn encode<T: Serialize>(message: &T) -> String {
    // A value of these types always serializes (string keys, no maps with other keys).
    serde_json::to_string(message).unwrap_or_else(|e| {
        serde_json::json!({ "event": "failed", "message": format!("unencodable: {e}") }).to_string()
    })
}

pub fn decode<'a, T: Deserialize<'a>>(line: &'a str) -> Result<T, ProtocolError> {
    serde_json::from_str(line).map_err(|e| ProtocolError(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bytes() -> impl Strategy<Value = Option<RecordBytes>> {
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64).prop_map(RecordBytes::new))
    }

    proptest! {
        /// Every record reads back as the cluster handed it out, whatever its bytes and names.
        #[test]
        fn replies_read_back_as_written(
            topic in "\\PC{0,40}",
            partition in 0i32..10_000,
            offset in any::<i64>(),
            key in bytes(),
            value in bytes(),
            message in "\\PC{0,80}",
        ) {
            let replies = [
                Reply::Records { records: vec![Delivered { topic: topic.clone(), partition, offset, key, value }] },
                Reply::Committed { offsets: vec![PartitionOffset { topic: topic.clone(), partition, offset }] },
                Reply::Failed { message },
                Reply::Sought { offsets: vec![PartitionOffset { topic: topic.clone(), partition, offset }] },
                Reply::Ready { client_id: topic.clone(), created_ms_ago: offset.unsigned_abs(), stopped: None },
                Reply::Ready { client_id: String::new(), created_ms_ago: 0, stopped: Some(topic.clone()) },
                Reply::Stopped { message: topic.clone() },
                Reply::CommitRefused { message: topic.clone() },
                Reply::ShareRecords { records: vec![ShareDelivered { topic, partition, offset, key: None, value: Some(RecordBytes::new(vec![0xff])), delivery_count: partition as u16 }] },
                Reply::Acknowledged,
            ];
            for reply in replies {
                let line = encode(&reply);
                prop_assert!(!line.contains('\n'));
                prop_assert_eq!(decode::<Reply>(&line).ok(), Some(reply));
            }
        }

        #[test]
        fn requests_read_back_as_written(max in any::<usize>(), timeout_ms in any::<u64>(), topic in "\\PC{0,40}", offset in any::<i64>()) {
            let requests = [
                Request::Poll { max, timeout_ms, assigned: None, starts: Vec::new(), shares: None },
                Request::Poll { max: 1, timeout_ms, assigned: Some(vec![offset.unsigned_abs() as i32 & 0xff, 3]), starts: vec![(1, offset)], shares: Some(vec![(0, max)]) },
                Request::Commit,
                Request::CommitOffsets { offsets: vec![PartitionOffset { topic, partition: 0, offset }] },
                Request::CommitAsync,
                Request::TxnSend { topic: String::new(), key: None, value: Some(RecordBytes::new(vec![0, 255])) },
                Request::TxnCommit { offsets: Vec::new() },
                Request::CommitOffsetsAsync { offsets: vec![PartitionOffset { topic: String::new(), partition: 1, offset: 2 }] },
                Request::Committed { timeout_ms },
                Request::Seek { offsets: vec![PartitionOffset { topic: "ü #\"x".into(), partition: 2, offset }] },
                Request::Close,
                Request::SharePoll { want: max, timeout_ms, settle_ms: 1 },
                Request::ShareAck { acks: vec![ShareAck { partition: 0, offset, kind: "release".into() }] },
            ];
            for request in requests {
                prop_assert_eq!(decode::<Request>(&encode(&request)).ok(), Some(request));
            }
        }
    }

    #[test]
    fn a_line_that_is_no_message_is_an_error() {
        for bad in [
            "",
            "{}",
            "{\"op\":\"frobnicate\"}",
            "{\"op\":\"poll\",\"max\":-1,\"timeout_ms\":1}",
            "poll",
        ] {
            assert!(decode::<Request>(bad).is_err(), "{bad}");
        }
    }
}
