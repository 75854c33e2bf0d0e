//! What every connection of one listener shares: the lab, the listener's configuration, the
//! idempotent producers' state and the group coordinator for real clients.

use crate::coordinator::Coordinator;
use crate::producers::Producers;
use offsetlab_lab::connections::Limits;
use offsetlab_lab::LabHandle;
use offsetlab_wire::frame::DEFAULT_MAX_FRAME;
use std::net::SocketAddr;

/// The lab is one broker, node 0, the leader of every partition.
pub(crate) const NODE: i32 = 0;

/// The cluster id Metadata and DescribeCluster answer with.
pub(crate) const CLUSTER_ID: &str = "offsetlab";

/// Every partition's leader epoch: its one leader has led it since it was created, as a new
/// partition's first leader does in Kafka (epoch 0).
pub(crate) const LEADER_EPOCH: i32 = 0;

/// How the listener behaves.
#[derive(Debug, Clone)]
pub struct KafkaConfig {
    /// `auto.create.topics.enable`: a Produce or Metadata request creates an unknown topic.
    pub auto_create_topics: bool,
    /// `socket.request.max.bytes`: a request announcing more is refused before anything is
    /// allocated for it, and its connection closed.
    pub max_request_bytes: usize,
    /// `max.connections` and `connections.max.idle.ms`.
    pub limits: Limits,
    /// `message.max.bytes`: the largest record batch a Produce may carry (as sent, compressed or
    /// not); a larger one is MESSAGE_TOO_LARGE.
    pub message_max_bytes: usize,
    /// `SASL_PLAINTEXT` with the PLAIN mechanism and these users; `None`: `PLAINTEXT`.
    pub sasl_plain: Option<std::sync::Arc<crate::sasl::PlainUsers>>,
}

/// Kafka's default `message.max.bytes`: 1 MiB and the 12 bytes of a batch's log overhead.
pub const DEFAULT_MESSAGE_MAX_BYTES: usize = 1_048_588;

impl Default for KafkaConfig {
    fn default() -> Self {
        Self {
            auto_create_topics: true,
            max_request_bytes: DEFAULT_MAX_FRAME,
            limits: Limits::default(),
            message_max_bytes: DEFAULT_MESSAGE_MAX_BYTES,
            sasl_plain: None,
        }
    }
}

/// How a real client's last transaction ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TxnOutcome {
    pub(crate) committed: bool,
    /// When it started (the lab's clock), −1 when it wrote nothing.
    pub(crate) started_at: i64,
}

/// One broker: what a request handler is given.
pub(crate) struct Broker {
    pub(crate) lab: LabHandle,
    pub(crate) config: KafkaConfig,
    /// The address clients are told to connect to (Metadata, FindCoordinator).
    pub(crate) advertised: SocketAddr,
    pub(crate) producers: Producers,
    /// Failed SASL authentications, for the log (written within bounds).
    pub(crate) auth_failures: crate::auth_failures::AuthFailureLog,
    pub(crate) coordinator: Coordinator,
    /// Real clients' share group members (heartbeats, epochs) and their share sessions.
    pub(crate) share_members: crate::share_members::ShareMembers,
    pub(crate) share_sessions: crate::share_sessions::ShareSessions,
    /// `transaction.timeout.ms` kept on wall time for real clients' transactions.
    pub(crate) txn_timeouts: crate::txn_timeouts::TxnTimeouts,
    /// How each real client's last transaction ended, for DescribeTransactions and
    /// ListTransactions; in memory (a restart forgets it, and the state reads Empty).
    pub(crate) txn_outcomes: std::sync::Mutex<std::collections::HashMap<String, TxnOutcome>>,
    /// The partitions each real client's open transaction added (AddPartitionsToTxn, and
    /// `__consumer_offsets`' for AddOffsetsToTxn) whether or not it wrote there yet — the lab's
    /// history learns them from the records — so EndTxn knows a transaction that wrote
    /// nothing from none at all, and DescribeTransactions lists them, as Kafka's coordinator
    /// does. In memory; cleared when the transaction ends.
    pub(crate) txn_added:
        std::sync::Mutex<std::collections::HashMap<String, std::collections::BTreeSet<(String, i32)>>>,
}

impl Broker {
    pub(crate) fn new(lab: LabHandle, config: KafkaConfig, advertised: SocketAddr) -> Self {
        Self {
            lab,
            config,
            advertised,
            producers: Producers::default(),
            auth_failures: Default::default(),
            coordinator: Coordinator::default(),
            share_members: Default::default(),
            share_sessions: Default::default(),
            txn_timeouts: Default::default(),
            txn_outcomes: Default::default(),
            txn_added: Default::default(),
        }
    }
}
