//! The errors an operation on the lab can end with. An operation that returns an error has
//! changed nothing.

use crate::sink::SinkError;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LabError {
    #[error("unknown topic '{0}'")]
    UnknownTopic(String),
    #[error("topic '{0}' already exists")]
    TopicExists(String),
    #[error("unknown consumer '{0}'")]
    UnknownConsumer(String),
    #[error("consumer '{0}' already exists (use restart to start it again)")]
    ConsumerExists(String),
    #[error("unknown group '{0}'")]
    UnknownGroup(String),
    #[error("{0}")]
    InvalidArgument(String),
    /// Kafka's `INVALID_PARTITIONS`: a partition count a topic cannot have or cannot go to.
    #[error("{0}")]
    InvalidPartitions(String),
    /// Kafka's MESSAGE_TOO_LARGE: a batch larger, as the log would write it, than the topic's
    /// `max.message.bytes`.
    #[error("a record batch of {size} bytes is larger than max.message.bytes ({limit}) of topic '{topic}'")]
    MessageTooLarge {
        topic: String,
        size: usize,
        limit: usize,
    },
    #[error("consumer '{name}' is {state}: {hint}")]
    WrongState {
        name: String,
        state: String,
        hint: &'static str,
    },
    #[error("consumer '{0}' has no polled records to process (poll first)")]
    NothingInFlight(String),
    #[error("consumer '{0}' has no open transaction to abort (process a record first)")]
    NoOpenTransaction(String),
    /// Kafka's own wording, from `kafka-consumer-groups.sh --reset-offsets`.
    #[error(
        "Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}."
    )]
    GroupActive { group: String, state: String },
    #[error("group '{group}' already writes to its {existing} sink; every consumer of a group shares its sink (asked for {requested})")]
    SinkMismatch {
        group: String,
        existing: String,
        requested: String,
    },
    #[error("partition {partition} is not assigned to consumer '{consumer}'")]
    NotAssigned { consumer: String, partition: i32 },
    #[error("cannot shift offset for {0} since there is no current committed offset")]
    NoCommittedOffset(String),
    #[error(transparent)]
    Sink(#[from] SinkError),
    /// Kafka's `NON_EMPTY_GROUP`.
    #[error("group '{group}' is not empty (it is {state}): only an Empty group can be deleted")]
    GroupNotEmpty { group: String, state: String },
    /// Kafka's `GROUP_SUBSCRIBED_TO_TOPIC` (KIP-496).
    #[error("group '{group}' has an active member reading topic '{topic}': its offsets for that topic cannot be deleted while it is subscribed")]
    GroupSubscribedToTopic { group: String, topic: String },
    /// Kafka's `INVALID_TOPIC_EXCEPTION`.
    #[error("invalid topic name '{name}': {reason}")]
    InvalidTopic { name: String, reason: String },
    /// Kafka's `INVALID_GROUP_ID`.
    #[error("invalid group id '{0}': a group id is 1 to 32767 bytes long")]
    InvalidGroupId(String),
    /// A topic (or one of its partitions) the lab does not have: Kafka's
    /// `UNKNOWN_TOPIC_OR_PARTITION`.
    #[error("topic '{topic}' has no partition {partition} (it has {partitions})")]
    UnknownPartition {
        topic: String,
        partition: i32,
        partitions: usize,
    },
    /// A real client's commit from a member its group does not have: Kafka's
    /// `UNKNOWN_MEMBER_ID`.
    #[error("UNKNOWN_MEMBER_ID: {member} is not a member of group {group}")]
    UnknownMember { group: String, member: String },
    /// A real client's commit made in another generation than its group's: Kafka's
    /// `ILLEGAL_GENERATION` (the member must join again).
    #[error(
        "ILLEGAL_GENERATION: {member} committed with generation {generation}, group {group} is at {current}"
    )]
    IllegalGeneration {
        group: String,
        member: String,
        generation: i32,
        current: i32,
    },
    /// A real client's commit to a consumer-protocol group (KIP-848) at another member epoch
    /// than the member's: Kafka's `STALE_MEMBER_EPOCH`.
    #[error(
        "STALE_MEMBER_EPOCH: {member} committed at member epoch {epoch}, its epoch in group {group} is {current}"
    )]
    StaleMemberEpoch {
        group: String,
        member: String,
        epoch: i32,
        current: i32,
    },
    /// A commit while the group waits for its leader's assignment: Kafka's
    /// `REBALANCE_IN_PROGRESS`.
    #[error("REBALANCE_IN_PROGRESS: group {group} is settling its assignment")]
    RebalanceInProgress { group: String },
    /// DeleteRecords up to an offset past the log end: Kafka's `OFFSET_OUT_OF_RANGE`.
    #[error(
        "OFFSET_OUT_OF_RANGE: {tp} can delete records up to its log end offset {log_end} (asked {asked})"
    )]
    OffsetOutOfRange { tp: String, log_end: i64, asked: i64 },
    /// Commit metadata longer than `offset.metadata.max.bytes`: Kafka's
    /// `OFFSET_METADATA_TOO_LARGE`, and nothing is stored.
    #[error("{tp}: commit metadata of {bytes} bytes is longer than offset.metadata.max.bytes ({limit}): OFFSET_METADATA_TOO_LARGE")]
    OffsetMetadataTooLarge { tp: String, bytes: usize, limit: usize },
    #[error("storage: {0}")]
    Storage(StorageError),
    /// A share group's acknowledgement of a record the member does not hold (not acquired, or
    /// acquired by another member, or its lock expired).
    #[error("INVALID_RECORD_STATE: {0}")]
    InvalidRecordState(String),
    /// A config value Kafka's validation refuses (a share group's delivery limit out of bounds).
    #[error("INVALID_CONFIG: {0}")]
    InvalidConfig(String),
    /// A group id used by a group of the other type (a consumer group's id for a share group).
    #[error("INCONSISTENT_GROUP_PROTOCOL: {0}")]
    InconsistentGroupProtocol(String),
    /// Consumer protocol: a static member's new process heartbeats with a `group.instance.id`
    /// whose previous process never sent its static leave (it crashed) and is still a member.
    #[error("UNRELEASED_INSTANCE_ID: {0}")]
    UnreleasedInstanceId(String),
    /// Kafka's `NON_EMPTY_GROUP` for AlterShareGroupOffsets and DeleteShareGroupOffsets: a share
    /// group's start offsets move only while nobody reads with them.
    #[error("share group '{group}' is {state}: its start offsets can be altered or deleted only while it is Empty (stop or close its consumers first)")]
    ShareGroupNotEmpty { group: String, state: String },
    /// Kafka's `GROUP_ID_NOT_FOUND` for a share-group admin call on a consumer group.
    #[error("group '{0}' is not a share group")]
    NotAShareGroup(String),
}

