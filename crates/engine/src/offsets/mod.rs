//! The group coordinator's offset store: the compacted `__consumer_offsets` topic.
//!
//! A commit is not a field update: it is a record appended to `__consumer_offsets`, keyed by
//! (group, topic, partition), whose value holds the committed offset. The coordinator's
//! in-memory view is simply "the latest value per key" of that topic, which is why a compacted
//! topic (keep the latest record per key) is enough to store it, and why a restarted
//! coordinator rebuilds its view by replaying the topic ([`OffsetStore::rebuild_view`]).
//!
//! Kafka spreads groups over 50 partitions of `__consumer_offsets` by `hash(group) % 50`; the
//! lab uses one partition so that every commit of every group can be seen in one log. Its
//! records are in Kafka's own schema ([`schema`]): any consumer can read the topic.

pub mod schema;

use crate::clock::Millis;
use crate::log::{CleanupPolicy, PartitionLog, TopicConfig};
use crate::record::{NewRecord, Offset, Record, TopicPartition};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub const CONSUMER_OFFSETS_TOPIC: &str = "__consumer_offsets";

/// Kafka's `offset.metadata.max.bytes` (its default): a commit's metadata longer than this is
/// OFFSET_METADATA_TOO_LARGE, and that partition's offset is not stored.
pub const MAX_METADATA_BYTES: usize = 4096;

/// Refuses metadata no coordinator stores ([`MAX_METADATA_BYTES`]).
pub fn check_metadata(tp: &TopicPartition, metadata: &str) -> Result<(), crate::LabError> {
    if metadata.len() > MAX_METADATA_BYTES {
        return Err(crate::LabError::OffsetMetadataTooLarge {
            tp: tp.to_string(),
            bytes: metadata.len(),
            limit: MAX_METADATA_BYTES,
        });
    }
    Ok(())
}

/// The key of a committed offset: Kafka's `OffsetCommitKey` (group, topic, partition).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct OffsetKey {
    pub group: String,
    pub topic: String,
    pub partition: i32,
}

impl OffsetKey {
    pub fn new(group: &str, tp: &TopicPartition) -> Self {
        Self {
            group: group.to_string(),
            topic: tp.topic.clone(),
            partition: tp.partition,
        }
    }

    pub fn topic_partition(&self) -> TopicPartition {
        TopicPartition::new(self.topic.clone(), self.partition)
    }

    /// The record key bytes: Kafka's `OffsetCommitKey` ([`schema::offset_key`]).
    pub fn encode(&self) -> Vec<u8> {
        schema::offset_key(self)
    }

    /// An offset commit key; `None` for other bytes (a group metadata key among them).
    pub fn decode(bytes: &[u8]) -> Option<Self> {
        match schema::decode_key(bytes)? {
            schema::RecordKey::Offset(k) => Some(k),
            schema::RecordKey::Group(_) | schema::RecordKey::Coordinator { .. } => None,
        }
    }

    /// How the lab prints it: `('analytics-prod', 'orders', 0)`.
    pub fn display(&self) -> String {
        format!("('{}', '{}', {})", self.group, self.topic, self.partition)
    }
}

/// The value of a committed offset: Kafka's `OffsetCommitValue`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OffsetAndMetadata {
    /// The next offset to read: last processed + 1.
    pub offset: Offset,
    /// The leader epoch of the last record consumed, as the committer sent it (KIP-320); −1
    /// when it sent none — the lab's own consumers, which have one leader that never changes.
    #[serde(default = "no_epoch", skip_serializing_if = "is_no_epoch")]
    pub leader_epoch: i32,
    /// Free text; the lab records who committed and why (`c1#2 manual-batch`).
    pub metadata: String,
    pub commit_timestamp: Millis,
}

fn no_epoch() -> i32 {
    -1
}

fn is_no_epoch(e: &i32) -> bool {
    *e < 0
}

/// One raw record of `__consumer_offsets`, decoded for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OffsetRecord {
    pub offset: Offset,
    pub key: OffsetKey,
    /// `None` is a tombstone (the group's offset was deleted or expired).
    pub value: Option<OffsetAndMetadata>,
}

/// One group metadata record of the topic, decoded for display.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRecord {
    pub offset: Offset,
    pub group: String,
    /// `None` is a tombstone (the group was deleted).
    pub value: Option<GroupRecordValue>,
}

/// What a group metadata record says, as the page shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupRecordValue {
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    /// Each member id with the partitions assigned to it (`orders-0`).
    pub members: Vec<(String, Vec<String>)>,
}

