//! Kafka's error codes, as the enum of the `kafka-protocol` crate names them
//! ([`ResponseError`]), and the `i16` a response field carries for each one the lab answers
//! with. One place, so a handler never writes a bare number.

pub use kafka_protocol::error::ResponseError;

/// No error.
pub const NONE: i16 = 0;

pub const CONCURRENT_TRANSACTIONS: i16 = ResponseError::ConcurrentTransactions.code();
pub const FENCED_LEADER_EPOCH: i16 = ResponseError::FencedLeaderEpoch.code();
pub const INVALID_PRODUCER_ID_MAPPING: i16 = ResponseError::InvalidProducerIdMapping.code();
pub const INVALID_UPDATE_VERSION: i16 = ResponseError::InvalidUpdateVersion.code();
pub const LOG_DIR_NOT_FOUND: i16 = ResponseError::LogDirNotFound.code();
pub const MISMATCHED_ENDPOINT_TYPE: i16 = ResponseError::MismatchedEndpointType.code();
pub const NO_REASSIGNMENT_IN_PROGRESS: i16 = ResponseError::NoReassignmentInProgress.code();
pub const PRODUCER_FENCED: i16 = ResponseError::ProducerFenced.code();
pub const TRANSACTIONAL_ID_NOT_FOUND: i16 = ResponseError::TransactionalIdNotFound.code();
pub const UNKNOWN_LEADER_EPOCH: i16 = ResponseError::UnknownLeaderEpoch.code();
pub const UNSUPPORTED_ENDPOINT_TYPE: i16 = ResponseError::UnsupportedEndpointType.code();
pub const COORDINATOR_NOT_AVAILABLE: i16 = ResponseError::CoordinatorNotAvailable.code();
pub const ELECTION_NOT_NEEDED: i16 = ResponseError::ElectionNotNeeded.code();
pub const CORRUPT_MESSAGE: i16 = ResponseError::CorruptMessage.code();
pub const GROUP_ID_NOT_FOUND: i16 = ResponseError::GroupIdNotFound.code();
pub const GROUP_SUBSCRIBED_TO_TOPIC: i16 = ResponseError::GroupSubscribedToTopic.code();
pub const ILLEGAL_SASL_STATE: i16 = ResponseError::IllegalSaslState.code();
pub const ILLEGAL_GENERATION: i16 = ResponseError::IllegalGeneration.code();
pub const INCONSISTENT_GROUP_PROTOCOL: i16 = ResponseError::InconsistentGroupProtocol.code();
pub const INVALID_COMMIT_OFFSET_SIZE: i16 = ResponseError::InvalidCommitOffsetSize.code();
pub const INVALID_CONFIG: i16 = ResponseError::InvalidConfig.code();
pub const INVALID_GROUP_ID: i16 = ResponseError::InvalidGroupId.code();
pub const INVALID_PARTITIONS: i16 = ResponseError::InvalidPartitions.code();
pub const INVALID_PRODUCER_EPOCH: i16 = ResponseError::InvalidProducerEpoch.code();
pub const INVALID_RECORD: i16 = ResponseError::InvalidRecord.code();
pub const INVALID_REPLICATION_FACTOR: i16 = ResponseError::InvalidReplicationFactor.code();
pub const INVALID_REPLICA_ASSIGNMENT: i16 = ResponseError::InvalidReplicaAssignment.code();
pub const INVALID_REQUEST: i16 = ResponseError::InvalidRequest.code();
pub const INVALID_SESSION_TIMEOUT: i16 = ResponseError::InvalidSessionTimeout.code();
pub const INVALID_TOPIC_EXCEPTION: i16 = ResponseError::InvalidTopicException.code();
pub const INVALID_TRANSACTION_TIMEOUT: i16 = ResponseError::InvalidTransactionTimeout.code();
pub const INVALID_TXN_STATE: i16 = ResponseError::InvalidTxnState.code();
pub const KAFKA_STORAGE_ERROR: i16 = ResponseError::KafkaStorageError.code();
pub const MESSAGE_TOO_LARGE: i16 = ResponseError::MessageTooLarge.code();
pub const MEMBER_ID_REQUIRED: i16 = ResponseError::MemberIdRequired.code();
pub const NOT_ENOUGH_REPLICAS: i16 = ResponseError::NotEnoughReplicas.code();
pub const NON_EMPTY_GROUP: i16 = ResponseError::NonEmptyGroup.code();
pub const OFFSET_METADATA_TOO_LARGE: i16 = ResponseError::OffsetMetadataTooLarge.code();
pub const OFFSET_OUT_OF_RANGE: i16 = ResponseError::OffsetOutOfRange.code();
pub const OUT_OF_ORDER_SEQUENCE_NUMBER: i16 = ResponseError::OutOfOrderSequenceNumber.code();
pub const POLICY_VIOLATION: i16 = ResponseError::PolicyViolation.code();
pub const REBALANCE_IN_PROGRESS: i16 = ResponseError::RebalanceInProgress.code();
pub const RECORD_LIST_TOO_LARGE: i16 = ResponseError::RecordListTooLarge.code();
pub const RESOURCE_NOT_FOUND: i16 = ResponseError::ResourceNotFound.code();
pub const SASL_AUTHENTICATION_FAILED: i16 = ResponseError::SaslAuthenticationFailed.code();
pub const SECURITY_DISABLED: i16 = ResponseError::SecurityDisabled.code();
pub const TOPIC_ALREADY_EXISTS: i16 = ResponseError::TopicAlreadyExists.code();
pub const UNSUPPORTED_SASL_MECHANISM: i16 = ResponseError::UnsupportedSaslMechanism.code();
pub const UNSUPPORTED_COMPRESSION_TYPE: i16 = ResponseError::UnsupportedCompressionType.code();
pub const UNKNOWN_MEMBER_ID: i16 = ResponseError::UnknownMemberId.code();
pub const UNKNOWN_SERVER_ERROR: i16 = ResponseError::UnknownServerError.code();
pub const UNKNOWN_TOPIC_ID: i16 = ResponseError::UnknownTopicId.code();
pub const UNKNOWN_TOPIC_OR_PARTITION: i16 = ResponseError::UnknownTopicOrPartition.code();
pub const UNSUPPORTED_VERSION: i16 = ResponseError::UnsupportedVersion.code();

