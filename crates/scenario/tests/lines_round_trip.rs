//! Every command, written as a line, parses back to the same command — for every value the lab
//! accepts: names at their length limits and with leading dots, keys and ids with spaces, both
//! quotes, `#`, `=`, brackets, tabs, control characters and non-ASCII, empty strings. This is
//! what makes the history, undo, restart and export agree.

use offsetlab_engine::consumer::{Assignor, ConsumerConfig};
use offsetlab_engine::group::{ExternalConsumerMember, ExternalMember, MemberState, ServerAssignor};
use offsetlab_engine::lab::{BatchPacking, ProduceSpec, ResetSpec, SentRecord};
use offsetlab_engine::log::config::CleanupPolicy;
use offsetlab_engine::log::{Compression, CompressionType, TimestampType, TopicConfig};
use offsetlab_engine::record::RecordBytes;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::sink::SinkKind;
use offsetlab_engine::strategy::{AutoOffsetReset, CommitStrategy};
use offsetlab_engine::txn::IsolationLevel;
use offsetlab_scenario::command::*;
use offsetlab_scenario::units::rfc3339;
use proptest::prelude::*;

/// The share-group lines' generators (KIP-932).
#[path = "lines_round_trip/share.rs"]
mod share;
use share::share_command;

/// Text with every character that means something to the tokenizer, and anything at all.
fn text() -> BoxedStrategy<String> {
    prop_oneof![
        "[a-z0-9._-]{1,8}",
        "[ \t#=\"'{}\\[\\]\\\\a-z0-9._:,@/+\n\r\u{0}\u{1b}\u{7f}\u{85}\u{a0}\u{2028}\u{feff}é€😀-]{0,12}",
        any::<String>(),
        Just(String::new()),
        Just("=".to_string()),
        Just("#".to_string()),
        Just("execute".to_string()),
        Just("\"quoted\"".to_string()),
        Just("'single'".to_string()),
        "x{200,300}",
    ]
    .boxed()
}

fn nonempty_text() -> impl Strategy<Value = String> {
    text().prop_filter("not empty", |s| !s.is_empty())
}

/// Kafka's legal topic names: `[a-zA-Z0-9._-]`, 1 to 249 characters, never `.` or `..`.
fn topic() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-zA-Z0-9._-]{1,12}",
        "\\.[a-z]{1,5}",
        "[a-zA-Z0-9._-]{249}",
        "\\.[a-z_]{248}",
    ]
    .prop_filter("Kafka refuses . and ..", |t| t != "." && t != "..")
}

/// A JSON document as text, in the forms people write it.
fn json() -> BoxedStrategy<String> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        text().prop_map(serde_json::Value::from),
    ];
    let value = leaf.prop_recursive(3, 16, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(text(), inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    });
    (value, 0..3u8, any::<bool>())
        .prop_map(|(v, form, lead)| {
            let body = match form {
                0 => serde_json::to_string(&v),
                _ => serde_json::to_string_pretty(&v),
            }
            .unwrap_or_default();
            if lead {
                format!(" {body}")
            } else {
                body
            }
        })
        .prop_filter("null is a tombstone", |v| v != "null")
        .boxed()
}

fn duration() -> impl Strategy<Value = i64> {
    prop_oneof![
        Just(0i64),
        1..=10_000i64,
        (1..=36_500i64).prop_map(|d| d * 86_400_000),
        0..=3_153_600_000_000i64,
    ]
}

fn positive_duration() -> impl Strategy<Value = i64> {
    duration().prop_map(|d| d.max(1))
}

/// An instant between the lab's start and a century later.
fn instant() -> impl Strategy<Value = i64> {
    let start = 1_767_225_600_000i64;
    prop_oneof![
        (0..=36_500i64).prop_map(move |d| start + d * 86_400_000),
        (0..=3_153_600_000_000i64).prop_map(move |ms| start + ms),
    ]
}

fn partition() -> impl Strategy<Value = i32> {
    prop_oneof![0..=3i32, Just(10_000)]
}

fn offsets() -> impl Strategy<Value = Vec<(TopicPartition, i64)>> {
    proptest::collection::vec(
        (
            topic(),
            partition(),
            prop_oneof![0..=100i64, Just(i64::MAX), -2..=-1i64, Just(i64::MIN)],
        )
            .prop_map(|(t, p, o)| (TopicPartition::new(t, p), o)),
        1..4,
    )
}