pub struct OffsetStore {
    log: Box<dyn PartitionLog>,
    view: BTreeMap<OffsetKey, OffsetAndMetadata>,
    /// Keys the log still holds in the lab's former JSON form. Compaction keeps the latest record
    /// per key *bytes*, so the first write of such a key in Kafka's schema also tombstones its
    /// JSON form — otherwise, once a deletion's tombstone is compacted away, the old JSON value
    /// would be the key's latest record again.
    legacy: std::collections::BTreeSet<OffsetKey>,
}

impl OffsetStore {
    /// The topic config of `__consumer_offsets`: compacted, small segments so that compaction
    /// has closed segments to clean in a lab-sized run.
    pub fn topic_config() -> TopicConfig {
        TopicConfig {
            partitions: 1,
            retention_ms: None,
            segment_records: Some(64),
            cleanup_policy: CleanupPolicy::Compact,
            ..TopicConfig::default()
        }
    }

    pub fn new(log: Box<dyn PartitionLog>) -> Self {
        let mut store = Self {
            log,
            view: BTreeMap::new(),
            legacy: std::collections::BTreeSet::new(),
        };
        store.rebuild_view();
        store
    }

    /// Commits `offset` for `group` on `tp` at `now`, without metadata (what the lab's own
    /// consumers and real clients' commits carry here).
    pub fn commit_offset(&mut self, group: &str, tp: &TopicPartition, offset: Offset, now: Millis) -> Offset {
        self.commit_offset_with(group, tp, offset, -1, String::new(), now)
    }

    /// [`OffsetStore::commit_offset`] with the leader epoch and metadata string a client sent.
    pub fn commit_offset_with(
        &mut self,
        group: &str,
        tp: &TopicPartition,
        offset: Offset,
        leader_epoch: i32,
        metadata: String,
        now: Millis,
    ) -> Offset {
        self.commit(
            OffsetKey::new(group, tp),
            OffsetAndMetadata {
                offset,
                leader_epoch,
                metadata,
                commit_timestamp: now,
            },
            now,
        )
    }

    /// Retires the JSON form of `key`, if the log still holds one: a tombstone under those bytes.
    fn retire_legacy(&mut self, key: &OffsetKey, now: Millis) {
        if self.legacy.remove(key) {
            let json = serde_json::to_vec(&(&key.group, &key.topic, key.partition)).unwrap_or_default();
            self.log.append(NewRecord::new(now, Some(&json), None), now);
        }
    }

    /// Appends the commit record and updates the view.
    pub fn commit(&mut self, key: OffsetKey, value: OffsetAndMetadata, now: Millis) -> Offset {
        self.retire_legacy(&key, now);
        let key_bytes = key.encode();
        let value_bytes = schema::offset_value(&value);
        let at = self
            .log
            .append(NewRecord::new(now, Some(&key_bytes), Some(&value_bytes)), now);
        self.view.insert(key, value);
        at
    }

    /// Appends a group's membership after a rebalance (Kafka's `GroupMetadataKey` and
    /// `GroupMetadataValue`): lag monitors and `kafka-consumer-groups` tooling that read the
    /// topic learn the members and their assignment from it. Offsets never read it.
    pub fn write_group(&mut self, group: &str, metadata: &schema::GroupMetadata, now: Millis) -> Offset {
        let key = schema::group_key(group);
        let value = schema::group_value(metadata);
        self.log
            .append(NewRecord::new(now, Some(&key), Some(&value)), now)
    }

    /// Appends a group metadata tombstone: the group was deleted.
    pub fn delete_group(&mut self, group: &str, now: Millis) {
        let key = schema::group_key(group);
        self.log.append(NewRecord::new(now, Some(&key), None), now);
    }

    /// Appends a tombstone for `key` (offset deletion or expiry).
    pub fn delete(&mut self, key: &OffsetKey, now: Millis) {
        self.retire_legacy(key, now);
        let key_bytes = key.encode();
        self.log.append(NewRecord::new(now, Some(&key_bytes), None), now);
        self.view.remove(key);
    }

    /// Deletes every committed offset whose key `matches` (a tombstone each): how many.
    pub fn delete_where(&mut self, matches: impl Fn(&OffsetKey) -> bool, now: Millis) -> usize {
        let keys: Vec<OffsetKey> = self.view.keys().filter(|k| matches(k)).cloned().collect();
        for key in &keys {
            self.delete(key, now);
        }
        keys.len()
    }

