//! Creating topics, producing order events, and appending what Kafka clients send.

use super::{Lab, Topic};
use crate::clock::Millis;
use crate::error::LabError;
use crate::log::partitioner::partition_for_key;
use crate::log::{BatchShape, EncodedAppend, PartitionLog, TimestampType, TopicConfig};
use crate::narrative::EventKind;
use crate::order;
use crate::record::{NewRecord, Offset, RecordBytes};
use offsetlab_records::{Compression, ProducedBatches};
use std::collections::{BTreeMap, HashMap};

/// The largest number of records one `produce` may write (a guard against typos, not a limit of
/// the log: produce again for more).
pub const MAX_PRODUCE_COUNT: u64 = 100_000_000;
pub const MAX_PARTITIONS: i32 = 10_000;

/// What one `produce` action writes.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ProduceSpec {
    pub count: u64,
    /// An existing order's id: the records are further events of that order.
    pub key: Option<String>,
    /// The value, verbatim; by default an order event.
    pub value: Option<String>,
    /// By default Kafka's partitioner picks: murmur2 of the key.
    pub partition: Option<i32>,
    /// A null value: on a compacted topic, a tombstone that deletes the key.
    pub tombstone: bool,
    /// Records per producer batch, as a producer that sends each request with this many
    /// (`batch=1`: one request per record). By default all of a partition's records go in
    /// one batch (up to 4,096). A share fetch acquires whole batches in Kafka's default mode.
    pub batch: Option<u64>,
}

/// A record a Kafka client produced through the listener: its own key and value, either of
/// them null, kept byte for byte (written as text when UTF-8, base64 otherwise:
/// [`RecordBytes`]), its headers, and the timestamp its producer gave it.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SentRecord {
    #[serde(default)]
    pub key: Option<RecordBytes>,
    #[serde(default)]
    pub value: Option<RecordBytes>,
    /// The producer's timestamp (`CreateTime`), when there is one to keep: the batch is
    /// encoded with it, so a replay lays the records out exactly as the client did. Readers see
    /// it on a CreateTime topic and the lab's time of the append on a LogAppendTime one; without
    /// it the record carries the lab's time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<i64>,
    /// The record's headers, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub headers: Vec<SentHeader>,
    /// On a batch's first record only, when its producer based the batch's timestamps on
    /// another than this record's (some clients take the earliest): that base.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_timestamp: Option<i64>,
}

/// A record header: a key and a value, which may be null.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SentHeader {
    /// Java clients read a header's key as UTF-8; the wire holds bytes, kept as they are.
    pub key: RecordBytes,
    #[serde(default)]
    pub value: Option<RecordBytes>,
}

impl<K: Into<RecordBytes>, V: Into<RecordBytes>> From<(K, Option<V>)> for SentHeader {
    fn from((key, value): (K, Option<V>)) -> Self {
        Self {
            key: key.into(),
            value: value.map(Into::into),
        }
    }
}

impl SentRecord {
    /// The record's headers as a v2 record encodes them (empty for none).
    pub fn encoded_headers(&self) -> Vec<u8> {
        crate::record::headers::encode(
            self.headers
                .iter()
                .map(|h| (h.key.as_bytes(), h.value.as_deref())),
        )
    }
}

