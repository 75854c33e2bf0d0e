//! An exported lab replays to the same lab, durable or in memory (`offsetlab run`): apply →
//! export → replay gives the same figures, the same records (keys, values, headers, timestamps)
//! and the same segment layout — what `retention.bytes` deletes depends on it. Client batches are encoded as a real producer
//! encodes them (the `kafka-protocol` crate: producer ids, sequences, timestamps that move,
//! headers), beside the lab's own `produce` lines and ticks.

use bytes::Bytes;
use offsetlab_engine::record::TopicPartition;
use offsetlab_lab::session::{Change, Session, SinkBackend};
use offsetlab_records::ProducedBatches;
use offsetlab_storage::FlushPolicy;
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::kafka_protocol::records::{
    Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType,
};
use proptest::prelude::*;

fn durable(dir: &std::path::Path) -> SinkBackend {
    SinkBackend::Durable {
        root: dir.to_path_buf(),
        flush: FlushPolicy::Never,
    }
}

/// One client record: key, value, milliseconds after the batch's first record, headers.
type ClientRecord = (Option<String>, Option<String>, i64, Vec<(String, Option<String>)>);

#[derive(Debug, Clone)]
enum Op {
    /// A Produce request: its batches, each a list of records, compressed with the codec
    /// (none, gzip, snappy, lz4, zstd by the number).
    Client(Vec<Vec<ClientRecord>>, u8),
    /// `produce t count=N`.
    Produce(u8),
    Tick(u32),
    /// The consumer polls, processes what it got and commits.
    Consume,
    /// `delete-records t before=N` (clamped to the log).
    DeleteRecords(u8),
    /// The consumer crashes, or closes, the group is reset to its earliest offsets, and it
    /// starts again.
    Crash,
    Rewind,
    /// `produce u key=K` on a compacted topic, then `compact u`.
    Compacted(u8),
    /// The share consumer polls, processes some of what it holds and acknowledges it (accept,
    /// release or reject by the number), or crashes and starts again.
    Share(u8),
    ShareCrash,
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9 #=\"'{}]{0,12}", any::<String>(), "x{100,400}"]
}

fn op() -> impl Strategy<Value = Op> {
    let record = (
        proptest::option::of(text()),
        proptest::option::of(text()),
        prop_oneof![Just(0i64), 0..100i64, 0..100_000i64],
        proptest::collection::vec((text(), proptest::option::of(text())), 0..3),
    );
    prop_oneof![
        (
            proptest::collection::vec(proptest::collection::vec(record, 1..5), 1..3),
            0..5u8
        )
            .prop_map(|(batches, codec)| Op::Client(batches, codec)),
        (1..20u8).prop_map(Op::Produce),
        (1..5_000u32).prop_map(Op::Tick),
        Just(Op::Consume),
        any::<u8>().prop_map(Op::DeleteRecords),
        Just(Op::Crash),
        Just(Op::Rewind),
        (0..4u8).prop_map(Op::Compacted),
        any::<u8>().prop_map(Op::Share),
        Just(Op::ShareCrash),
    ]
}

/// The batches a producer with id `producer` sends, its sequence going on from `sequence`.
fn encode(batches: &[Vec<ClientRecord>], producer: i64, sequence: &mut i32) -> Bytes {
    let mut out = bytes::BytesMut::new();
    for batch in batches {
        let records: Vec<Record> = batch
            .iter()
            .enumerate()
            .map(|(i, (k, v, ts, headers))| Record {
                transactional: false,
                control: false,
                delete_horizon: false,
                partition_leader_epoch: -1,
                producer_id: producer,
                producer_epoch: 0,
                timestamp_type: TimestampType::Creation,
                offset: i as i64,
                sequence: *sequence + i as i32,
                timestamp: 1_767_225_600_000 + ts,
                key: k.clone().map(Bytes::from),
                value: v.clone().map(Bytes::from),
                headers: headers
                    .iter()
                    .map(|(hk, hv)| (StrBytes::from_string(hk.clone()), hv.clone().map(Bytes::from)))
                    .collect(),
            })
            .collect();
        *sequence += records.len() as i32;
        RecordBatchEncoder::encode(
            &mut out,
            &records,
            &RecordEncodeOptions {
                version: 2,
                compression: Compression::None,
            },
        )
        .expect("encode");
    }
    out.freeze()
}

/// Segments (base, next, records, bytes) and records (offset, timestamp, key, value, headers) of
/// `t-0`, and the figures.
type Observed = (
    Vec<(i64, i64, usize, usize)>,
    Vec<(i64, i64, Option<Vec<u8>>, Option<Vec<u8>>, Vec<u8>)>,
    serde_json::Value,
);

