//! What a client learns when it asks which operations it may perform (KIP-430: Metadata,
//! DescribeGroups, DescribeCluster, DescribeTopicPartitions). Kafka without an authorizer —
//! as the lab is — answers every operation the resource type has; a client that did not ask
//! gets `i32::MIN`. The bit sets are Kafka 4.4's (`AclOperation` codes as bits).

/// Not asked for.
pub(crate) const NOT_REQUESTED: i32 = i32::MIN;

/// A topic's: READ, WRITE, CREATE, DELETE, ALTER, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
pub(crate) const TOPIC: i32 = 3576;

/// A group's: READ, DELETE, DESCRIBE, DESCRIBE_CONFIGS, ALTER_CONFIGS.
pub(crate) const GROUP: i32 = 3400;

/// The cluster's: CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
/// IDEMPOTENT_WRITE.
pub(crate) const CLUSTER: i32 = 8096;

/// `ops` when the client asked, else [`NOT_REQUESTED`].
pub(crate) fn if_asked(asked: bool, ops: i32) -> i32 {
    if asked {
        ops
    } else {
        NOT_REQUESTED
    }
}
