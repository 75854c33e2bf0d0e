//! # offsetlab-records
//!
//! Kafka's record batch, magic v2 — the unit a log stores, the wire carries and a CRC covers —
//! and everything that reads or writes one. Pure: byte slices in, byte slices out, no file and
//! no socket, so the durable log, the Kafka listener and the tools share one codec.
//!
//! - [`record`]: records as a log holds them ([`NewRecord`] on the way in, [`RecordRef`]
//!   borrowed from a batch, [`Record`] copied out) and their [`Offset`].
//! - [`record_bytes`]: [`RecordBytes`], any bytes, written as a JSON string when UTF-8 and as
//!   base64 otherwise, and [`Shown`], how the lab shows them (text, Schema Registry framing, hex).
//! - [`headers`]: record headers as a v2 record encodes them.
//! - [`varint`]: the zig-zag varints record fields use.
//! - [`batch`]: the batch codec — header, validation (CRC-32C, every record's bounds), records,
//!   encoding, and the log-append-time stamp.
//! - [`crc_shift`]: a CRC-32C updated for a changed header without reading the records again.
//! - [`compression`]: gzip, snappy, lz4 and zstd, decompressed with a bound.
//! - [`produced`]: the produce validator — a partition's batches checked in one walk, a
//!   compressed batch rewritten uncompressed — and [`ProducedBatches`], what a log appends.

pub mod batch;
pub mod compression;
pub mod crc_shift;
pub mod headers;
pub mod produced;
pub mod record;
pub mod record_bytes;
pub mod varint;

pub use batch::{Batch, BatchError, BatchHeader};
pub use compression::Compression;
pub use produced::{
    validate_produce, validate_produce_within, ProduceError, ProducedBatches, ProducerRun, Validated,
};
pub use record::{is_text, NewRecord, Offset, Record, RecordRef};
pub use record_bytes::{RecordBytes, Shown};