    pub fn fetch(&self, key: &OffsetKey) -> Option<&OffsetAndMetadata> {
        self.view.get(key)
    }

    /// The committed offsets of one group.
    pub fn group_offsets<'a>(
        &'a self,
        group: &'a str,
    ) -> impl Iterator<Item = (&'a OffsetKey, &'a OffsetAndMetadata)> + 'a {
        // Keys order by group first: the group's offsets are one range of the view.
        self.view
            .range(Self::first_key_of(group)..)
            .take_while(move |(k, _)| k.group == group)
    }

    /// Whether `group` has a committed offset.
    pub fn has_group(&self, group: &str) -> bool {
        self.group_offsets(group).next().is_some()
    }

    /// The least key a group's offsets can have.
    fn first_key_of(group: &str) -> OffsetKey {
        OffsetKey {
            group: group.to_string(),
            topic: String::new(),
            partition: i32::MIN,
        }
    }

    pub fn groups(&self) -> impl Iterator<Item = &str> {
        let mut names: Vec<&str> = self.view.keys().map(|k| k.group.as_str()).collect();
        names.dedup();
        names.into_iter()
    }

    /// Forgets the in-memory view and replays the whole topic: the latest value per key wins,
    /// a tombstone removes the key. This is what a coordinator does when it takes over.
    pub fn rebuild_view(&mut self) {
        (self.view, self.legacy) = replay(self.log.as_ref());
    }

    pub fn view(&self) -> &BTreeMap<OffsetKey, OffsetAndMetadata> {
        &self.view
    }

    pub fn log(&self) -> &dyn PartitionLog {
        self.log.as_ref()
    }

    /// The topic's log, the view dropped ([`crate::lab::Lab::go_back`]).
    pub(crate) fn into_log(self) -> Box<dyn PartitionLog> {
        self.log
    }

    /// The topic's tail from `offset` on gone (a recovery cut it), its active segment sealed,
    /// and the view rebuilt from what is left, as a coordinator that loads the cut log would.
    /// How many records went.
    pub(crate) fn truncate_to(&mut self, offset: Offset, now: Millis) -> usize {
        let n = self.log.truncate_to(offset);
        self.log.seal_active(now);
        self.rebuild_view();
        n
    }

    /// The raw records of the topic, decoded, from `from` on.
    pub fn records(&self, from: Offset, max: usize) -> Vec<OffsetRecord> {
        let mut out = Vec::new();
        self.log.read(from, max, &mut |r| {
            let owned: Record = r.to_owned();
            if let Some(key) = owned.key.as_deref().and_then(OffsetKey::decode) {
                let value = owned.value.as_deref().and_then(schema::decode_offset_value);
                out.push(OffsetRecord {
                    offset: owned.offset,
                    key,
                    value,
                });
            }
        });
        out
    }

    /// The group metadata records of the topic, decoded, from `from` on (at most `max`).
    pub fn group_records(&self, from: Offset, max: usize) -> Vec<GroupRecord> {
        let mut out = Vec::new();
        self.log.read(from, max, &mut |r| {
            let Some(schema::RecordKey::Group(group)) = r.key.and_then(schema::decode_key) else {
                return;
            };
            let value = r
                .value
                .and_then(schema::decode_group_value)
                .map(|g| GroupRecordValue {
                    generation: g.generation,
                    protocol: g.protocol,
                    leader: g.leader,
                    members: g
                        .members
                        .into_iter()
                        .map(|m| {
                            let owned = schema::assigned(&m.assignment)
                                .iter()
                                .map(ToString::to_string)
                                .collect();
                            (m.member_id, owned)
                        })
                        .collect(),
                });
            out.push(GroupRecord {
                offset: r.offset,
                group,
                value,
            });
        });
        out
    }

    /// Compacts the closed segments: keeps only the latest record per key. Tombstones are kept
    /// (Kafka drops them after `delete.retention.ms`). Returns how many records were removed.
    /// A clean close of the topic's log.
    /// Its log, for [`crate::lab::Lab::logs_to_close`].
    pub(crate) fn log_mut(&mut self) -> &mut (dyn PartitionLog + 'static) {
        self.log.as_mut()
    }

    pub fn compact(&mut self, now: Millis) -> crate::log::Cleaned {
        let delete_retention = Self::topic_config().delete_retention_ms;
        crate::log::clean(self.log.as_mut(), now, delete_retention, None)
    }
}