/// A topic id for the `created`-th topic the lab made, named `name`: two FNV-1a hashes of both,
/// each finished with splitmix64's mix — unique enough for a lab, the same on every replay, and
/// never Kafka's reserved ids (zero, and `AAAAAAAAAAAAAAAAAAAAAQ` for the metadata topic).
pub(crate) fn topic_id(name: &str, created: u64) -> [u8; 16] {
    let hash = |seed: u64| {
        let mut h = seed;
        for b in created.to_be_bytes().iter().chain(name.as_bytes()) {
            h ^= u64::from(*b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        h ^ (h >> 31)
    };
    let (hi, lo) = (hash(0xcbf2_9ce4_8422_2325), hash(0x8422_2325_cbf2_9ce4));
    let mut id = [0u8; 16];
    id[..8].copy_from_slice(&hi.to_be_bytes());
    id[8..].copy_from_slice(&lo.to_be_bytes());
    if u128::from_be_bytes(id) <= 1 {
        id[0] = 1;
    }
    id
}

/// The most records one `send` may carry (a Produce request's partition holds far fewer).
pub const MAX_SEND_RECORDS: usize = 100_000;

/// Records per batch `produce` hands a partition log.
const PRODUCE_BATCH: usize = 4096;

impl ProduceSpec {
    /// Refuses a spec no `produce` can write to a topic of `partitions` partitions.
    fn check(&self, topic: &str, partitions: i32) -> Result<(), LabError> {
        if self.tombstone && (self.key.is_none() || self.value.is_some()) {
            return Err(LabError::InvalidArgument(
                "a tombstone (value=null) needs a key and no other value".into(),
            ));
        }
        if self.count == 0 || self.count > MAX_PRODUCE_COUNT {
            return Err(LabError::InvalidArgument(format!(
                "count must be between 1 and {MAX_PRODUCE_COUNT} (got {})",
                self.count
            )));
        }
        if self.batch == Some(0) {
            return Err(LabError::InvalidArgument(
                "batch must be at least 1 record".into(),
            ));
        }
        match self.partition {
            Some(p) if !(0..partitions).contains(&p) => Err(LabError::UnknownPartition {
                topic: topic.to_string(),
                partition: p,
                partitions: partitions as usize,
            }),
            _ => Ok(()),
        }
    }
}

impl Topic {
    /// The key and value of the next record `spec` produces: the given key (or a new order's)
    /// and value (or the order's next event).
    fn next_produced(&mut self, spec: &ProduceSpec) -> (String, String) {
        // A new order's first event needs no bookkeeping (ten million orders must not cost a
        // map entry each); only further events of an existing order are counted.
        let (key, events_before) = match &spec.key {
            Some(k) => {
                let created = order::order_number(k).is_some_and(|n| n <= self.orders_created);
                let seen = self.events_per_key.get(k).copied().unwrap_or(u64::from(created));
                self.events_per_key.insert(k.clone(), seen + 1);
                (k.clone(), seen)
            }
            None => {
                self.orders_created += 1;
                (order::order_id(self.orders_created), 0)
            }
        };
        let value = match &spec.value {
            Some(v) => v.clone(),
            None if spec.tombstone => String::new(),
            None => order::order_event(&key, order::status_for_event(events_before)),
        };
        (key, value)
    }
}

impl Lab {
    pub fn create_topic(&mut self, name: &str, config: TopicConfig) -> Result<(), LabError> {
        crate::names::check_topic_name(name)?;
        if crate::names::is_internal_topic(name) {
            return Err(LabError::internal_topic(name, ""));
        }
        if self.topics.contains_key(name) {
            return Err(LabError::TopicExists(name.to_string()));
        }
        if let Some(other) = self.topics.keys().find(|t| crate::names::collides(t, name)) {
            return Err(LabError::InvalidTopic {
                name: name.to_string(),
                reason: format!("it collides with the existing topic '{other}' ('.' and '_' are the same in Kafka's metric names)"),
            });
        }
        if !(1..=MAX_PARTITIONS).contains(&config.partitions) {
            return Err(LabError::InvalidArgument(format!(
                "partitions must be between 1 and {MAX_PARTITIONS} (got {})",
                config.partitions
            )));
        }
        let n = config.partitions;
        let partitions = (0..config.partitions)
            .map(|p| self.store.open(name, p, &config))
            .collect::<Result<Vec<_>, String>>()
            .map_err(LabError::storage)?;
        let describe = format!(
            "created topic {name} with {} partition(s), cleanup.policy={}{}",
            config.partitions,
            config.cleanup_policy,
            config
                .segment_records
                .map(|n| format!(", segments of {n} records"))
                .unwrap_or_default()
        );
        self.topics_created += 1;
        self.topics.insert(
            name.to_string(),
            Topic {
                name: name.to_string(),
                id: topic_id(name, self.topics_created),
                config,
                partitions,
                orders_created: 0,
                events_per_key: HashMap::new(),
                txns: (0..n).map(|_| crate::txn::PartitionTxns::default()).collect(),
            },
        );
        self.say(EventKind::Setup, describe);
        Ok(())
    }

    /// `CreatePartitions` (`kafka-topics.sh --alter --partitions N`): grows `topic` to `count`
    /// partitions; Kafka never shrinks a topic. The new partitions start empty. From now on a key
    /// hashes over the new count (murmur2 modulo the partitions), so a key's next records may go
    /// to another partition than its earlier ones — per-key order holds only within a partition.
    /// Every group with a member reading the topic rebalances to hand the new partitions out, as
    /// Kafka's consumers do once their metadata shows them.
    pub fn add_partitions(&mut self, topic: &str, count: i32) -> Result<(), LabError> {
        let current = self.check_add_partitions(topic, count)?;
        let t = self.topic(topic)?;
        let config = TopicConfig {
            partitions: count,
            ..t.config.clone()
        };
        let added = (current..count)
            .map(|p| self.store.open(topic, p, &config))
            .collect::<Result<Vec<_>, String>>()
            .map_err(LabError::storage)?;
        let t = self.topic_mut(topic)?;
        t.partitions.extend(added);
        t.txns
            .resize_with(count as usize, crate::txn::PartitionTxns::default);
        t.config.partitions = count;
        self.say(
            EventKind::Setup,
            format!("topic {topic} grows from {current} to {count} partitions: keys now hash over {count}, so a key's next records may land in another partition than its earlier ones"),
        );
        let mut groups: Vec<String> = self
            .consumers
            .values()
            .filter(|c| c.config.topic == topic && c.is_running())
            .map(|c| c.config.group.clone())
            .collect();
        groups.sort();
        groups.dedup();
        for g in groups {
            self.request_rebalance(&g, &format!("topic {topic} has new partitions"));
        }
        let share_groups: Vec<String> = self
            .share
            .groups
            .values()
            .filter(|g| g.members.iter().any(|m| m.topics.iter().any(|t| t == topic)))
            .map(|g| g.name.clone())
            .collect();
        for g in share_groups {
            self.share_reassign(&g)?;
        }
        Ok(())
    }

    /// Whether `topic` can grow to `count` partitions (what `CreatePartitions` with
    /// `validate_only` asks): the partitions it has now, or why not.
    pub fn check_add_partitions(&self, topic: &str, count: i32) -> Result<i32, LabError> {
        if crate::names::is_internal_topic(topic) {
            return Err(LabError::internal_topic(
                topic,
                ": its partitions are the broker's",
            ));
        }
        let current = self.topic(topic)?.partitions.len() as i32;
        if count == current {
            return Err(LabError::InvalidPartitions(format!(
                "topic {topic} already has {current} partitions"
            )));
        }
        if count < current {
            return Err(LabError::InvalidPartitions(format!(
                "topic {topic} has {current} partitions, more than the requested {count}: a topic never shrinks"
            )));
        }
        if count > MAX_PARTITIONS {
            return Err(LabError::InvalidPartitions(format!(
                "a topic has at most {MAX_PARTITIONS} partitions (asked for {count})"
            )));
        }
        Ok(current)
    }

    /// `IncrementalAlterConfigs` on a topic (`kafka-configs.sh --alter --entity-type topics`):
    /// its retention and cleanup settings take `config`'s values from now on — the next tick's
    /// retention check and the next compaction read them, as Kafka's log manager does. The
    /// partition count (see [`Lab::add_partitions`]) and the segment settings are fixed when the
    /// lab creates a topic's logs; a change to them is refused and nothing changes.
    pub fn alter_topic_config(&mut self, topic: &str, config: TopicConfig) -> Result<(), LabError> {
        if crate::names::is_internal_topic(topic) {
            return Err(LabError::internal_topic(topic, ": its configs are the broker's"));
        }
        let t = self.topic_mut(topic)?;
        let c = &t.config;
        if (
            config.partitions,
            config.segment_records,
            config.segment_bytes,
            config.segment_ms,
        ) != (c.partitions, c.segment_records, c.segment_bytes, c.segment_ms)
        {
            return Err(LabError::InvalidArgument(format!(
                "topic {topic}: partitions and segment settings are fixed when the lab creates a topic; alter retention.ms, retention.bytes, cleanup.policy, delete.retention.ms, message.timestamp.type, compression.type, max.message.bytes or min.insync.replicas"
            )));
        }
        let old = std::mem::replace(&mut t.config, config);
        let new = &t.config;
        let forever = |v: Option<i64>| v.map_or("-1".to_string(), crate::clock::format_duration);
        let mut changes = Vec::new();
        if old.retention_ms != new.retention_ms {
            changes.push(format!(
                "retention.ms {} → {}",
                forever(old.retention_ms),
                forever(new.retention_ms)
            ));
        }
        if old.retention_bytes != new.retention_bytes {
            let bytes = |v: Option<u64>| v.map_or("-1".to_string(), |b| b.to_string());
            changes.push(format!(
                "retention.bytes {} → {}",
                bytes(old.retention_bytes),
                bytes(new.retention_bytes)
            ));
        }
        if old.cleanup_policy != new.cleanup_policy {
            changes.push(format!(
                "cleanup.policy {} → {}",
                old.cleanup_policy, new.cleanup_policy
            ));
        }
        if old.delete_retention_ms != new.delete_retention_ms {
            changes.push(format!(
                "delete.retention.ms {} → {}",
                crate::clock::format_duration(old.delete_retention_ms),
                crate::clock::format_duration(new.delete_retention_ms)
            ));
        }
        if old.min_insync_replicas != new.min_insync_replicas {
            changes.push(format!(
                "min.insync.replicas {} → {}",
                old.min_insync_replicas, new.min_insync_replicas
            ));
        }
        if old.message_timestamp_type != new.message_timestamp_type {
            changes.push(format!(
                "message.timestamp.type {} → {} (for records appended from now on)",
                old.message_timestamp_type, new.message_timestamp_type
            ));
        }
        if old.max_message_bytes != new.max_message_bytes {
            changes.push(format!(
                "max.message.bytes {} → {}",
                old.max_message_bytes, new.max_message_bytes
            ));
        }
        if old.compression_type != new.compression_type {
            changes.push(format!(
                "compression.type {} → {} (for batches appended from now on)",
                old.compression_type, new.compression_type
            ));
        }
        let said = if changes.is_empty() {
            format!("topic {topic}: its configs are set again to what they were")
        } else {
            format!(
                "topic {topic}: {} (from the next retention check and compaction on)",
                changes.join(", ")
            )
        };
        self.say(EventKind::Setup, said);
        Ok(())
    }

    /// `DeleteRecords` (`kafka-delete-records.sh`): moves a partition's log start offset up to
    /// `before`. Records below it are gone for every group, read or not.
    pub fn delete_records(&mut self, topic: &str, partition: i32, before: Offset) -> Result<usize, LabError> {
        let t = self.topic_mut(topic)?;
        let n = t.partitions.len() as i32;
        let log = usize::try_from(partition)
            .ok()
            .and_then(|p| t.partitions.get_mut(p))
            .ok_or_else(|| LabError::UnknownPartition {
                topic: topic.to_string(),
                partition,
                partitions: n as usize,
            })?;
        let end = log.log_end_offset();
        if before < 0 || before > end {
            return Err(LabError::OffsetOutOfRange {
                tp: format!("{topic}-{partition}"),
                log_end: end,
                asked: before,
            });
        }
        let start = log.log_start_offset();
        let removed = log.delete_records_before(before);
        let now_start = log.log_start_offset();
        self.say(
            EventKind::Warning,
            format!("DeleteRecords on {topic}-{partition}: log start offset {start} → {now_start} ({removed} record(s) gone for every group, read or not)"),
        );
        self.share_follow_log_starts()?;
        Ok(removed)
    }

    /// Appends `spec.count` records and returns the offsets they got, per partition.
    pub fn produce(
        &mut self,
        topic: &str,
        spec: &ProduceSpec,
    ) -> Result<BTreeMap<i32, (Offset, Offset)>, LabError> {
        let now = self.clock.now();
        let t = self.topic_mut(topic)?;
        spec.check(topic, t.partitions.len() as i32)?;
        let n_parts = t.partitions.len() as i32;
        let mut written: BTreeMap<i32, (Offset, Offset)> = BTreeMap::new();
        // Records go to each partition in batches (a durable log writes a batch at a time).
        let mut pending: BTreeMap<i32, Vec<(String, String)>> = BTreeMap::new();
        let tombstone = spec.tombstone;
        let per_batch = spec.batch.map_or(PRODUCE_BATCH, |b| {
            usize::try_from(b).unwrap_or(PRODUCE_BATCH).min(PRODUCE_BATCH)
        });
        let mut flush = |t: &mut Topic, partition: i32, batch: &mut Vec<(String, String)>| {
            if batch.is_empty() {
                return;
            }
            let records: Vec<NewRecord<'_>> = batch
                .iter()
                .map(|(k, v)| NewRecord::new(now, Some(k.as_bytes()), (!tombstone).then_some(v.as_bytes())))
                .collect();
            let first = t.partitions[partition as usize].append_batch(&records, now);
            let last = first + records.len() as Offset - 1;
            written
                .entry(partition)
                .and_modify(|r| r.1 = last)
                .or_insert((first, last));
            batch.clear();
        };
        for _ in 0..spec.count {
            let (key, value) = t.next_produced(spec);
            let partition = spec
                .partition
                .unwrap_or_else(|| partition_for_key(key.as_bytes(), n_parts));
            let batch = pending.entry(partition).or_default();
            batch.push((key, value));
            if batch.len() >= per_batch {
                let mut full = std::mem::take(batch);
                flush(t, partition, &mut full);
                *pending.entry(partition).or_default() = full;
            }
        }
        for (partition, batch) in &mut pending {
            flush(t, *partition, batch);
        }
        self.say_produced(topic, spec, &written);
        Ok(written)
    }

    fn say_produced(&mut self, topic: &str, spec: &ProduceSpec, written: &BTreeMap<i32, (Offset, Offset)>) {
        let parts: Vec<String> = written
            .iter()
            .map(|(p, (a, b))| {
                if a == b {
                    format!("{topic}-{p} @{a}")
                } else {
                    format!("{topic}-{p} @{a}..{b}")
                }
            })
            .collect();
        let what = match &spec.key {
            Some(k) if spec.tombstone => format!("{} tombstone(s) for key {k}", spec.count),
            Some(k) => format!("{} event(s) for order {k}", spec.count),
            None => format!("{} new order(s)", spec.count),
        };
        self.say(
            EventKind::Produce,
            format!("produced {what} to {}", parts.join(", ")),
        );
    }

    /// Appends records a Kafka client produced to one partition, as they came — the listener's
    /// Produce, and the `send` line that records it. They carry the lab's time (their log append
    /// time), so they sit on the lab's timeline like every other record; Kafka's internal topics
    /// refuse them, as a broker refuses a client's writes to `__consumer_offsets`.
    pub fn send(
        &mut self,
        topic: &str,
        partition: i32,
        records: &[SentRecord],
        client: &str,
    ) -> Result<(Offset, Offset), LabError> {
        self.send_batches(
            topic,
            partition,
            records,
            &[records.len()],
            &BatchPacking::default(),
            client,
        )
    }

    /// [`Lab::send`] of records that came as several producer batches, of `batches` records
    /// each, in order, compressed as `packing` says: each is appended whole (a segment rolls
    /// between batches, never inside one) and compressed as it came — with the producer's own
    /// compressed bytes when the line carries them (one batch), checked to decompress to the
    /// records — or in the topic's `compression.type` when that names a codec, so a replayed
    /// session lays its segments out as the client's batches did, byte for byte.
    pub fn send_batches(
        &mut self,
        topic: &str,
        partition: i32,
        records: &[SentRecord],
        batches: &[usize],
        packing: &BatchPacking,
        client: &str,
    ) -> Result<(Offset, Offset), LabError> {
        let now = self.clock.now();
        if records.is_empty() || records.len() > MAX_SEND_RECORDS {
            return Err(LabError::InvalidArgument(format!(
                "send carries between 1 and {MAX_SEND_RECORDS} records (got {})",
                records.len()
            )));
        }
        if batches.contains(&0) || batches.iter().sum::<usize>() != records.len() {
            return Err(LabError::InvalidArgument(format!(
                "send: batches of {batches:?} records do not add up to its {} records",
                records.len()
            )));
        }
        if packing.compressed.is_some() && (batches.len() != 1 || packing.codec == Compression::None) {
            return Err(LabError::InvalidArgument(
                "send: compressed records come with compression=CODEC, for one batch".into(),
            ));
        }
        let (log, stamp, compression, _) = self.client_partition(topic, partition)?;
        // A topic that names a codec has every batch in it (the producer's bytes are not kept).
        let (codec, compressed) = match compression.codec() {
            Some(c) if c != packing.codec => (c, None),
            _ => (packing.codec, packing.compressed.as_deref()),
        };
        let mut first = None;
        let mut rest = records;
        for &n in batches {
            let (sent, after) = rest.split_at(n);
            rest = after;
            let headers: Vec<Vec<u8>> = sent.iter().map(SentRecord::encoded_headers).collect();
            let batch = as_new_records(sent, &headers, now);
            let base_timestamp = sent.first().and_then(|r| r.batch_timestamp);
            // The line's bytes are its records, whichever codec the topic stores them in.
            if let Some(bytes) = packing.compressed.as_deref() {
                check_compressed(&batch, base_timestamp, packing.codec, bytes)?;
            }
            let shape = BatchShape {
                base_timestamp,
                codec,
                compressed,
            };
            let at = log.append_shaped(&batch, &shape, now, stamp);
            first.get_or_insert(at);
        }
        let first = first.unwrap_or_default();
        Ok(self.sent(client, topic, partition, first, records.len()))
    }

    /// [`Lab::send`] for record batches as a Kafka client encoded them: a durable log stores
    /// them as they came — with the producer's timestamps, or the lab's time as their log append
    /// time on a `LogAppendTime` topic — and no record is decoded or copied on the way — the listener's Produce, and the `send … stored=` line
    /// that records it.
    pub fn send_encoded(
        &mut self,
        topic: &str,
        partition: i32,
        batches: &mut ProducedBatches,
        client: &str,
    ) -> Result<EncodedAppend, LabError> {
        let now = self.clock.now();
        let n = batches.records();
        if n == 0 {
            return Err(LabError::InvalidArgument(
                "send carries at least one record".into(),
            ));
        }
        let (log, stamp, compression, max_message_bytes) = self.client_partition(topic, partition)?;
        // A topic that names a codec has every batch rewritten in it, as Kafka's broker does —
        // and checks the batch it would write against `max.message.bytes` (the listener checked
        // the batch as sent).
        if let Some(codec) = compression.codec() {
            batches.convert(codec);
            if let Some(h) = batches.headers().iter().find(|h| h.total_len > max_message_bytes) {
                return Err(LabError::MessageTooLarge {
                    topic: topic.to_string(),
                    size: h.total_len,
                    limit: max_message_bytes,
                });
            }
        }
        let appended = log
            .append_encoded(batches, now, stamp)
            .map_err(LabError::InvalidArgument)?;
        // One event per segment the batches went to: the history keeps one line for each, and
        // its replay tells the same story.
        if appended.kept.is_empty() {
            self.sent(client, topic, partition, appended.first, n);
        } else {
            let mut first = appended.first;
            for k in &appended.kept {
                self.sent(client, topic, partition, first, k.records);
                first += k.records as Offset;
            }
        }
        Ok(appended)
    }

    /// The log a client may write to: an existing partition of a topic that is not one of
    /// Kafka's internal ones.
    /// A partition real clients write to, and its topic's `message.timestamp.type` and
    /// `compression.type`.
    fn client_partition(&mut self, topic: &str, partition: i32) -> Result<ClientPartition<'_>, LabError> {
        if crate::names::is_internal_topic(topic) {
            return Err(LabError::internal_topic(topic, ": clients cannot write to it"));
        }
        let t = self.topic_mut(topic)?;
        let n_parts = t.partitions.len() as i32;
        if !(0..n_parts).contains(&partition) {
            return Err(LabError::UnknownPartition {
                topic: topic.to_string(),
                partition,
                partitions: n_parts as usize,
            });
        }
        let c = &t.config;
        let (stamp, compression, max) = (c.message_timestamp_type, c.compression_type, c.max_message_bytes);
        Ok((&mut t.partitions[partition as usize], stamp, compression, max))
    }

    /// Tells the narrative about `n` records a client sent, from `first`; their offset range.
    fn sent(
        &mut self,
        client: &str,
        topic: &str,
        partition: i32,
        first: Offset,
        n: usize,
    ) -> (Offset, Offset) {
        let last = first + n as Offset - 1;
        let at = if first == last {
            format!("@{first}")
        } else {
            format!("@{first}..{last}")
        };
        self.say(
            EventKind::Produce,
            format!(
                "client {client} produced {n} record(s) to {topic}-{partition} {at} through the Kafka listener"
            ),
        );
        (first, last)
    }
}

/// How a `send` line's batches were compressed: the codec, and — for a line of one batch — the
/// compressed records as the producer's compressor wrote them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BatchPacking {
    pub codec: Compression,
    pub compressed: Option<Vec<u8>>,
}

