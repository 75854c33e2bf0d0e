//! What the listener advertises in ApiVersions: each API it serves, with the versions it serves
//! (never more than the `kafka-protocol` crate can encode). An API joins this table when its
//! handler does; a client then never sends what the listener cannot answer.

use kafka_protocol::messages::api_versions_response::ApiVersion;
use kafka_protocol::messages::{ApiKey, ApiVersionsResponse};

/// (API, lowest version, highest version) served: what Apache Kafka 4.4 serves for each of
/// these APIs, up to what the `kafka-protocol` crate can encode (ListOffsets v11, ApiVersions
/// v5, DescribeLogDirs v5 and TxnOffsetCommit v6 are beyond it, and its OffsetCommit and
/// OffsetFetch v10 — topics by id — lists v10 but cannot decode a v10 request's topics;
/// docs/CONFORMANCE.md).
pub const SERVED: &[(ApiKey, i16, i16)] = &[
    // v3 is the flexible one current clients start with; kcat (librdkafka 2.x) accepts it.
    (ApiKey::ApiVersions, 0, 4),
    (ApiKey::Metadata, 0, 13),
    (ApiKey::ListOffsets, 1, 10),
    (ApiKey::Fetch, 4, 18),
    // Record batches v2 only (librdkafka speaks them with Produce ≥ 3 and Fetch ≥ 4); v13 names
    // topics by id. Advertised from v0, as Kafka 4 does ([`advertised`]).
    (ApiKey::Produce, 3, 13),
    // Producer ids for idempotent producers (the default of current clients).
    (ApiKey::InitProducerId, 0, 5),
    // Transactions of real producers; AddPartitionsToTxn v4+ batches transactions, EndTxn v5
    // bumps the epoch at each end (KIP-890).
    (ApiKey::AddPartitionsToTxn, 0, 5),
    (ApiKey::AddOffsetsToTxn, 0, 4),
    (ApiKey::TxnOffsetCommit, 0, 5),
    (ApiKey::EndTxn, 0, 5),
    // What a transactional or idempotent producer's state looks like (KIP-664).
    (ApiKey::DescribeProducers, 0, 0),
    (ApiKey::DescribeTransactions, 0, 0),
    (ApiKey::ListTransactions, 0, 2),
    // Admin: topics created (mapped onto `topic` lines), records deleted, configs described.
    (ApiKey::CreateTopics, 2, 7),
    (ApiKey::CreatePartitions, 0, 3),
    (ApiKey::DeleteRecords, 0, 2),
    (ApiKey::DescribeConfigs, 1, 4),
    // A live topic's retention and cleanup settings (`alter-topic` lines).
    (ApiKey::IncrementalAlterConfigs, 0, 1),
    (ApiKey::AlterConfigs, 0, 2),
    // What one broker answers truthfully: its one log directory, leaders already elected at
    // epoch 0, nothing reassigning, no authorizer (SECURITY_DISABLED), no SCRAM users, no
    // quotas, no feature flags, a quorum of one.
    (ApiKey::DescribeLogDirs, 1, 4),
    (ApiKey::AlterReplicaLogDirs, 1, 2),
    (ApiKey::DescribeTopicPartitions, 0, 0),
    (ApiKey::ElectLeaders, 0, 2),
    (ApiKey::ListPartitionReassignments, 0, 0),
    (ApiKey::AlterPartitionReassignments, 0, 1),
    (ApiKey::OffsetForLeaderEpoch, 2, 4),
    (ApiKey::DescribeAcls, 1, 3),
    (ApiKey::CreateAcls, 1, 3),
    (ApiKey::DeleteAcls, 1, 3),
    (ApiKey::DescribeUserScramCredentials, 0, 0),
    (ApiKey::AlterUserScramCredentials, 0, 0),
    (ApiKey::DescribeClientQuotas, 0, 1),
    (ApiKey::AlterClientQuotas, 0, 1),
    (ApiKey::DescribeCluster, 0, 2),
    (ApiKey::DescribeQuorum, 0, 2),
    (ApiKey::UpdateFeatures, 0, 2),
    // Deletions: topics (by name), Empty groups, a group's offsets for topics it does not read.
    (ApiKey::DeleteTopics, 1, 6),
    (ApiKey::DeleteGroups, 0, 2),
    (ApiKey::OffsetDelete, 0, 0),
    // The lab's groups: where their coordinator is, who is in them, what they committed.
    (ApiKey::FindCoordinator, 0, 6),
    (ApiKey::ListGroups, 0, 5),
    (ApiKey::DescribeGroups, 0, 6),
    (ApiKey::OffsetFetch, 1, 9),
    // Commits: a member's (checked against its generation), or from outside a group (resets).
    (ApiKey::OffsetCommit, 2, 9),
    // Groups of real clients: the classic (eager) group protocol.
    (ApiKey::JoinGroup, 0, 9),
    (ApiKey::SyncGroup, 0, 5),
    (ApiKey::Heartbeat, 0, 4),
    (ApiKey::ConsumerGroupHeartbeat, 0, 1),
    (ApiKey::ConsumerGroupDescribe, 0, 1),
    (ApiKey::LeaveGroup, 0, 5),
    // Share groups of real clients (KIP-932), at the versions Kafka 4.2 serves and librdkafka's
    // share consumer asks for (v0 was 4.0's early access).
    (ApiKey::ShareGroupHeartbeat, 1, 1),
    (ApiKey::ShareGroupDescribe, 1, 1),
    (ApiKey::ShareFetch, 1, 1),
    (ApiKey::ShareAcknowledge, 1, 1),
    // A share group's start offsets, as kafka-share-groups.sh and the admin client see and move
    // them. Kafka 4.2 serves DescribeShareGroupOffsets v1 (it adds a lag, KIP-1226); the crate
    // encodes v0.
    (ApiKey::DescribeShareGroupOffsets, 0, 0),
    (ApiKey::AlterShareGroupOffsets, 0, 0),
    (ApiKey::DeleteShareGroupOffsets, 0, 0),
    // SASL/PLAIN (`serve --kafka-sasl-plain-users`). Kafka lists both on every listener, and
    // answers ILLEGAL_SASL_STATE where there is nothing to authenticate. After a v0 handshake
    // the token travels as a bare frame; librdkafka 2.0 looks for v0 to know handshakes exist.
    (ApiKey::SaslHandshake, 0, 1),
    (ApiKey::SaslAuthenticate, 0, 2),
];

