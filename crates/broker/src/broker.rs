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

/// One broker: what a request handler is given.
pub(crate) struct Broker {
    pub(crate) lab: LabHandle,
    pub(crate) config: KafkaConfig,
    /// The address clients are told to connect to (Metadata, FindCoordinator).
    pub(crate) advertised: SocketAddr,
    pub(crate) producers: Producers,
    pub(crate) coordinator: Coordinator,
    /// `transaction.timeout.ms` kept on wall time for real clients' transactions.
    pub(crate) txn_timeouts: crate::txn_timeouts::TxnTimeouts,
}

impl Broker {
    pub(crate) fn new(lab: LabHandle, config: KafkaConfig, advertised: SocketAddr) -> Self {
        Self {
            lab,
            config,
            advertised,
            producers: Producers::default(),
            coordinator: Coordinator::default(),
            txn_timeouts: Default::default(),
        }
    }
}