fn observe(s: &Session, topic: &str) -> Observed {
    let tp = TopicPartition::new(topic, 0);
    let log = s.lab().partition_log(&tp).expect("t-0");
    let segments = log
        .segments()
        .iter()
        .map(|g| (g.base_offset, g.next_offset, g.records, g.bytes))
        .collect();
    let mut records = Vec::new();
    log.read(0, usize::MAX, &mut |r| {
        records.push((
            r.offset,
            r.timestamp,
            r.key.map(<[u8]>::to_vec),
            r.value.map(<[u8]>::to_vec),
            r.headers.to_vec(),
        ))
    });
    let mut view = serde_json::to_value(s.lab().view().expect("view")).expect("json");
    // Where the lab lives is not what it is.
    view.as_object_mut().map(|o| o.remove("storage"));
    (segments, records, view)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn an_export_replays_to_the_same_lab(ops in proptest::collection::vec(op(), 1..12)) {
        let (a, b) = (tempfile::tempdir().expect("dir"), tempfile::tempdir().expect("dir"));
        let setup = "topic t segment.bytes=600 retention.bytes=1800 retention.ms=-1\n\
                     topic u cleanup.policy=compact segment.records=3\n\
                     consumer c1 group='the group' topic=t commit=manual-batch max-poll=5 reset=earliest sink=upsert\n\
                     alter-share-group 'the share group' share.auto.offset.reset=earliest share.delivery.count.limit=2\n\
                     share-consumer s1 group='the share group' topic=t ack=explicit max-poll=3\n";
        let mut s = Session::new(durable(a.path()), setup).expect("lab");
        let mut sequence = 0;
        for op in &ops {
            match op {
                Op::Client(batches, codec) => {
                    let bytes = encode(batches, 7, &mut sequence);
                    let mut batches = ProducedBatches::validate(bytes).expect("valid");
                    let codecs = [
                        offsetlab_records::Compression::None,
                        offsetlab_records::Compression::Gzip,
                        offsetlab_records::Compression::Snappy,
                        offsetlab_records::Compression::Lz4,
                        offsetlab_records::Compression::Zstd,
                    ];
                    batches.convert(codecs[usize::from(*codec)]);
                    s.apply_changes(vec![Change::Produced {
                        topic: "t".into(),
                        partition: 0,
                        client: "a client #1".into(),
                        batches,
                    }])
                    .expect("produced");
                }
                Op::Produce(n) => {
                    s.apply_lines(&[format!("produce t count={n}")]).expect("produce");
                }
                Op::Tick(ms) => {
                    s.apply_lines(&[format!("tick {ms}ms")]).expect("tick");
                }
                Op::Consume => {
                    s.apply_lines(&["poll c1".to_string()]).expect("poll");
                    // Nothing polled: nothing to process (the lab refuses the line).
                    let _ = s.apply_lines(&["process c1 count=all".to_string(), "commit c1".to_string()]);
                }
                Op::Crash => {
                    s.apply_lines(&["crash c1".to_string(), "tick 46s".to_string(), "restart c1".to_string()])
                        .expect("crash and restart");
                }
                Op::Rewind => {
                    s.apply_lines(&[
                        "close c1".to_string(),
                        "reset-offsets 'the group' topic=t to-earliest execute".to_string(),
                        "restart c1".to_string(),
                    ])
                    .expect("rewind");
                }
                Op::Compacted(k) => {
                    s.apply_lines(&[format!("produce u key='key {k}' value='{{\"n\": {k}}}'"), "compact u".to_string()])
                        .expect("compacted");
                }
                Op::Share(n) => {
                    let ack = ["accept", "release", "reject"][usize::from(*n % 3)];
                    s.apply_lines(&["share-poll s1".to_string()]).expect("share-poll");
                    // Nothing held: nothing to process or acknowledge (refused, changes nothing).
                    let _ = s.apply_lines(&[format!("process s1 count={}", 1 + n % 2)]);
                    let _ = s.apply_lines(&[format!("share-ack s1 {ack}")]);
                }
                Op::ShareCrash => {
                    s.apply_lines(&["crash s1".to_string(), "tick 31s".to_string(), "restart s1".to_string()])
                        .expect("crash and restart");
                }
                Op::DeleteRecords(n) => {
                    let end = s.lab().partition_log(&TopicPartition::new("t", 0)).expect("t-0").log_end_offset();
                    let before = i64::from(*n).min(end);
                    s.apply_lines(&[format!("delete-records t before={before}")]).expect("delete-records");
                }
            }
        }
        let export = s.export().expect("export");
        let replayed = Session::new(durable(b.path()), &export).expect("the export replays");
        for topic in ["t", "u"] {
            let (live, again) = (observe(&s, topic), observe(&replayed, topic));
            prop_assert_eq!(&live.0, &again.0, "segment layout of {}", topic);
            prop_assert_eq!(&live.1, &again.1, "records of {}", topic);
            prop_assert_eq!(&live.2, &again.2, "figures");
        }
        prop_assert_eq!(replayed.lab().share(), s.lab().share(), "share groups");
        // `offsetlab run` replays an export in memory: the segments' bytes are counted as the
        // files hold them, so `retention.bytes` deletes the same segments there too.
        let in_memory = Session::new(SinkBackend::Memory, &export).expect("the export replays in memory");
        for topic in ["t", "u"] {
            let (live, again) = (observe(&s, topic), observe(&in_memory, topic));
            prop_assert_eq!(&live.0, &again.0, "segment layout of {} in memory", topic);
            prop_assert_eq!(&live.1, &again.1, "records of {} in memory", topic);
            prop_assert_eq!(&live.2, &again.2, "figures in memory");
        }
        // The in-memory log's batches are the durable log's: share fetches acquired the same.
        prop_assert_eq!(in_memory.lab().share(), s.lab().share(), "share groups in memory");
        prop_assert_eq!(replayed.export().expect("export"), export, "the replay exports the same file");
    }
}
