//! A share group's start offsets as an administrator moves them (KIP-932's
//! AlterShareGroupOffsets, DeleteShareGroupOffsets, DeleteGroups): allowed only while the group
//! is Empty, a fresh share state at the new start, the audit telling a deliberate replay from a
//! duplicate and a skipped record from a lost one, and the log never touched.

use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::log::TopicConfig;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::share::{
    AcknowledgeType, AcknowledgementMode, ShareAutoOffsetReset, ShareConsumerConfig, ShareGroupConfigChange,
};
use offsetlab_engine::{Lab, LabError};

fn tp() -> TopicPartition {
    TopicPartition::new("orders", 0)
}

/// `orders` with `records` records; share consumer `s1` of group `sg` (explicit, `max_poll`)
/// reading from the earliest.
fn lab_with(records: u64, max_poll: usize) -> Lab {
    let mut lab = Lab::default();
    lab.create_topic("orders", TopicConfig::default()).expect("topic");
    lab.produce(
        "orders",
        &ProduceSpec {
            count: records,
            // One batch per record: these rules are about records, not Kafka's whole-batch
            // acquisition (share_groups.rs has that).
            batch: Some(1),
            ..ProduceSpec::default()
        },
    )
    .expect("produce");
    lab.alter_share_group(
        "sg",
        &ShareGroupConfigChange {
            auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
            ..Default::default()
        },
    )
    .expect("config");
    let mut c = ShareConsumerConfig::new("s1", "sg", "orders");
    c.acknowledgement_mode = AcknowledgementMode::Explicit;
    c.max_poll_records = max_poll;
    lab.add_share_consumer(c).expect("join");
    lab
}

/// A partition's log start and end, and every record's offset and value.
type LogPrint = (i64, i64, Vec<(i64, Option<Vec<u8>>)>);

/// The log's bounds and every record: what no share action may change.
fn log_print(lab: &Lab) -> LogPrint {
    let log = lab.partition_log(&tp()).expect("log");
    let mut records = Vec::new();
    log.read(log.log_start_offset(), usize::MAX, &mut |r| {
        records.push((r.offset, r.value.map(<[u8]>::to_vec)));
    });
    (log.log_start_offset(), log.log_end_offset(), records)
}

fn spso(lab: &Lab) -> i64 {
    lab.share_group("sg").expect("group").partitions[&tp()].start_offset
}

fn held(lab: &Lab) -> Vec<i64> {
    lab.share_consumer("s1")
        .expect("s1")
        .held
        .iter()
        .map(|h| h.offset)
        .collect()
}

/// Reads, applies and accepts one poll's records.
fn read_one_poll(lab: &mut Lab) {
    lab.share_poll("s1").expect("poll");
    lab.process("s1", None).expect("process");
    lab.share_acknowledge("s1", None, AcknowledgeType::Accept)
        .expect("accept");
}

#[test]
fn start_offsets_move_only_while_the_group_is_empty_and_a_refusal_changes_nothing() {
    let mut lab = lab_with(6, 2);
    lab.share_poll("s1").expect("poll");
    let before = lab.share_group("sg").expect("sg").clone();
    let e = lab
        .alter_share_group_offsets("sg", &[(tp(), 0)])
        .expect_err("a member reads");
    assert!(matches!(e, LabError::ShareGroupNotEmpty { .. }), "{e}");
    assert_eq!(e.kafka_error(), Some("NON_EMPTY_GROUP"));
    let e = lab
        .delete_share_group_offsets("sg", &["orders".to_string()])
        .expect_err("a member reads");
    assert_eq!(e.kafka_error(), Some("NON_EMPTY_GROUP"));
    assert_eq!(
        lab.delete_group("sg").expect_err("a member").kafka_error(),
        Some("NON_EMPTY_GROUP")
    );
    assert_eq!(lab.share_group("sg").expect("sg"), &before, "nothing changed");
    // Bad input, on an Empty group: nothing changes either.
    lab.close("s1").expect("close");
    let before = lab.share_group("sg").expect("sg").clone();
    for bad in [
        vec![(TopicPartition::new("orders", 3), 0)],
        vec![(TopicPartition::new("nowhere", 0), 0)],
        vec![],
    ] {
        assert!(lab.alter_share_group_offsets("sg", &bad).is_err(), "{bad:?}");
    }
    assert!(lab
        .delete_share_group_offsets("sg", &["nowhere".to_string()])
        .is_err());
    assert_eq!(lab.share_group("sg").expect("sg"), &before);
}