/// A key, a value or a header: text, or any bytes (Avro, Protobuf, a Schema Registry frame).
fn record_bytes() -> impl Strategy<Value = RecordBytes> {
    prop_oneof![
        text().prop_map(RecordBytes::from),
        proptest::collection::vec(any::<u8>(), 0..24).prop_map(RecordBytes::from),
    ]
}

fn records() -> impl Strategy<Value = Vec<SentRecord>> {
    proptest::collection::vec(
        (
            proptest::option::of(record_bytes()),
            proptest::option::of(record_bytes()),
            proptest::option::of(any::<i64>()),
            proptest::collection::vec((record_bytes(), proptest::option::of(record_bytes())), 0..3),
            proptest::option::of(any::<i64>()),
        )
            .prop_map(|(key, value, timestamp, headers, batch_timestamp)| SentRecord {
                key,
                value,
                timestamp,
                batch_timestamp,
                headers: headers.into_iter().map(Into::into).collect(),
            }),
        1..5,
    )
}

fn producer() -> impl Strategy<Value = (i64, i16)> {
    (
        prop_oneof![0..=10i64, Just(i64::MAX)],
        prop_oneof![0..=3i16, Just(i16::MAX)],
    )
}

fn topic_config() -> impl Strategy<Value = TopicConfig> {
    (
        prop_oneof![1..=4i32, Just(10_000)],
        proptest::option::of(duration()),
        proptest::option::of(any::<u64>()),
        proptest::option::of(1..=u32::MAX as usize),
        1..=(1usize << 30),
        positive_duration(),
        0..3usize,
        duration(),
        any::<bool>(),
        1..=u32::MAX,
        compression_type(),
        prop_oneof![Just(1_048_588usize), 61..=(i32::MAX as usize)],
    )
        .prop_map(
            |(
                partitions,
                retention_ms,
                retention_bytes,
                segment_records,
                segment_bytes,
                segment_ms,
                compact,
                delete_retention_ms,
                log_append_time,
                min_insync_replicas,
                compression_type,
                max_message_bytes,
            )| {
                TopicConfig {
                    partitions,
                    retention_ms,
                    retention_bytes,
                    segment_records,
                    segment_bytes,
                    segment_ms,
                    cleanup_policy: CleanupPolicy::ALL[compact],
                    delete_retention_ms,
                    message_timestamp_type: if log_append_time {
                        TimestampType::LogAppendTime
                    } else {
                        TimestampType::CreateTime
                    },
                    min_insync_replicas,
                    compression_type,
                    max_message_bytes,
                }
            },
        )
}

fn leader_epochs() -> impl Strategy<Value = std::collections::BTreeMap<TopicPartition, i32>> {
    proptest::collection::btree_map(
        (topic(), partition()).prop_map(|(t, p)| TopicPartition::new(t, p)),
        prop_oneof![0..=5i32, Just(i32::MAX)],
        0..3,
    )
}

fn compression_type() -> impl Strategy<Value = CompressionType> {
    proptest::sample::select(CompressionType::ALL.to_vec())
}

fn codec() -> impl Strategy<Value = Compression> {
    proptest::sample::select(Compression::ALL.to_vec())
}

fn consumer_config() -> BoxedStrategy<ConsumerConfig> {
    (
        (nonempty_text(), nonempty_text(), text()),
        (
            proptest::sample::select(CommitStrategy::ALL.to_vec()),
            positive_duration(),
            1..=1_000_000usize,
            proptest::sample::select(SinkKind::ALL.to_vec()),
            proptest::sample::select(vec![
                AutoOffsetReset::Earliest,
                AutoOffsetReset::Latest,
                AutoOffsetReset::None,
            ]),
        ),
        (
            positive_duration(),
            positive_duration(),
            proptest::option::of(nonempty_text()),
            any::<bool>(),
            any::<bool>(),
            duration(),
        ),
        (any::<bool>(), proptest::option::of(text()), positive_duration()),
    )
        .prop_map(
            |(
                (name, group, topic),
                (strategy, interval, max_poll, sink, reset),
                (session, max_poll_interval, instance, sticky, revoke, latency),
                (committed, output, txn_timeout),
            )| {
                let mut c = ConsumerConfig::new(&name, &group, &topic);
                c.strategy = strategy;
                c.auto_commit_interval_ms = interval;
                c.max_poll_records = max_poll;
                c.sink = sink;
                c.auto_offset_reset = reset;
                c.session_timeout_ms = session;
                c.max_poll_interval_ms = max_poll_interval;
                c.group_instance_id = instance;
                // Three ways to be assigned: eager range, cooperative-sticky (classic), or the
                // consumer protocol with the coordinator's uniform assignor.
                match (sticky, revoke) {
                    (true, _) => c.assignor = Assignor::CooperativeSticky,
                    (false, true) => {
                        c.group_protocol = offsetlab_engine::group::GroupProtocol::Consumer;
                        if committed {
                            c.remote_assignor = offsetlab_engine::group::ServerAssignor::Range;
                        }
                    }
                    (false, false) => c.assignor = Assignor::Range,
                }
                c.commit_on_revoke = revoke;
                c.async_commit_latency_ms = latency;
                c.isolation = if committed {
                    IsolationLevel::ReadCommitted
                } else {
                    IsolationLevel::ReadUncommitted
                };
                c.output = output;
                c.transaction_timeout_ms = txn_timeout;
                c
            },
        )
        .boxed()
}

