//! # offsetlab-wire
//!
//! The Kafka wire protocol, as offsetlab's listener speaks it — pure: byte buffers in, byte
//! buffers out, no sockets and no async, so every rule can be tested on bytes.
//!
//! - [`frame`]: a request is a 4-byte big-endian size and that many bytes. The size is checked
//!   against a limit (Kafka's `socket.request.max.bytes`, 100 MiB) *before* anything is
//!   allocated for it.
//! - [`request`]: the header (api key, version, correlation id, client id) and the body,
//!   decoded with the `kafka-protocol` crate; an API or version the listener does not serve is
//!   reported with the correlation id, so it can be answered the way Kafka answers it.
//! - [`response`]: a body encoded behind its response header and size prefix (ApiVersions always
//!   with header v0, as Kafka does).
//! - [`versions`]: the APIs and version ranges the listener advertises in ApiVersions.
//! - [`error`]: Kafka's error codes, by name.
//! - [`consumer_protocol`]: subscriptions and assignments, the bytes groups carry.
//! - [`client`]: the other direction, for offsetlab's own tools talking to any broker.

pub mod client;
pub mod consumer_protocol;
pub mod error;
pub mod frame;
pub mod request;
pub mod response;
pub mod versions;

pub use kafka_protocol;
/// A topic id on the wire (KIP-516), as `kafka-protocol` carries it.
pub use uuid::Uuid;
