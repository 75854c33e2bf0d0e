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
    Poll { max: usize, timeout_ms: u64 },
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
    /// What the group's coordinator holds as committed for the consumer's assignment.
    Committed { timeout_ms: u64 },
    /// `close()`: the client's final commit (with auto-commit) and its LeaveGroup.
    Close,
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
    },
    /// The records a poll handed to the application, in order.
    Records {
        records: Vec<Delivered>,
    },
    /// The offsets a commit committed, or that the coordinator holds.
    Committed {
        offsets: Vec<PartitionOffset>,
    },
    /// An asynchronous commit was sent.
    CommitSent,
    /// An output record was sent in the open transaction.
    Sent,
    Closed,
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
                Reply::Ready { client_id: topic, created_ms_ago: offset.unsigned_abs() },
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
                Request::Poll { max, timeout_ms },
                Request::Commit,
                Request::CommitOffsets { offsets: vec![PartitionOffset { topic, partition: 0, offset }] },
                Request::CommitAsync,
                Request::TxnSend { topic: String::new(), key: None, value: Some(RecordBytes::new(vec![0, 255])) },
                Request::TxnCommit { offsets: Vec::new() },
                Request::CommitOffsetsAsync { offsets: vec![PartitionOffset { topic: String::new(), partition: 1, offset: 2 }] },
                Request::Committed { timeout_ms },
                Request::Close,
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