impl BatchPacking {
    /// Batches in `codec`, the lab's compressor writing them.
    pub fn in_codec(codec: Compression) -> Self {
        Self {
            codec,
            compressed: None,
        }
    }
}

/// A partition real clients write to, with its topic's `message.timestamp.type`,
/// `compression.type` and `max.message.bytes`.
type ClientPartition<'a> = (
    &'a mut Box<dyn PartitionLog>,
    TimestampType,
    crate::log::CompressionType,
    usize,
);

/// Refuses compressed bytes that are not the line's records: they must decompress to exactly
/// the records as the log encodes them, or the log would serve other records than the lab shows.
fn check_compressed(
    records: &[NewRecord<'_>],
    base_timestamp: Option<i64>,
    codec: Compression,
    bytes: &[u8],
) -> Result<(), LabError> {
    if compressed_records_match(records, base_timestamp, codec, bytes) {
        Ok(())
    } else {
        Err(LabError::InvalidArgument(format!(
            "send: compressed= does not {codec} decompress to the records the line spells out"
        )))
    }
}

/// The records of a `send` line's batch as the log appends them (`headers` is each record's
/// encoded headers): a record without its own timestamp carries `now`.
fn as_new_records<'a>(sent: &'a [SentRecord], headers: &'a [Vec<u8>], now: Millis) -> Vec<NewRecord<'a>> {
    sent.iter()
        .zip(headers)
        .map(|(r, headers)| NewRecord {
            control: false,
            timestamp: r.timestamp.unwrap_or(now),
            key: r.key.as_deref(),
            value: r.value.as_deref(),
            headers,
        })
        .collect()
}

/// [`compressed_records_match`] for a `send` line's batch, its records taking `now` where they
/// carry no timestamp, as its replay would append them: what an export checks before it writes
/// a compressed batch's bytes on the line.
pub fn sent_batch_matches(
    sent: &[SentRecord],
    base_timestamp: Option<i64>,
    codec: Compression,
    bytes: &[u8],
    now: Millis,
) -> bool {
    let headers: Vec<Vec<u8>> = sent.iter().map(SentRecord::encoded_headers).collect();
    compressed_records_match(&as_new_records(sent, &headers, now), base_timestamp, codec, bytes)
}

/// Whether `bytes` — a batch's records as `codec` compressed them — decompress to exactly
/// `records` as the log encodes them (against `base_timestamp`, or the first record's). What a
/// replay checks before it stores them.
fn compressed_records_match(
    records: &[NewRecord<'_>],
    base_timestamp: Option<i64>,
    codec: Compression,
    bytes: &[u8],
) -> bool {
    let mut plain = Vec::new();
    let base = base_timestamp
        .or_else(|| records.first().map(|r| r.timestamp))
        .unwrap_or_default();
    offsetlab_records::batch::encode_consecutive_based(&mut plain, 0, records, -1, base);
    offsetlab_records::produced::with_compressed_records(&plain, codec, bytes).is_some()
}
