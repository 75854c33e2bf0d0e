//! The sink conformance suite: the same checks, run against every [`Sink`] implementation.
//!
//! Call [`run`] with a function that opens a fresh, empty sink of the given kind.

use super::{Sink, SinkKind, SinkWrite, WriteOutcome};
use crate::delivery::DeliveryReason;
use crate::record::{Offset, TopicPartition};

fn write<'a>(tp: &'a TopicPartition, offset: Offset, key: &'a str, reason: DeliveryReason) -> SinkWrite<'a> {
    SinkWrite {
        tp,
        offset,
        key: key.as_bytes(),
        value: br#"{"order_id":"x"}"#,
        consumer: "c1",
        incarnation: 1,
        generation: 1,
        reason,
        at: 1_000 + offset,
    }
}

/// Runs every check; panics (fails the calling test) on the first violation.
pub fn run(open: &mut dyn FnMut(SinkKind) -> Box<dyn Sink>) {
    for kind in SinkKind::ALL {
        let mut sink = open(kind);
        assert_eq!(sink.kind(), kind);
        empty_sink_has_nothing(sink.as_mut());
        let mut sink = open(kind);
        replayed_writes(sink.as_mut());
        let mut sink = open(kind);
        offsets_are_stored_only_by_transactional_sinks(sink.as_mut());
        let mut sink = open(kind);
        binary_keys_stay_distinct_and_read_back(sink.as_mut());
    }
    let mut sink = open(SinkKind::Transactional);
    the_transactional_sink_fences_stale_writes(sink.as_mut());
}

/// A write below the stored offset, or from an older generation, changes nothing.
fn the_transactional_sink_fences_stale_writes(sink: &mut dyn Sink) {
    let tp = TopicPartition::new("orders", 0);
    let at = |offset: Offset, generation: i32| SinkWrite {
        generation,
        ..write(&tp, offset, "o-1", DeliveryReason::First)
    };
    assert_eq!(sink.apply(&at(0, 1)).expect("apply"), WriteOutcome::Applied);
    assert_eq!(
        sink.apply(&at(1, 2)).expect("apply"),
        WriteOutcome::Applied,
        "a newer generation takes over"
    );
    assert_eq!(
        sink.apply(&at(2, 1)).expect("apply"),
        WriteOutcome::Fenced {
            next_offset: 2,
            generation: 2
        },
        "the zombie of generation 1 is fenced"
    );
    assert_eq!(
        sink.apply(&at(1, 2)).expect("apply"),
        WriteOutcome::Fenced {
            next_offset: 2,
            generation: 2
        },
        "a record already applied is not applied twice"
    );
    assert_eq!(
        sink.apply(&at(5, 2)).expect("apply"),
        WriteOutcome::Applied,
        "moving forward (a skip) is allowed"
    );
    assert_eq!(sink.stats().expect("stats").rows, 3);
    assert_eq!(sink.stored_offset(&tp).expect("offset"), Some(6));
}

fn empty_sink_has_nothing(sink: &mut dyn Sink) {
    let stats = sink.stats().expect("stats");
    assert_eq!((stats.rows, stats.distinct_keys, stats.duplicate_rows), (0, 0, 0));
    assert!(sink.rows(0, 10).expect("rows").is_empty());
    assert_eq!(
        sink.stored_offset(&TopicPartition::new("orders", 0))
            .expect("offset"),
        None
    );
}