#[test]
fn a_consumer_group_is_not_a_share_group() {
    let mut lab = lab_with(2, 2);
    lab.reset_offsets(
        "classic",
        "orders",
        None,
        offsetlab_engine::lab::ResetSpec::ToEarliest,
        true,
    )
    .expect("a consumer group with offsets");
    let e = lab
        .alter_share_group_offsets("classic", &[(tp(), 0)])
        .expect_err("another type");
    assert_eq!(e.kafka_error(), Some("GROUP_ID_NOT_FOUND"));
    assert!(lab.share_start_offsets("classic").is_err());
}

/// Moved back, the group reads its records again — a deliberate replay, not duplicates — with
/// fresh delivery counts; the log is the same.
#[test]
fn a_reset_back_replays_on_purpose_with_fresh_delivery_counts() {
    let mut lab = lab_with(6, 3);
    read_one_poll(&mut lab);
    read_one_poll(&mut lab);
    assert_eq!(spso(&lab), 6);
    lab.close("s1").expect("close");
    let log_before = log_print(&lab);
    lab.alter_share_group_offsets("sg", &[(tp(), 2)])
        .expect("an Empty group");
    assert_eq!(lab.share_start_offsets("sg").expect("sg"), [(tp(), 2)]);
    let p = &lab.share_group("sg").expect("sg").partitions[&tp()];
    assert_eq!(
        (p.start_offset, p.end_offset, p.records().count()),
        (2, 2, 0),
        "a fresh window"
    );
    lab.restart("s1").expect("restart");
    lab.share_poll("s1").expect("poll");
    assert_eq!(held(&lab), [2, 3, 4]);
    let counts: Vec<u16> = lab
        .share_consumer("s1")
        .expect("s1")
        .held
        .iter()
        .map(|h| h.delivery_count)
        .collect();
    assert_eq!(counts, [1, 1, 1], "delivery counts start again");
    lab.process("s1", None).expect("process");
    lab.share_acknowledge("s1", None, AcknowledgeType::Accept)
        .expect("accept");
    read_one_poll(&mut lab);
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!((f.deliveries, f.duplicates, f.lost), (10, 0, 0), "{f:?}");
    let log_after = log_print(&lab);
    assert_eq!(log_before, log_after, "the log is unchanged");
}

/// Moved back, then forward again before anybody read: the records in between end as they had
/// (accepted and applied), neither skipped nor lost, and nothing is credited as a replay.
#[test]
fn two_moves_before_a_read_leave_the_records_as_they_were() {
    let mut lab = lab_with(6, 6);
    read_one_poll(&mut lab);
    lab.close("s1").expect("close");
    let before = lab.share_group("sg").expect("sg").figures(|_| true);
    lab.alter_share_group_offsets("sg", &[(tp(), 2)]).expect("back");
    lab.alter_share_group_offsets("sg", &[(tp(), 4), (tp(), 6)])
        .expect("forward; the last of a partition wins");
    assert_eq!(spso(&lab), 6);
    let after = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!(before, after);
    // Back over 4 and 5, which are then applied again: deliberate replays.
    lab.alter_share_group_offsets("sg", &[(tp(), 4)]).expect("back");
    lab.restart("s1").expect("restart");
    read_one_poll(&mut lab);
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!((f.deliveries, f.duplicates, f.accepted), (8, 0, 6), "{f:?}");
}

