//! Generators of the share-group lines (KIP-932) for `lines_round_trip.rs`.

use super::{offsets, partition, positive_duration, text, topic};
use offsetlab_engine::share::config::ShareGroupConfigChange;
use offsetlab_engine::share::{
    AcknowledgeType, AcknowledgementMode, AcquireMode, ShareAutoOffsetReset, ShareConsumerConfig,
};
use offsetlab_scenario::command::*;
use proptest::prelude::*;

/// The keys an `expect share-group=G` line takes without `offset=`, and with it.
const SHARE_KEYS: [ExpectKey; 12] = [
    ExpectKey::Spso,
    ExpectKey::Speo,
    ExpectKey::InFlight,
    ExpectKey::Acquired,
    ExpectKey::Available,
    ExpectKey::Archived,
    ExpectKey::Acquisitions,
    ExpectKey::Lost,
    ExpectKey::Duplicates,
    ExpectKey::Deliveries,
    ExpectKey::Skipped,
    ExpectKey::GroupState,
];
const RECORD_KEYS: [ExpectKey; 3] = [ExpectKey::RecordState, ExpectKey::DeliveryCount, ExpectKey::Owner];

/// Share-group lines (KIP-932): share consumers, polls, acknowledgements, group configs and
/// their `expect` lines.
pub(super) fn share_command() -> impl Strategy<Value = Command> {
    let number = || prop_oneof![Just("-".to_string()), any::<i64>().prop_map(|n| n.to_string())];
    let checks = |keys: &'static [ExpectKey]| {
        proptest::collection::btree_map(0..keys.len(), (number(), text()), 1..4).prop_map(move |m| {
            m.into_iter()
                .map(|(i, (n, t))| {
                    let key = keys[i];
                    let text_key = matches!(
                        key,
                        ExpectKey::GroupState | ExpectKey::RecordState | ExpectKey::Owner
                    );
                    (key, if text_key { t } else { n })
                })
                .collect::<Vec<_>>()
        })
    };
    let mode = prop_oneof![
        Just(AcknowledgementMode::Implicit),
        Just(AcknowledgementMode::Explicit)
    ];
    let ack = prop_oneof![
        Just(AcknowledgeType::Accept),
        Just(AcknowledgeType::Release),
        Just(AcknowledgeType::Reject)
    ];
    let reset = prop_oneof![
        Just(ShareAutoOffsetReset::Latest),
        Just(ShareAutoOffsetReset::Earliest)
    ];
    let change = (
        proptest::option::of(reset),
        proptest::option::of(positive_duration()),
        proptest::option::of(any::<u16>()),
        proptest::option::of(any::<u32>()),
        proptest::option::of(positive_duration()),
    )
        .prop_map(|(r, lock, limit, locks, session)| ShareGroupConfigChange {
            auto_offset_reset: r,
            record_lock_duration_ms: lock,
            delivery_count_limit: limit,
            partition_max_record_locks: locks,
            session_timeout_ms: session,
        })
        .prop_filter("something to change", |c| !c.is_empty());
    prop_oneof![
        (
            text(),
            text(),
            text(),
            mode,
            1..=1_000_000usize,
            prop_oneof![Just(AcquireMode::BatchOptimized), Just(AcquireMode::RecordLimit)]
        )
            .prop_map(|(name, group, topic, mode, max, acquire)| {
                let mut config = ShareConsumerConfig::new(&name, &group, &topic);
                config.acknowledgement_mode = mode;
                config.max_poll_records = max;
                config.acquire_mode = acquire;
                Command::ShareConsumer(StartShareConsumer { config })
            }),
        text().prop_map(|consumer| Command::SharePoll(SharePoll { consumer })),
        (
            text(),
            proptest::option::of(partition()),
            proptest::option::of(proptest::collection::vec(0..=i64::MAX, 1..4)),
            ack.clone()
        )
            .prop_map(|(consumer, partition, offsets, ack)| Command::ShareAck(ShareAck {
                consumer,
                partition,
                offsets,
                ack,
            })),
        (text(), change)
            .prop_map(|(group, change)| Command::AlterShareGroup(AlterShareGroup { group, change })),
        // Real clients' share consumers, as the listener writes them.
        (
            text(),
            text(),
            text(),
            proptest::collection::vec("[a-zA-Z0-9._-]{1,20}", 1..4)
        )
            .prop_map(|(group, member, client, topics)| Command::ShareJoin(ShareJoin {
                group,
                member,
                client,
                topics,
            })),
        (text(), text(), any::<bool>()).prop_map(|(group, member, session_timeout)| {
            Command::ShareLeave(ShareLeave {
                group,
                member,
                session_timeout,
            })
        }),
        (text(), text()).prop_map(|(group, member)| Command::ShareRelease(ShareRelease { group, member })),
        (text(), text(), text(), partition(), 0..=u32::MAX as usize).prop_map(
            |(group, member, topic, p, max)| {
                Command::ShareFetch(ShareFetch {
                    group,
                    member,
                    tp: offsetlab_engine::record::TopicPartition::new(topic, p),
                    max,
                })
            }
        ),
        (
            text(),
            text(),
            text(),
            partition(),
            proptest::collection::vec((0..1_000i64, 0..5i64, ack.clone()), 1..5)
        )
            .prop_map(|(group, member, topic, p, runs)| {
                let mut next = 0;
                let acks = runs
                    .into_iter()
                    .map(|(gap, len, t)| {
                        let first = next + gap;
                        next = first + len + 1;
                        (first, first + len, t)
                    })
                    .collect();
                Command::ShareAcknowledge(ShareAcknowledge {
                    group,
                    member,
                    tp: offsetlab_engine::record::TopicPartition::new(topic, p),
                    acks,
                })
            }),
        (
            text(),
            proptest::option::of(text()),
            proptest::option::of(partition()),
            checks(&SHARE_KEYS)
        )
            .prop_map(|(g, topic, partition, checks)| Command::Expect(Expect {
                group: None,
                share_group: Some(g),
                offset: None,
                topic,
                partition,
                consumer: None,
                checks,
            })),
        (
            text(),
            0..=i64::MAX,
            proptest::option::of(partition()),
            checks(&RECORD_KEYS)
        )
            .prop_map(|(g, offset, partition, checks)| Command::Expect(Expect {
                group: None,
                share_group: Some(g),
                offset: Some(offset),
                topic: None,
                partition,
                consumer: None,
                checks,
            })),
        // An administrator's moves of a share group's start offsets.
        (text(), offsets())
            .prop_map(|(group, offsets)| Command::AlterShareOffsets(AlterShareOffsets { group, offsets })),
        (text(), proptest::collection::vec(topic(), 1..4))
            .prop_map(|(group, topics)| Command::DeleteShareOffsets(DeleteShareOffsets { group, topics })),
    ]
}
