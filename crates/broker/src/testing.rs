//! A broker for handler tests: the seed lab in memory (topic `orders`, 12 records; group
//! `analytics-prod` with consumer `c1`), no socket, no binary. Handlers are called with decoded
//! requests, as the dispatcher calls them.

use crate::broker::{Broker, KafkaConfig};
use bytes::Bytes;
use offsetlab_lab::session::{Session, SinkBackend};
use offsetlab_lab::LabHandle;
use offsetlab_records::batch::encode_consecutive;
use offsetlab_records::NewRecord;
use offsetlab_wire::kafka_protocol::protocol::StrBytes;

pub(crate) fn broker() -> Broker {
    let session =
        Session::new(SinkBackend::Memory, offsetlab_scenario::LAB_SCENARIO).expect("the seed lab builds");
    Broker::new(
        LabHandle::new(session),
        KafkaConfig::default(),
        "127.0.0.1:9092".parse().expect("address"),
    )
}

pub(crate) fn name(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One uncompressed batch of `(key, value)` records, as a producer without an id sends it.
pub(crate) fn batch(records: &[(&str, &str)]) -> Bytes {
    let records: Vec<NewRecord<'_>> = records
        .iter()
        .map(|(k, v)| NewRecord::new(1_767_225_600_000, Some(k.as_bytes()), Some(v.as_bytes())))
        .collect();
    let mut buf = Vec::new();
    encode_consecutive(&mut buf, 0, &records, -1);
    Bytes::from(buf)
}

/// The log end offset of `topic`'s partition 0, as the lab has it.
pub(crate) fn log_end(b: &Broker, topic: &str) -> i64 {
    b.lab
        .lock()
        .lab()
        .partition_log(&offsetlab_engine::record::TopicPartition::new(topic, 0))
        .map_or(-1, |l| l.log_end_offset())
}
