//! The consumer protocol's bytes: what a consumer puts in JoinGroup's metadata (its
//! subscription) and what the leader hands each member in SyncGroup (its assignment). The
//! broker carries them opaquely; the lab reads them to show who reads what. Each is an `int16`
//! version, then the struct of that version (`ConsumerProtocolSubscription`,
//! `ConsumerProtocolAssignment`, versions 0–3).

use bytes::{Buf, Bytes, BytesMut};
use kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopic;
use kafka_protocol::messages::{ConsumerProtocolAssignment, ConsumerProtocolSubscription, TopicName};
use kafka_protocol::protocol::{Decodable, Encodable, StrBytes};

/// The newest version of both structs this codec reads.
const MAX_VERSION: i16 = 3;

/// The version prefix and the body after it; `None` when there is no prefix.
fn versioned(bytes: &Bytes) -> Option<(i16, Bytes)> {
    if bytes.len() < 2 {
        return None;
    }
    let mut body = bytes.clone();
    let version = body.get_i16().clamp(0, MAX_VERSION);
    Some((version, body))
}

/// The topics a subscription names; none when the bytes are not a subscription.
pub fn subscribed_topics(bytes: &Bytes) -> Vec<String> {
    versioned(bytes)
        .and_then(|(v, mut b)| ConsumerProtocolSubscription::decode(&mut b, v).ok())
        .map(|s| s.topics.iter().map(ToString::to_string).collect())
        .unwrap_or_default()
}

/// The (topic, partition) pairs an assignment holds, in its order; none when the bytes are not
/// an assignment.
pub fn assigned_partitions(bytes: &Bytes) -> Vec<(String, i32)> {
    versioned(bytes)
        .and_then(|(v, mut b)| ConsumerProtocolAssignment::decode(&mut b, v).ok())
        .map(|a| {
            a.assigned_partitions
                .iter()
                .flat_map(|t| t.partitions.iter().map(move |p| (t.topic.0.to_string(), *p)))
                .collect()
        })
        .unwrap_or_default()
}

/// A subscription (version 0) to `topics`: what a consumer sends as JoinGroup's metadata, and
/// what DescribeGroups hands back as a member's metadata.
pub fn subscription<'a>(topics: impl IntoIterator<Item = &'a str>) -> Bytes {
    let subscription = ConsumerProtocolSubscription::default().with_topics(
        topics
            .into_iter()
            .map(|t| StrBytes::from_string(t.to_string()))
            .collect(),
    );
    version_0(&subscription)
}

/// The version prefix (0) and `body` encoded in version 0; empty if it cannot be encoded.
fn version_0(body: &impl Encodable) -> Bytes {
    let mut bytes = BytesMut::new();
    bytes.extend_from_slice(&0i16.to_be_bytes());
    if body.encode(&mut bytes, 0).is_err() {
        bytes.clear();
    }
    bytes.freeze()
}

/// An assignment (version 0) of `partitions`, topic by topic.
pub fn assignment<'a>(partitions: impl IntoIterator<Item = (&'a str, Vec<i32>)>) -> Bytes {
    let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(
        partitions
            .into_iter()
            .map(|(t, ps)| {
                AssignedTopic::default()
                    .with_topic(TopicName(StrBytes::from_string(t.to_string())))
                    .with_partitions(ps)
            })
            .collect(),
    );
    version_0(&assignment)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subscription_reads_back() {
        assert_eq!(
            subscribed_topics(&subscription(["orders", "audit"])),
            ["orders", "audit"]
        );
    }

    #[test]
    fn an_assignment_reads_back() {
        let bytes = assignment([("orders", vec![0, 2]), ("audit", vec![1])]);
        assert_eq!(
            assigned_partitions(&bytes),
            vec![("orders".into(), 0), ("orders".into(), 2), ("audit".into(), 1)]
        );
    }

    #[test]
    fn a_subscription_reads_back_and_garbage_is_nothing() {
        let mut bytes = BytesMut::new();
        bytes.extend_from_slice(&1i16.to_be_bytes());
        ConsumerProtocolSubscription::default()
            .with_topics(vec![StrBytes::from_static_str("orders")])
            .encode(&mut bytes, 1)
            .expect("encode");
        assert_eq!(subscribed_topics(&bytes.freeze()), vec!["orders".to_string()]);
        for junk in [&b""[..], b"\0", b"\0\0\xff\xff\xff"] {
            assert!(subscribed_topics(&Bytes::copy_from_slice(junk)).is_empty());
            assert!(assigned_partitions(&Bytes::copy_from_slice(junk)).is_empty());
        }
    }
}