/// The range served for `api_key`, if it is served.
pub fn served(api_key: ApiKey) -> Option<(i16, i16)> {
    SERVED
        .iter()
        .find(|(k, _, _)| *k == api_key)
        .map(|&(_, lo, hi)| (lo, hi))
}

/// The range advertised for `api_key` in ApiVersions: the range served, except Produce, which
/// Kafka 4 advertises from v0 although it serves v3 and later (KAFKA-18659: librdkafka before
/// 2.10 stops compressing when a broker's Produce starts at v3). A request at an advertised
/// version that is not served closes its connection, as Kafka's does.
pub fn advertised(api_key: ApiKey) -> Option<(i16, i16)> {
    served(api_key).map(|(lo, hi)| {
        if api_key == ApiKey::Produce {
            (0, hi)
        } else {
            (lo, hi)
        }
    })
}

pub fn is_served(api_key: ApiKey, version: i16) -> bool {
    served(api_key).is_some_and(|(lo, hi)| (lo..=hi).contains(&version))
}

/// The ApiVersions response body: `error_code` 0, or 35 (UNSUPPORTED_VERSION) when the client
/// asked with a version the listener does not speak — the client then retries with one it lists.
pub fn api_versions_response(error_code: i16) -> ApiVersionsResponse {
    ApiVersionsResponse::default()
        .with_error_code(error_code)
        .with_api_keys(
            SERVED
                .iter()
                .filter_map(|&(k, _, _)| {
                    let (lo, hi) = advertised(k)?;
                    Some(
                        ApiVersion::default()
                            .with_api_key(k as i16)
                            .with_min_version(lo)
                            .with_max_version(hi),
                    )
                })
                .collect(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every advertised range lies inside what the codec can decode and encode.
    #[test]
    fn nothing_is_advertised_beyond_the_codec() {
        for &(k, lo, hi) in SERVED {
            let v = k.valid_versions();
            assert!(
                v.min <= lo && hi <= v.max && lo <= hi,
                "{k:?} {lo}..={hi} vs {v:?}"
            );
        }
        assert!(is_served(ApiKey::ApiVersions, 4));
        assert!(
            is_served(ApiKey::Produce, 13),
            "v13 names topics by id (Kafka 4.1+)"
        );
        assert!(is_served(ApiKey::Fetch, 18) && is_served(ApiKey::Metadata, 13));
        // Kafka 4 advertises Produce from v0 (KAFKA-18659) and refuses v0–v2 when sent.
        assert_eq!(advertised(ApiKey::Produce), Some((0, 13)));
        assert!(!is_served(ApiKey::Produce, 2));
    }
}