/// The latest value per key, and the keys whose latest record under their JSON bytes is a value
/// (the lab's former form, not yet retired).
fn replay(
    log: &dyn PartitionLog,
) -> (
    BTreeMap<OffsetKey, OffsetAndMetadata>,
    std::collections::BTreeSet<OffsetKey>,
) {
    let mut view = BTreeMap::new();
    let mut legacy = std::collections::BTreeSet::new();
    log.read(Offset::MIN, usize::MAX, &mut |r| {
        let Some(key) = r.key.and_then(OffsetKey::decode) else {
            return;
        };
        if r.key.and_then(|k| k.first()) == Some(&b'[') {
            if r.value.is_some() {
                legacy.insert(key.clone());
            } else {
                legacy.remove(&key);
            }
        }
        match r.value.and_then(schema::decode_offset_value) {
            Some(value) => {
                view.insert(key, value);
            }
            None => {
                view.remove(&key);
            }
        }
    });
    (view, legacy)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::memory::MemoryLog;

    fn store() -> OffsetStore {
        OffsetStore::new(Box::new(MemoryLog::new(
            OffsetStore::topic_config().segment_limits(),
        )))
    }

    fn value(offset: Offset) -> OffsetAndMetadata {
        OffsetAndMetadata {
            offset,
            leader_epoch: -1,
            metadata: String::new(),
            commit_timestamp: 0,
        }
    }

    #[test]
    fn the_latest_commit_per_key_wins_and_groups_are_independent() {
        let mut s = store();
        let tp = TopicPartition::new("orders", 0);
        let a = OffsetKey::new("analytics", &tp);
        let b = OffsetKey::new("billing", &tp);
        s.commit(a.clone(), value(4), 1);
        s.commit(b.clone(), value(1), 2);
        s.commit(a.clone(), value(8), 3);
        assert_eq!(s.fetch(&a).map(|v| v.offset), Some(8));
        assert_eq!(s.fetch(&b).map(|v| v.offset), Some(1));
        assert_eq!(s.records(0, 10).len(), 3, "every commit is a record");
    }

    #[test]
    fn the_view_is_exactly_a_replay_of_the_topic_before_and_after_compaction() {
        let mut s = store();
        let keys: Vec<OffsetKey> = (0..3)
            .map(|p| OffsetKey::new("g", &TopicPartition::new("orders", p)))
            .collect();
        for i in 0..200 {
            s.commit(keys[i % 3].clone(), value(i as Offset), i as Millis);
        }
        s.delete(&keys[2], 500);
        let before = s.view().clone();
        s.rebuild_view();
        assert_eq!(&before, s.view());
        let removed = s.compact(0).superseded;
        assert!(removed > 150, "removed {removed}");
        s.rebuild_view();
        assert_eq!(&before, s.view(), "compaction never changes what the topic means");
        assert!(s.fetch(&keys[2]).is_none());
    }

    /// A log written before the lab spoke Kafka's schema holds JSON keys. Deleting such an
    /// offset also retires its JSON form, so once compaction drops the deletion's tombstone the
    /// old value does not come back.
    #[test]
    fn a_deleted_offset_of_a_former_json_record_stays_deleted_after_compaction() {
        let mut log = MemoryLog::new(OffsetStore::topic_config().segment_limits());
        let json_key = br#"["g","orders",0]"#;
        let json_value = br#"{"offset":4,"metadata":"","commit_timestamp":0}"#;
        log.append(NewRecord::new(0, Some(json_key), Some(json_value)), 0);
        let mut s = OffsetStore::new(Box::new(log));
        let key = OffsetKey::new("g", &TopicPartition::new("orders", 0));
        assert_eq!(
            s.fetch(&key).map(|v| v.offset),
            Some(4),
            "the former record reads"
        );
        s.delete(&key, 1);
        // Enough records to close the segments the tombstones are in.
        let other = OffsetKey::new("h", &TopicPartition::new("orders", 0));
        for i in 0..200 {
            s.commit(other.clone(), value(i), 2);
        }
        s.compact(i64::MAX / 2);
        s.rebuild_view();
        assert!(s.fetch(&key).is_none(), "deleted stays deleted");
    }

    #[test]
    fn keys_display_as_kafka_tuples() {
        let k = OffsetKey::new("analytics-prod", &TopicPartition::new("orders", 0));
        assert_eq!(k.display(), "('analytics-prod', 'orders', 0)");
        assert_eq!(OffsetKey::decode(&k.encode()), Some(k));
        assert_eq!(OffsetKey::decode(b"garbage"), None);
    }
}