fn member() -> impl Strategy<Value = ExternalMember> {
    (
        text(),
        text(),
        text(),
        proptest::collection::vec((topic(), partition()), 0..4),
        proptest::option::of(text()),
        proptest::collection::vec(topic(), 0..3),
        proptest::option::of(any::<i32>()),
        proptest::option::of(any::<i32>()),
    )
        .prop_map(
            |(id, client_id, host, mut partitions, instance_id, topics, session, rebalance)| {
                // The line groups a member's partitions by topic.
                partitions.sort_by(|a, b| a.0.cmp(&b.0));
                ExternalMember {
                    id,
                    client_id,
                    host,
                    partitions: partitions
                        .into_iter()
                        .map(|(t, p)| TopicPartition::new(t, p))
                        .collect(),
                    instance_id,
                    topics,
                    session_timeout_ms: session,
                    rebalance_timeout_ms: rebalance,
                }
            },
        )
}

/// Partitions as a line groups them: by topic, in topic order.
fn by_topic_partitions() -> impl Strategy<Value = Vec<TopicPartition>> {
    proptest::collection::vec((topic(), partition()), 0..4).prop_map(|mut ps| {
        ps.sort_by(|a, b| a.0.cmp(&b.0));
        ps.into_iter().map(|(t, p)| TopicPartition::new(t, p)).collect()
    })
}

fn consumer_member() -> impl Strategy<Value = ExternalConsumerMember> {
    (
        member(),
        0..=i32::MAX,
        prop_oneof![
            Just(MemberState::Stable),
            Just(MemberState::UnrevokedPartitions),
            Just(MemberState::UnreleasedPartitions)
        ],
        by_topic_partitions(),
        by_topic_partitions(),
        prop_oneof![Just(ServerAssignor::Uniform), Just(ServerAssignor::Range)],
        by_topic_partitions(),
        0..=i32::MAX,
    )
        .prop_map(
            |(mut member, epoch, state, revoking, target, assignor, older, since)| {
                // The consumer protocol's session timeout is the broker's: a member carries none.
                member.session_timeout_ms = None;
                ExternalConsumerMember {
                    member,
                    epoch,
                    state,
                    revoking,
                    target,
                    assignor,
                    assignment_epochs: older.into_iter().map(|tp| (tp, since)).collect(),
                }
            },
        )
}

fn reset_spec() -> impl Strategy<Value = (ResetSpec, Option<String>)> {
    prop_oneof![
        Just((ResetSpec::ToEarliest, None)),
        Just((ResetSpec::ToLatest, None)),
        Just((ResetSpec::ToCurrent, None)),
        (0..=i64::MAX).prop_map(|o| (ResetSpec::ToOffset(o), None)),
        any::<i64>().prop_map(|n| (ResetSpec::ShiftBy(n), None)),
        instant().prop_map(|ts| (ResetSpec::ToDatetime(ts), Some(rfc3339(ts)))),
        duration().prop_map(|d| (ResetSpec::ByDuration(d), None)),
    ]
}

fn expect_checks() -> impl Strategy<Value = Vec<(ExpectKey, String)>> {
    let number = prop_oneof![Just("-".to_string()), any::<i64>().prop_map(|n| n.to_string())];
    proptest::collection::btree_map(0..ALL_EXPECT_KEYS.len(), (number, text()), 1..5).prop_map(|m| {
        m.into_iter()
            .map(|(i, (n, t))| {
                let key = ALL_EXPECT_KEYS[i];
                let text_key = matches!(
                    key,
                    ExpectKey::State | ExpectKey::GroupState | ExpectKey::Metadata | ExpectKey::Polled
                );
                (key, if text_key { t } else { n })
            })
            .collect()
    })
}