impl LabError {
    /// The error code Kafka answers the same request with, by name (`UNKNOWN_MEMBER_ID`), for
    /// the refusals that are Kafka's own; `None` for the lab's own rules and for input no
    /// request could carry. An `expect-error` line names these.
    pub fn kafka_error(&self) -> Option<&'static str> {
        Some(match self {
            Self::UnknownTopic(_) | Self::UnknownPartition { .. } => "UNKNOWN_TOPIC_OR_PARTITION",
            Self::TopicExists(_) => "TOPIC_ALREADY_EXISTS",
            Self::InvalidTopic { .. } => "INVALID_TOPIC_EXCEPTION",
            Self::InvalidGroupId(_) => "INVALID_GROUP_ID",
            Self::InvalidPartitions(_) => "INVALID_PARTITIONS",
            Self::MessageTooLarge { .. } => "MESSAGE_TOO_LARGE",
            // DeleteGroups and OffsetDelete of a group the coordinator does not have.
            Self::UnknownGroup(_) => "GROUP_ID_NOT_FOUND",
            Self::GroupNotEmpty { .. } => "NON_EMPTY_GROUP",
            Self::GroupSubscribedToTopic { .. } => "GROUP_SUBSCRIBED_TO_TOPIC",
            // An offset commit from outside a group that has members (an admin's, generation
            // -1) is refused so by the coordinator; kafka-consumer-groups checks the state first.
            Self::GroupActive { .. } | Self::UnknownMember { .. } => "UNKNOWN_MEMBER_ID",
            Self::IllegalGeneration { .. } => "ILLEGAL_GENERATION",
            Self::StaleMemberEpoch { .. } => "STALE_MEMBER_EPOCH",
            Self::RebalanceInProgress { .. } => "REBALANCE_IN_PROGRESS",
            Self::OffsetOutOfRange { .. } => "OFFSET_OUT_OF_RANGE",
            Self::OffsetMetadataTooLarge { .. } => "OFFSET_METADATA_TOO_LARGE",
            Self::Storage(_) => "KAFKA_STORAGE_ERROR",
            Self::InvalidRecordState(_) => "INVALID_RECORD_STATE",
            Self::InvalidConfig(_) => "INVALID_CONFIG",
            Self::InconsistentGroupProtocol(_) => "INCONSISTENT_GROUP_PROTOCOL",
            Self::UnreleasedInstanceId(_) => "UNRELEASED_INSTANCE_ID",
            Self::ShareGroupNotEmpty { .. } => "NON_EMPTY_GROUP",
            Self::NotAShareGroup(_) => "GROUP_ID_NOT_FOUND",
            Self::UnknownConsumer(_)
            | Self::ConsumerExists(_)
            | Self::InvalidArgument(_)
            | Self::WrongState { .. }
            | Self::NothingInFlight(_)
            | Self::NoOpenTransaction(_)
            | Self::SinkMismatch { .. }
            | Self::NotAssigned { .. }
            | Self::NoCommittedOffset(_)
            | Self::Sink(_) => return None,
        })
    }

    /// Kafka's refusal of an internal topic (`__consumer_offsets`, `__transaction_state`) for
    /// what a client asked: `why` completes "it is one of Kafka's internal topics".
    pub fn internal_topic(name: &str, why: &str) -> Self {
        Self::InvalidTopic {
            name: name.to_string(),
            reason: format!("it is one of Kafka's internal topics{why}"),
        }
    }

    /// A storage failure with nothing more known about it.
    pub fn storage(message: impl Into<String>) -> Self {
        Self::Storage(StorageError {
            kind: StorageKind::Io,
            message: message.into(),
        })
    }
}

/// What ran out, or broke, when storage failed: it decides what a client is told (HTTP 507 for a
/// full disk, 503 for no file descriptors; Kafka's `KAFKA_STORAGE_ERROR` for either).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StorageKind {
    /// No space left on the device, or over a quota.
    Full,
    /// No file descriptors left, in the process or the system.
    NoDescriptors,
    /// Any other I/O error.
    Io,
}

impl StorageKind {
    /// The kind of an I/O error, by its OS error code.
    pub fn of(e: &std::io::Error) -> Self {
        // ENOSPC, EDQUOT; EMFILE, ENFILE.
        match e.raw_os_error() {
            Some(28 | 122) => Self::Full,
            Some(24 | 23) => Self::NoDescriptors,
            _ => Self::Io,
        }
    }
}

/// A storage failure: its kind and what failed where.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct StorageError {
    pub kind: StorageKind,
    pub message: String,
}

impl From<std::io::Error> for StorageError {
    fn from(e: std::io::Error) -> Self {
        Self {
            kind: StorageKind::of(&e),
            message: e.to_string(),
        }
    }
}