/// The consumer group protocol's (KIP-848) member epoch fences.
pub const FENCED_MEMBER_EPOCH: i16 = ResponseError::FencedMemberEpoch.code();
pub const UNRELEASED_INSTANCE_ID: i16 = ResponseError::UnreleasedInstanceId.code();
pub const UNSUPPORTED_ASSIGNOR: i16 = ResponseError::UnsupportedAssignor.code();
pub const STALE_MEMBER_EPOCH: i16 = ResponseError::StaleMemberEpoch.code();
pub const FENCED_INSTANCE_ID: i16 = ResponseError::FencedInstanceId.code();

/// Share groups (KIP-932): a record acknowledged that the member does not hold, and a share
/// session that is not there or not at the epoch the client says.
pub const INVALID_RECORD_STATE: i16 = ResponseError::InvalidRecordState.code();
pub const SHARE_SESSION_NOT_FOUND: i16 = ResponseError::ShareSessionNotFound.code();
pub const INVALID_SHARE_SESSION_EPOCH: i16 = ResponseError::InvalidShareSessionEpoch.code();
pub const SHARE_SESSION_LIMIT_REACHED: i16 = ResponseError::ShareSessionLimitReached.code();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_codes_are_kafkas() {
        assert_eq!(UNKNOWN_SERVER_ERROR, -1);
        assert_eq!(
            (
                INVALID_RECORD_STATE,
                SHARE_SESSION_NOT_FOUND,
                INVALID_SHARE_SESSION_EPOCH
            ),
            (121, 122, 123)
        );
        assert_eq!(UNKNOWN_TOPIC_OR_PARTITION, 3);
        assert_eq!(INVALID_TOPIC_EXCEPTION, 17);
        assert_eq!(UNSUPPORTED_SASL_MECHANISM, 33);
        assert_eq!(ILLEGAL_SASL_STATE, 34);
        assert_eq!(SASL_AUTHENTICATION_FAILED, 58);
        assert_eq!(REBALANCE_IN_PROGRESS, 27);
        assert_eq!(KAFKA_STORAGE_ERROR, 56);
        assert_eq!(INVALID_RECORD, 87);
        assert_eq!(UNKNOWN_TOPIC_ID, 100);
    }
}