/// Moved forward past records the group has not delivered: skipped on purpose, not lost.
#[test]
fn a_reset_forward_skips_on_purpose() {
    let mut lab = lab_with(8, 2);
    read_one_poll(&mut lab);
    lab.share_poll("s1").expect("poll"); // 2 and 3 acquired, never processed
    lab.close("s1").expect("close: released");
    lab.alter_share_group_offsets("sg", &[(tp(), 6)])
        .expect("forward");
    lab.restart("s1").expect("restart");
    read_one_poll(&mut lab);
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!(
        (f.deliveries, f.skipped, f.lost, f.duplicates),
        (4, 2, 0, 0),
        "{f:?}"
    );
}

/// Deleted, the group's next read starts where `share.auto.offset.reset` says — as a new
/// group's would — and the audit counts that move like an alter.
#[test]
fn deleted_offsets_start_again_at_the_reset() {
    let mut lab = lab_with(4, 4);
    read_one_poll(&mut lab);
    lab.close("s1").expect("close");
    assert_eq!(
        lab.delete_share_group_offsets("sg", &["orders".to_string()]),
        Ok(1)
    );
    assert!(lab.share_start_offsets("sg").expect("sg").is_empty());
    assert!(
        lab.delete_share_group_offsets("sg", &["orders".to_string()])
            .is_err(),
        "nothing left to delete: UNKNOWN_TOPIC_OR_PARTITION"
    );
    lab.restart("s1").expect("restart");
    read_one_poll(&mut lab); // earliest: 0..3 again
    assert_eq!(spso(&lab), 4);
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!((f.deliveries, f.duplicates), (8, 0), "{f:?}");
}

/// A negative start offset is stored and described as given (as Kafka does); the next read
/// starts where `share.auto.offset.reset` says, and the move counts as a deliberate one.
#[test]
fn a_negative_start_offset_leaves_the_reset_to_decide() {
    let mut lab = lab_with(4, 4);
    read_one_poll(&mut lab);
    lab.close("s1").expect("close");
    lab.alter_share_group_offsets("sg", &[(tp(), -1)])
        .expect("stored as Kafka stores it");
    assert_eq!(lab.share_start_offsets("sg").expect("sg"), [(tp(), -1)]);
    lab.restart("s1").expect("restart");
    read_one_poll(&mut lab); // earliest: 0..3 again
    assert_eq!(lab.share_start_offsets("sg").expect("sg"), [(tp(), 4)]);
    let f = lab.share_group("sg").expect("sg").figures(|_| true);
    assert_eq!((f.deliveries, f.duplicates), (8, 0), "{f:?}");
    // Deleted from that state too.
    lab.close("s1").expect("close");
    lab.alter_share_group_offsets("sg", &[(tp(), -5)]).expect("again");
    assert_eq!(lab.share_start_offsets("sg").expect("sg"), [(tp(), -5)]);
    assert_eq!(
        lab.delete_share_group_offsets("sg", &["orders".to_string()]),
        Ok(1)
    );
    assert!(lab.share_start_offsets("sg").expect("sg").is_empty());
}

/// DeleteGroups deletes an Empty share group; a new one of that name starts from nothing.
#[test]
fn an_empty_share_group_can_be_deleted() {
    let mut lab = lab_with(4, 4);
    read_one_poll(&mut lab);
    lab.close("s1").expect("close");
    lab.delete_group("sg").expect("Empty");
    // Kept for s1's audit, gone to clients: a second deletion finds no group, as on Kafka.
    assert!(lab.share_group("sg").expect("kept").deleted);
    assert_eq!(
        lab.delete_group("sg").expect_err("gone").kafka_error(),
        Some("GROUP_ID_NOT_FOUND")
    );
    assert!(
        lab.share_start_offsets("sg").is_err(),
        "gone to DescribeShareGroupOffsets"
    );
    // Kafka's defaults again: latest.
    lab.restart("s1").expect("restart");
    lab.share_poll("s1").expect("poll");
    assert!(held(&lab).is_empty(), "a new group starts at the log end");
    assert!(
        !lab.share_group("sg").expect("back").deleted,
        "a member joined: the group is back"
    );
}