/// Offsets 0..3 (keys o-1, o-2, o-3, then a second event for o-1), then 0 and 1 again as a crash
/// redelivery.
fn replayed_writes(sink: &mut dyn Sink) {
    let tp = TopicPartition::new("orders", 0);
    let keys = ["o-1", "o-2", "o-3", "o-1"];
    for (o, k) in keys.iter().enumerate() {
        sink.apply(&write(&tp, o as Offset, k, DeliveryReason::First))
            .expect("apply");
    }
    let mut outcomes = Vec::new();
    for o in 0..2 {
        outcomes.push(
            sink.apply(&write(&tp, o, keys[o as usize], DeliveryReason::CrashRedelivery))
                .expect("apply"),
        );
    }
    let stats = sink.stats().expect("stats");
    let rows = sink.rows(0, 100).expect("rows");
    assert_eq!(stats.distinct_keys, 3, "{:?}", sink.kind());
    match sink.kind() {
        SinkKind::Transactional => {
            assert!(
                outcomes
                    .iter()
                    .all(|o| matches!(o, WriteOutcome::Fenced { next_offset: 4, .. })),
                "records below the stored offset are refused: {outcomes:?}"
            );
            assert_eq!((stats.rows, stats.duplicate_rows), (4, 0));
        }
        // The committed output of Kafka transactions is a ledger too: one row per committed
        // output record.
        SinkKind::Append | SinkKind::KafkaTx => {
            assert_eq!(outcomes, [WriteOutcome::Applied; 2]);
            assert_eq!(stats.rows, 6, "a ledger keeps every write");
            assert_eq!(stats.duplicate_rows, 2);
            let dup: Vec<bool> = rows.iter().map(|r| r.duplicate).collect();
            assert_eq!(dup, [false, false, false, false, true, true]);
            assert_eq!(rows[4].reason, DeliveryReason::CrashRedelivery);
            assert_eq!(
                rows.iter().map(|r| r.row_id).collect::<Vec<_>>(),
                [1, 2, 3, 4, 5, 6]
            );
        }
        SinkKind::Upsert => {
            assert_eq!(stats.rows, 3, "one row per order id");
            assert_eq!(stats.duplicate_rows, 0, "replays converge");
            let o1 = rows.iter().find(|r| r.key == "o-1").expect("row o-1");
            assert_eq!(
                (o1.offset, o1.writes),
                (0, 3),
                "o-1 written at 0, 3, then 0 again"
            );
            assert!(rows.iter().all(|r| !r.duplicate));
            // A new order after the overwrites gets the next id: an overwrite takes none.
            sink.apply(&write(&tp, 4, "o-4", DeliveryReason::First))
                .expect("apply");
            let ids: Vec<u64> = sink
                .rows(0, 100)
                .expect("rows")
                .iter()
                .map(|r| r.row_id)
                .collect();
            assert_eq!(ids, [1, 2, 3, 4], "{:?}: row ids without gaps", sink.kind());
        }
    }
    assert_eq!(sink.rows(1, 2).expect("rows").len(), 2, "paging");
    assert_eq!(sink.rows(1, 2).expect("rows")[0].row_id, 2);
}

/// Keys and values are any bytes: two keys that are not UTF-8, and the text whose characters
/// look like one of them, are three keys, and every row reads back byte for byte.
fn binary_keys_stay_distinct_and_read_back(sink: &mut dyn Sink) {
    let tp = TopicPartition::new("payments", 0);
    let keys: [&[u8]; 3] = [&[0xff, 0x00], &[0xfe, 0x00], "ÿ\0".as_bytes()];
    let value: &[u8] = &[0, 0, 0, 0, 7, 0x02, 0xc8];
    for (offset, key) in keys.iter().enumerate() {
        let w = SinkWrite {
            key,
            value,
            ..write(&tp, offset as Offset, "", DeliveryReason::First)
        };
        assert_eq!(sink.apply(&w).expect("apply"), WriteOutcome::Applied);
    }
    let stats = sink.stats().expect("stats");
    assert_eq!((stats.rows, stats.distinct_keys), (3, 3), "{:?}", sink.kind());
    let rows = sink.rows(0, 10).expect("rows");
    let read: Vec<&[u8]> = rows.iter().map(|r| r.key.as_bytes()).collect();
    assert_eq!(read, keys);
    assert!(rows.iter().all(|r| r.value.as_bytes() == value));
}

fn offsets_are_stored_only_by_transactional_sinks(sink: &mut dyn Sink) {
    let t0 = TopicPartition::new("orders", 0);
    let t1 = TopicPartition::new("orders", 1);
    sink.apply(&write(&t0, 4, "o-5", DeliveryReason::First))
        .expect("apply");
    sink.apply(&write(&t1, 9, "o-6", DeliveryReason::First))
        .expect("apply");
    sink.apply(&write(&t0, 5, "o-7", DeliveryReason::First))
        .expect("apply");
    let (s0, s1) = (
        sink.stored_offset(&t0).expect("offset"),
        sink.stored_offset(&t1).expect("offset"),
    );
    if sink.kind() == SinkKind::Transactional {
        assert_eq!((s0, s1), (Some(6), Some(10)), "next offset = last applied + 1");
    } else {
        assert_eq!((s0, s1), (None, None));
    }
}