const ALL_EXPECT_KEYS: [ExpectKey; 23] = [
    ExpectKey::Lost,
    ExpectKey::Duplicates,
    ExpectKey::DuplicateRows,
    ExpectKey::Redeliveries,
    ExpectKey::CrashRedeliveries,
    ExpectKey::Replays,
    ExpectKey::Skipped,
    ExpectKey::Deliveries,
    ExpectKey::SinkRows,
    ExpectKey::DistinctKeys,
    ExpectKey::Committed,
    ExpectKey::Lag,
    ExpectKey::LogEndOffset,
    ExpectKey::LogStartOffset,
    ExpectKey::LastStableOffset,
    ExpectKey::AbortedRead,
    ExpectKey::State,
    ExpectKey::Position,
    ExpectKey::InFlight,
    ExpectKey::Generation,
    ExpectKey::GroupState,
    ExpectKey::Metadata,
    ExpectKey::Polled,
];

/// Every command kind, with values from the generators above.
fn command() -> impl Strategy<Value = Command> {
    let produce = (
        text(),
        1..=100_000_000u64,
        proptest::option::of(nonempty_text()),
        proptest::option::of(json()),
        proptest::option::of(partition()),
        any::<bool>(),
        proptest::option::of(1..=4_096u64),
    )
        .prop_map(|(topic, count, key, value, partition, tombstone, batch)| {
            let tombstone = tombstone && key.is_some();
            Command::Produce(Produce {
                topic,
                spec: ProduceSpec {
                    count,
                    key,
                    value: if tombstone { None } else { value },
                    partition,
                    tombstone,
                    batch,
                },
            })
        });
    let send = (
        text(),
        partition(),
        records(),
        any::<bool>(),
        text(),
        codec(),
        proptest::option::of(proptest::collection::vec(any::<u8>(), 0..64)),
    )
        .prop_map(|(topic, partition, records, split, client, codec, compressed)| {
            // Compressed bytes go with a codec, on a line of one batch.
            let compressed = compressed.filter(|_| codec != Compression::None && !split);
            let batches = if split && records.len() > 1 {
                vec![1, records.len() - 1]
            } else {
                Vec::new()
            };
            Command::Send(Send {
                topic,
                partition,
                records,
                batches,
                client,
                packing: BatchPacking { codec, compressed },
            })
        });
    let stored = (
        text(),
        partition(),
        text(),
        "[a-zA-Z0-9_-][a-zA-Z0-9._-]{0,40}",
        0..=u64::MAX / 2,
        1..=u64::MAX / 2,
        1..=usize::MAX / 2,
    )
        .prop_map(|(topic, partition, client, file, at, len, count)| {
            Command::SendStored(SendStored {
                topic,
                partition,
                client,
                file,
                at,
                len,
                count,
            })
        });
    let external = prop_oneof![
        (
            nonempty_text(),
            0..=i32::MAX,
            0..=i32::MAX,
            proptest::collection::vec(consumer_member(), 0..3)
        )
            .prop_map(|(group, epoch, assignment_epoch, members)| {
                Command::ConsumerGroupState(ConsumerGroupState {
                    group,
                    epoch,
                    assignment_epoch,
                    members,
                })
            }),
        (
            nonempty_text(),
            0..=i32::MAX,
            prop_oneof![Just("consumer".to_string()), text()],
            text(),
            proptest::collection::vec(member(), 0..3)
        )
            .prop_map(
                |(group, generation, protocol_type, protocol, members)| Command::Rebalance(Rebalance {
                    group,
                    generation,
                    protocol_type,
                    protocol,
                    members,
                })
            ),
        (
            nonempty_text(),
            nonempty_text(),
            0..=i32::MAX,
            offsets(),
            proptest::collection::btree_map(
                (topic(), partition()).prop_map(|(t, p)| TopicPartition::new(t, p)),
                text(),
                0..3
            ),
            leader_epochs(),
        )
            .prop_map(|(group, member, generation, offsets, metadata, leader_epochs)| {
                Command::CommitOffsets(CommitOffsets {
                    group,
                    member,
                    generation,
                    offsets,
                    metadata,
                    leader_epochs,
                })
            }),
        (
            nonempty_text(),
            offsets(),
            proptest::collection::btree_map(
                (topic(), partition()).prop_map(|(t, p)| TopicPartition::new(t, p)),
                text(),
                0..3
            ),
            leader_epochs(),
        )
            .prop_map(|(group, offsets, metadata, leader_epochs)| {
                Command::AlterOffsets(AlterOffsets {
                    group,
                    offsets,
                    metadata,
                    leader_epochs,
                })
            }),
        (nonempty_text(), positive_duration())
            .prop_map(|(txn_id, timeout_ms)| Command::InitTxn(InitTxn { txn_id, timeout_ms })),
        (nonempty_text(), producer(), text(), partition(), records()).prop_map(
            |(txn_id, (producer_id, epoch), topic, partition, records)| Command::TxnSend(TxnSend {
                txn_id,
                producer_id,
                epoch,
                tp: TopicPartition::new(topic, partition),
                records,
            })
        ),
        (
            nonempty_text(),
            producer(),
            text(),
            offsets(),
            proptest::collection::btree_map(
                (topic(), partition()).prop_map(|(t, p)| TopicPartition::new(t, p)),
                text(),
                0..3
            ),
            leader_epochs(),
        )
            .prop_map(
                |(txn_id, (producer_id, epoch), group, offsets, metadata, leader_epochs)| {
                    Command::TxnOffsets(TxnOffsets {
                        txn_id,
                        producer_id,
                        epoch,
                        group,
                        offsets,
                        metadata,
                        leader_epochs,
                    })
                }
            ),
        (nonempty_text(), producer(), any::<bool>()).prop_map(|(txn_id, (producer_id, epoch), commit)| {
            Command::EndTxn(EndTxn {
                txn_id,
                producer_id,
                epoch,
                commit,
            })
        }),
        (nonempty_text(), producer()).prop_map(|(txn_id, (producer_id, epoch))| {
            Command::TxnTimeout(TxnTimeout {
                txn_id,
                producer_id,
                epoch,
            })
        }),
    ];
    let consumer_ops = prop_oneof![
        consumer_config().prop_map(|config| Command::Consumer(StartConsumer { config })),
        text().prop_map(|consumer| Command::Poll(Poll { consumer })),
        (text(), proptest::option::of(1..=1_000_000usize))
            .prop_map(|(consumer, count)| Command::Process(Process { consumer, count })),
        text().prop_map(|consumer| Command::Commit(Commit { consumer })),
        text().prop_map(|consumer| Command::Abort(Abort { consumer })),
        text().prop_map(|consumer| Command::Crash(Crash { consumer })),
        text().prop_map(|consumer| Command::Restart(Restart { consumer })),
        text().prop_map(|consumer| Command::Close(Close { consumer })),
        (text(), 0..=1_000_000u64).prop_map(|(consumer, after)| Command::Fault(Fault { consumer, after })),
        (
            text(),
            prop_oneof![
                Just(SeekTo::Earliest),
                Just(SeekTo::Latest),
                (0..=i64::MAX).prop_map(SeekTo::Offset),
                instant().prop_map(|ts| SeekTo::At(ts, rfc3339(ts))),
                duration().prop_map(SeekTo::Ago),
            ],
            proptest::option::of(partition()),
        )
            .prop_map(|(consumer, to, partition)| Command::Seek(Seek {
                consumer,
                to,
                partition,
            })),
    ];
    let admin = prop_oneof![
        (topic(), topic_config()).prop_map(|(name, config)| Command::Topic(CreateTopic { name, config })),
        duration().prop_map(|duration_ms| Command::Tick(Tick { duration_ms })),
        instant().prop_map(|at_ms| Command::Clock(Clock { at_ms })),
        (
            text(),
            topic(),
            proptest::option::of(proptest::collection::vec(partition(), 1..4)),
            reset_spec(),
            any::<bool>(),
        )
            .prop_map(|(group, topic, partitions, (spec, datetime_text), execute)| {
                Command::ResetOffsets(ResetOffsets {
                    group,
                    topic,
                    partitions,
                    spec,
                    datetime_text,
                    execute,
                })
            }),
        text().prop_map(|topic| Command::Compact(Compact { topic })),
        (text(), partition(), 0..=i64::MAX).prop_map(|(topic, partition, before)| {
            Command::DeleteRecords(DeleteRecords {
                topic,
                partition,
                before,
            })
        }),
        (
            text(),
            partition(),
            0..=i64::MAX / 2,
            proptest::option::of(0..=i64::MAX / 2)
        )
            .prop_map(|(topic, partition, to, more)| {
                Command::TruncateLog(TruncateLog {
                    topic,
                    partition,
                    to,
                    was: more.map(|m| to + m),
                })
            }),
        (text(), 1..=10_000i32)
            .prop_map(|(topic, count)| Command::AddPartitions(AddPartitions { topic, count })),
        (
            text(),
            proptest::option::of(proptest::option::of(positive_duration())),
            proptest::option::of(proptest::option::of(0..u64::MAX)),
            proptest::option::of(0..3usize),
            proptest::option::of(duration()),
            proptest::option::of(any::<bool>()),
            proptest::option::of(1..=u32::MAX),
            proptest::option::of(compression_type()),
            proptest::option::of(61..=(i32::MAX as usize)),
        )
            .prop_filter(
                "a line names one setting at least",
                |(_, a, b, c, d, e, g, h, i)| {
                    a.is_some()
                        || b.is_some()
                        || c.is_some()
                        || d.is_some()
                        || e.is_some()
                        || g.is_some()
                        || h.is_some()
                        || i.is_some()
                }
            )
            .prop_map(
                |(
                    topic,
                    retention_ms,
                    retention_bytes,
                    compact,
                    delete_retention_ms,
                    log_append,
                    min_insync_replicas,
                    compression_type,
                    max_message_bytes,
                )| {
                    Command::AlterTopic(AlterTopic {
                        topic,
                        retention_ms,
                        retention_bytes,
                        cleanup_policy: compact.map(|c| CleanupPolicy::ALL[c]),
                        delete_retention_ms,
                        message_timestamp_type: log_append.map(|l| {
                            if l {
                                TimestampType::LogAppendTime
                            } else {
                                TimestampType::CreateTime
                            }
                        }),
                        min_insync_replicas,
                        compression_type,
                        max_message_bytes,
                    })
                }
            ),
        text().prop_map(|topic| Command::DeleteTopic(DeleteTopic { topic })),
        text().prop_map(|group| Command::DeleteGroup(DeleteGroup { group })),
        (text(), text(), proptest::collection::vec(partition(), 1..4)).prop_map(
            |(group, topic, partitions)| Command::DeleteOffsets(DeleteOffsets {
                group,
                topic,
                partitions,
            })
        ),
        (
            proptest::option::of(positive_duration()),
            proptest::option::of(positive_duration())
        )
            .prop_filter("a broker line sets something", |(r, c)| r.is_some()
                || c.is_some())
            .prop_map(
                |(offsets_retention_ms, offsets_retention_check_ms)| Command::Broker(Broker {
                    offsets_retention_ms,
                    offsets_retention_check_ms
                })
            ),
        Just(Command::RestartCoordinator(RestartCoordinator)),
        (
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::option::of(partition()),
            proptest::option::of(text()),
            expect_checks(),
        )
            .prop_map(
                |(group, topic, partition, consumer, checks)| Command::Expect(Expect {
                    group,
                    share_group: None,
                    offset: None,
                    topic,
                    partition,
                    consumer,
                    checks,
                })
            ),
        (
            "[A-Z][A-Z_]{0,30}",
            prop_oneof![
                text().prop_map(|group| Command::DeleteGroup(DeleteGroup { group })),
                text().prop_map(|topic| Command::DeleteTopic(DeleteTopic { topic })),
            ]
        )
            .prop_map(|(code, inner)| {
                Command::ExpectError(ExpectError::new(&code, inner).expect("an action and a code"))
            }),
    ];
    prop_oneof![
        produce.boxed(),
        send.boxed(),
        stored.boxed(),
        external.boxed(),
        consumer_ops.boxed(),
        admin.boxed(),
        share_command().boxed()
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// command → line → command: the same, and the line is one line of text.
    #[test]
    fn every_command_reads_back_as_written(cmd in command()) {
        let line = cmd.to_string();
        prop_assert!(!line.contains(['\n', '\r']), "one line: {line:?}");
        let parsed = Command::parse(&line);
        prop_assert!(parsed.is_ok(), "{line:?}: {:?}", parsed.err());
        prop_assert_eq!(parsed.ok().flatten(), Some(cmd), "{}", line);
    }

    /// A history file of many such lines reads back line for line.
    #[test]
    fn a_script_of_them_reads_back(cmds in proptest::collection::vec(command(), 1..20)) {
        let text: String = cmds.iter().map(|c| format!("{c}\n")).collect();
        let script = offsetlab_scenario::Script::parse(&text);
        prop_assert!(script.is_ok(), "{:?}", script.err());
        let read: Vec<Command> = script.map(|s| s.lines.into_iter().map(|l| l.command).collect()).unwrap_or_default();
        prop_assert_eq!(read, cmds);
    }
}
