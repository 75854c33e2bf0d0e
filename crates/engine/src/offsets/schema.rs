//! The bytes of `__consumer_offsets` records, in Kafka's own schema, so that any consumer —
//! kcat, a lag monitor such as Burrow or kafka-lag-exporter, Kafka's `OffsetsMessageFormatter` —
//! reads the lab's topic as it reads a broker's.
//!
//! Every key and value starts with a big-endian `int16`: in a key, the record's type (Kafka 4.0
//! calls it the key's version); in a value, the value's version. Strings are an `int16` length
//! and UTF-8 bytes (−1 for null); `bytes` are an `int32` length and the bytes.
//!
//! ```text
//! OffsetCommitKey (type 1)      group: string, topic: string, partition: int32
//! OffsetCommitValue (version 3) offset: int64, leader_epoch: int32, metadata: string,
//!                               commit_timestamp: int64
//! GroupMetadataKey (type 2)     group: string
//! GroupMetadataValue (v3)       protocol_type: string, generation: int32,
//!                               protocol: nullable string, leader: nullable string,
//!                               current_state_timestamp: int64,
//!                               members: [member_id: string, group_instance_id: nullable string,
//!                                         client_id: string, client_host: string,
//!                                         rebalance_timeout: int32, session_timeout: int32,
//!                                         subscription: bytes, assignment: bytes]
//! ```
//!
//! Type 0 keys (offset commits of Kafka before 0.9) read as type 1; value versions 0–3 are read
//! (version 1 carries an expire timestamp, versions below 3 no leader epoch). A topic written by
//! the lab before it spoke this schema holds JSON (`["group","topic",0]` keys, `{"offset": …}`
//! values): those still read back, and are never rewritten.

use super::{OffsetAndMetadata, OffsetKey};

/// Kafka's record type of an offset commit key.
pub const OFFSET_COMMIT_KEY: i16 = 1;
/// Kafka's record type of a group metadata key.
pub const GROUP_METADATA_KEY: i16 = 2;
/// The offset commit value version written: 3, with the leader epoch (KIP-320).
pub const OFFSET_COMMIT_VALUE_VERSION: i16 = 3;
/// The group metadata value version written: 3, with static members' instance ids (KIP-345).
pub const GROUP_METADATA_VALUE_VERSION: i16 = 3;

/// A record key of `__consumer_offsets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordKey {
    Offset(OffsetKey),
    Group(String),
    /// A record of a group that speaks the consumer protocol (KIP-848, Kafka 4) — its metadata,
    /// a member, the target assignment, a member's current assignment — and of the record types
    /// after it: every key of a group coordinator's record begins with the group id (a member's
    /// key goes on with the member id). The lab writes none; its tools read them on a cluster.
    Coordinator {
        kind: i16,
        group: String,
        member: Option<String>,
    },
}

impl RecordKey {
    /// The group the record belongs to.
    pub fn group(&self) -> &str {
        match self {
            Self::Offset(k) => &k.group,
            Self::Group(g) | Self::Coordinator { group: g, .. } => g,
        }
    }
}

/// Kafka's name of a group coordinator's record type, for the types after the classic two;
/// `None` for one offsetlab does not know by name.
pub fn coordinator_record_name(kind: i16) -> Option<&'static str> {
    Some(match kind {
        3 => "ConsumerGroupMetadata",
        4 => "ConsumerGroupPartitionMetadata",
        5 => "ConsumerGroupMemberMetadata",
        6 => "ConsumerGroupTargetAssignmentMetadata",
        7 => "ConsumerGroupTargetAssignmentMember",
        8 => "ConsumerGroupCurrentMemberAssignment",
        _ => return None,
    })
}

/// A group's membership as the coordinator writes it after each rebalance.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct GroupMetadata {
    pub protocol_type: String,
    pub generation: i32,
    pub protocol: Option<String>,
    pub leader: Option<String>,
    pub current_state_timestamp: i64,
    pub members: Vec<MemberMetadata>,
}

/// One member of a [`GroupMetadata`].
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize)]
pub struct MemberMetadata {
    pub member_id: String,
    pub group_instance_id: Option<String>,
    pub client_id: String,
    pub client_host: String,
    pub rebalance_timeout: i32,
    pub session_timeout: i32,
    /// The consumer protocol's subscription (version 0: the topics).
    #[serde(skip)]
    pub subscription: Vec<u8>,
    /// The consumer protocol's assignment (version 0: the partitions per topic).
    #[serde(skip)]
    pub assignment: Vec<u8>,
}

/// A decoded value of `__consumer_offsets`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordValue {
    Offset(OffsetAndMetadata),
    Group(GroupMetadata),
}

struct Writer(Vec<u8>);

impl Writer {
    fn i16(&mut self, v: i16) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn i32(&mut self, v: i32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    fn i64(&mut self, v: i64) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    /// A string; the lab's names are at most 32 KiB, which an `int16` length holds — longer
    /// text (a client's metadata) is cut at a character boundary, as no reader could take it.
    fn string(&mut self, s: &str) -> &mut Self {
        let mut end = s.len().min(i16::MAX as usize);
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.i16(end as i16);
        self.0.extend_from_slice(&s.as_bytes()[..end]);
        self
    }
    fn nullable(&mut self, s: Option<&str>) -> &mut Self {
        match s {
            Some(s) => self.string(s),
            None => self.i16(-1),
        }
    }
    fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.i32(i32::try_from(b.len()).unwrap_or(i32::MAX));
        self.0.extend_from_slice(b);
        self
    }
}

/// A cursor over a record's bytes: every read checks what is left, so bytes from a file or a
/// peer never panic or allocate more than they hold.
struct Reader<'a>(&'a [u8], bool);

impl<'a> Reader<'a> {
    /// A reader of a value's fields; `flexible` for a flexible version (compact lengths,
    /// tagged fields), as Kafka 4 writes its coordinator records.
    fn new(bytes: &'a [u8]) -> Self {
        Reader(bytes, false)
    }
    /// An unsigned varint (flexible versions' lengths), at most five bytes.
    fn uvarint(&mut self) -> Option<u32> {
        let mut v: u32 = 0;
        for i in 0..5 {
            let b = self.take(1)?[0];
            v |= u32::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some(v);
            }
        }
        None
    }
    /// A length: `int16`/`int32` as written, or a compact length (varint of length + 1) in a
    /// flexible version; `None` within for null.
    fn length(&mut self, wide: bool) -> Option<Option<usize>> {
        let n: i64 = if self.1 {
            i64::from(self.uvarint()?) - 1
        } else if wide {
            i64::from(self.i32()?)
        } else {
            i64::from(self.i16()?)
        };
        Some(usize::try_from(n).ok())
    }
    /// Skips a flexible version's tagged fields (none of them is read here).
    fn tagged_fields(&mut self) -> Option<()> {
        if !self.1 {
            return Some(());
        }
        for _ in 0..self.uvarint()? {
            self.uvarint()?;
            let size = self.uvarint()?;
            self.take(usize::try_from(size).ok()?)?;
        }
        Some(())
    }
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }
    fn i16(&mut self) -> Option<i16> {
        self.take(2).map(|b| i16::from_be_bytes([b[0], b[1]]))
    }
    fn i32(&mut self) -> Option<i32> {
        self.take(4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn i64(&mut self) -> Option<i64> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Some(i64::from_be_bytes(a))
    }
    fn nullable(&mut self) -> Option<Option<String>> {
        let Some(n) = self.length(false)? else {
            return Some(None);
        };
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).ok().map(Some)
    }
    fn string(&mut self) -> Option<String> {
        self.nullable()?
    }
    fn bytes(&mut self) -> Option<Vec<u8>> {
        let Some(n) = self.length(true)? else {
            return Some(Vec::new());
        };
        self.take(n).map(<[u8]>::to_vec)
    }
}

/// An offset commit key in Kafka's schema (type 1).
pub fn offset_key(key: &OffsetKey) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(10 + key.group.len() + key.topic.len()));
    w.i16(OFFSET_COMMIT_KEY)
        .string(&key.group)
        .string(&key.topic)
        .i32(key.partition);
    w.0
}

/// An offset commit value in Kafka's schema (version 3, with the committer's leader epoch).
pub fn offset_value(value: &OffsetAndMetadata) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(24 + value.metadata.len()));
    w.i16(OFFSET_COMMIT_VALUE_VERSION)
        .i64(value.offset)
        .i32(value.leader_epoch)
        .string(&value.metadata)
        .i64(value.commit_timestamp);
    w.0
}

/// A group metadata key in Kafka's schema (type 2).
pub fn group_key(group: &str) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(4 + group.len()));
    w.i16(GROUP_METADATA_KEY).string(group);
    w.0
}

/// A group metadata value in Kafka's schema (version 3).
pub fn group_value(g: &GroupMetadata) -> Vec<u8> {
    let mut w = Writer(Vec::new());
    w.i16(GROUP_METADATA_VALUE_VERSION)
        .string(&g.protocol_type)
        .i32(g.generation)
        .nullable(g.protocol.as_deref())
        .nullable(g.leader.as_deref())
        .i64(g.current_state_timestamp)
        .i32(g.members.len() as i32);
    for m in &g.members {
        w.string(&m.member_id)
            .nullable(m.group_instance_id.as_deref())
            .string(&m.client_id)
            .string(&m.client_host)
            .i32(m.rebalance_timeout)
            .i32(m.session_timeout)
            .bytes(&m.subscription)
            .bytes(&m.assignment);
    }
    w.0
}

/// A key of `__consumer_offsets`, in Kafka's schema or the lab's former JSON.
pub fn decode_key(bytes: &[u8]) -> Option<RecordKey> {
    if bytes.first() == Some(&b'[') {
        let (group, topic, partition): (String, String, i32) = serde_json::from_slice(bytes).ok()?;
        return Some(RecordKey::Offset(OffsetKey {
            group,
            topic,
            partition,
        }));
    }
    let mut r = Reader::new(bytes);
    let key = match r.i16()? {
        0 | OFFSET_COMMIT_KEY => RecordKey::Offset(OffsetKey {
            group: r.string()?,
            topic: r.string()?,
            partition: r.i32()?,
        }),
        GROUP_METADATA_KEY => RecordKey::Group(r.string()?),
        kind @ 3.. => {
            let group = r.string()?;
            // A member's record: the member id follows.
            let member = if r.0.is_empty() { None } else { Some(r.string()?) };
            RecordKey::Coordinator { kind, group, member }
        }
        _ => return None,
    };
    r.0.is_empty().then_some(key)
}

/// An offset commit value with every field its version has, as a formatter prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OffsetCommitValue {
    /// The value's version; `None` for the lab's former JSON.
    pub version: Option<i16>,
    pub offset: i64,
    /// −1 when the version has none (or the committer did not know it).
    pub leader_epoch: i32,
    pub metadata: String,
    pub commit_timestamp: i64,
    /// Version 1 only.
    pub expire_timestamp: Option<i64>,
}

/// An offset commit value, in Kafka's schema (versions 0–4: Kafka 4 writes the flexible version 4,
/// with the topic id as a tagged field) or the lab's former JSON.
pub fn decode_offset_commit(bytes: &[u8]) -> Option<OffsetCommitValue> {
    if bytes.first() == Some(&b'{') {
        let v: OffsetAndMetadata = serde_json::from_slice(bytes).ok()?;
        return Some(OffsetCommitValue {
            version: None,
            offset: v.offset,
            leader_epoch: v.leader_epoch,
            metadata: v.metadata,
            commit_timestamp: v.commit_timestamp,
            expire_timestamp: None,
        });
    }
    let mut r = Reader::new(bytes);
    let version = r.i16()?;
    if !(0..=4).contains(&version) {
        return None;
    }
    r.1 = version >= 4;
    let offset = r.i64()?;
    let leader_epoch = if version >= 3 { r.i32()? } else { -1 };
    let metadata = r.string()?;
    let commit_timestamp = r.i64()?;
    let expire_timestamp = if version == 1 { Some(r.i64()?) } else { None };
    // Version 4's tagged fields: the topic id (tag 0), which the lab does not keep.
    r.tagged_fields()?;
    Some(OffsetCommitValue {
        version: Some(version),
        offset,
        leader_epoch,
        metadata,
        commit_timestamp,
        expire_timestamp,
    })
}

/// [`decode_offset_commit`], as the coordinator keeps it.
pub fn decode_offset_value(bytes: &[u8]) -> Option<OffsetAndMetadata> {
    decode_offset_commit(bytes).map(|v| OffsetAndMetadata {
        offset: v.offset,
        leader_epoch: v.leader_epoch,
        metadata: v.metadata,
        commit_timestamp: v.commit_timestamp,
    })
}

/// A group metadata value in Kafka's schema (versions 0–4; 4 is the flexible form).
pub fn decode_group_value(bytes: &[u8]) -> Option<GroupMetadata> {
    let mut r = Reader::new(bytes);
    let version = r.i16()?;
    if !(0..=4).contains(&version) {
        return None;
    }
    r.1 = version >= 4;
    let protocol_type = r.string()?;
    let generation = r.i32()?;
    let protocol = r.nullable()?;
    let leader = r.nullable()?;
    let current_state_timestamp = if version >= 2 { r.i64()? } else { -1 };
    let count: i64 = if r.1 {
        i64::from(r.uvarint()?) - 1
    } else {
        i64::from(r.i32()?)
    };
    // The fewest bytes a member of this version takes (every string and bytes field empty): a
    // count beyond the bytes left is refused before anything is allocated for it.
    let smallest = match version {
        0 => 18,
        1 | 2 => 22,
        3 => 24,
        // Compact lengths of one byte each, the two int32s and the member's tagged fields.
        _ => 15,
    };
    if usize::try_from(count).unwrap_or(0).saturating_mul(smallest) > r.0.len() {
        return None;
    }
    let mut members = Vec::new();
    for _ in 0..count.max(0) {
        members.push(MemberMetadata {
            member_id: r.string()?,
            group_instance_id: if version >= 3 { r.nullable()? } else { None },
            client_id: r.string()?,
            client_host: r.string()?,
            rebalance_timeout: if version >= 1 { r.i32()? } else { -1 },
            session_timeout: r.i32()?,
            subscription: r.bytes()?,
            assignment: r.bytes()?,
        });
        r.tagged_fields()?;
    }
    r.tagged_fields()?;
    Some(GroupMetadata {
        protocol_type,
        generation,
        protocol,
        leader,
        current_state_timestamp,
        members,
    })
}

/// The consumer protocol's subscription (version 0) to `topics`, with empty user data.
pub fn subscription<'a>(topics: impl IntoIterator<Item = &'a str>) -> Vec<u8> {
    let topics: Vec<&str> = topics.into_iter().collect();
    let mut w = Writer(Vec::new());
    w.i16(0).i32(topics.len() as i32);
    for t in topics {
        w.string(t);
    }
    w.i32(0); // empty user data (every reader takes it; not all take a null)
    w.0
}

/// The consumer protocol's assignment (version 0) of `partitions`, grouped by topic in order.
pub fn assignment(partitions: &[crate::record::TopicPartition]) -> Vec<u8> {
    let mut by_topic: Vec<(&str, Vec<i32>)> = Vec::new();
    for tp in partitions {
        match by_topic.iter_mut().find(|(t, _)| *t == tp.topic) {
            Some((_, ps)) => ps.push(tp.partition),
            None => by_topic.push((&tp.topic, vec![tp.partition])),
        }
    }
    let mut w = Writer(Vec::new());
    w.i16(0).i32(by_topic.len() as i32);
    for (t, ps) in by_topic {
        w.string(t).i32(ps.len() as i32);
        for p in ps {
            w.i32(p);
        }
    }
    w.i32(0); // empty user data (every reader takes it; not all take a null)
    w.0
}

/// The partitions a consumer protocol assignment (any version) holds, in its order; none for
/// bytes that are not one. Versions 1+ only add fields after the partitions.
pub fn assigned(bytes: &[u8]) -> Vec<crate::record::TopicPartition> {
    let mut r = Reader::new(bytes);
    let mut out = Vec::new();
    let read = |r: &mut Reader<'_>, out: &mut Vec<crate::record::TopicPartition>| -> Option<()> {
        r.i16()?;
        let topics = r.i32()?;
        for _ in 0..topics.max(0) {
            let topic = r.string()?;
            let n = r.i32()?;
            if n < 0 || r.0.len() < n as usize * 4 {
                return None;
            }
            for _ in 0..n {
                out.push(crate::record::TopicPartition::new(topic.clone(), r.i32()?));
            }
        }
        Some(())
    };
    match read(&mut r, &mut out) {
        Some(()) => out,
        None => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Kafka 4.4's offset commit value: the flexible version 4 (compact string, tagged fields
    /// with the topic id as tag 0), laid out by hand from its OffsetCommitValue.json.
    #[test]
    fn kafka_4s_consumer_protocol_keys_read_with_their_group() {
        // Keys Apache Kafka 4.4 wrote for a group of librdkafka's `group.protocol=consumer`:
        // ConsumerGroupMetadata (type 3, the group) and ConsumerGroupMemberMetadata (type 5, the
        // group and the member).
        let hex = |s: &str| -> Vec<u8> {
            (0..s.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex"))
                .collect()
        };
        let group = "kip848-16079-3-readers";
        assert_eq!(
            decode_key(&hex("000300166b69703834382d31363037392d332d72656164657273")),
            Some(RecordKey::Coordinator {
                kind: 3,
                group: group.into(),
                member: None
            })
        );
        let member = decode_key(&hex(
            "000500166b69703834382d31363037392d332d72656164657273001664694779565055535147327448506c36435561435777",
        ))
        .expect("a member's key");
        assert_eq!(
            member,
            RecordKey::Coordinator {
                kind: 5,
                group: group.into(),
                member: Some("diGyVPUSQG2tHPl6CUaCWw".into())
            }
        );
        assert_eq!(member.group(), group);
        assert_eq!(coordinator_record_name(5), Some("ConsumerGroupMemberMetadata"));
        // A key cut short, or with bytes past its fields, is no key.
        assert_eq!(decode_key(&hex("000300166b6970")), None);
        assert_eq!(decode_key(&hex("000600016100016200")), None);
    }

    #[test]
    fn kafka_4s_flexible_offset_commit_reads() {
        let mut v = vec![0, 4];
        v.extend(12i64.to_be_bytes());
        v.extend(7i32.to_be_bytes());
        v.extend([4, b'a', b'b', b'c']); // compact string "abc": length + 1
        v.extend(1_767_225_600_000i64.to_be_bytes());
        v.extend([1, 0, 16]); // one tagged field: tag 0, 16 bytes
        v.extend([0xab; 16]);
        let d = decode_offset_commit(&v).expect("a version 4 value");
        assert_eq!(
            (
                d.version,
                d.offset,
                d.leader_epoch,
                d.metadata.as_str(),
                d.commit_timestamp,
                d.expire_timestamp
            ),
            (Some(4), 12, 7, "abc", 1_767_225_600_000, None)
        );
        // No tagged field at all, and a cut tagged field, are told apart.
        let mut plain = v[..v.len() - 19].to_vec();
        plain.push(0);
        assert_eq!(decode_offset_commit(&plain).map(|d| d.offset), Some(12));
        assert!(decode_offset_commit(&v[..v.len() - 4]).is_none());
        // Versions past 4 are not guessed at.
        let mut v5 = v.clone();
        v5[1] = 5;
        assert!(decode_offset_commit(&v5).is_none());
    }

    /// Kafka 4.4's group metadata value, version 4: compact strings, a compact array of members
    /// (each ending with its tagged fields), and the value's own tagged fields.
    #[test]
    fn kafka_4s_flexible_group_metadata_reads() {
        let compact = |s: &str| {
            let mut b = vec![u8::try_from(s.len() + 1).expect("short")];
            b.extend(s.as_bytes());
            b
        };
        let mut v = vec![0, 4];
        v.extend(compact("consumer"));
        v.extend(3i32.to_be_bytes());
        v.extend(compact("range"));
        v.extend(compact("m-1"));
        v.extend((-1i64).to_be_bytes());
        v.push(2); // one member
        v.extend(compact("m-1"));
        v.push(0); // group instance id: null
        v.extend(compact("client"));
        v.extend(compact("/127.0.0.1"));
        v.extend(45_000i32.to_be_bytes());
        v.extend(45_000i32.to_be_bytes());
        let sub = subscription(["orders"]);
        v.push(u8::try_from(sub.len() + 1).expect("short"));
        v.extend(&sub);
        let asg = assignment(&[crate::record::TopicPartition::new("orders", 0)]);
        v.push(u8::try_from(asg.len() + 1).expect("short"));
        v.extend(&asg);
        v.push(0); // the member's tagged fields
        v.push(0); // the value's tagged fields
        let g = decode_group_value(&v).expect("a version 4 value");
        assert_eq!(
            (
                g.protocol_type.as_str(),
                g.generation,
                g.protocol.as_deref(),
                g.leader.as_deref()
            ),
            ("consumer", 3, Some("range"), Some("m-1"))
        );
        assert_eq!(g.members.len(), 1);
        assert_eq!(
            (
                g.members[0].member_id.as_str(),
                g.members[0].group_instance_id.clone()
            ),
            ("m-1", None)
        );
        assert_eq!(
            assigned(&g.members[0].assignment),
            vec![crate::record::TopicPartition::new("orders", 0)]
        );
        assert!(decode_group_value(&v[..v.len() - 3]).is_none());
    }

    /// The bytes Kafka writes for ('analytics-prod', 'orders', 0) at offset 4, laid out by hand
    /// from the schema, not by the encoder under test.
    #[test]
    fn an_offset_commit_is_laid_out_as_kafka_lays_it_out() {
        let key = OffsetKey {
            group: "g".into(),
            topic: "t".into(),
            partition: 3,
        };
        assert_eq!(offset_key(&key), [0, 1, 0, 1, b'g', 0, 1, b't', 0, 0, 0, 3]);
        let value = OffsetAndMetadata {
            offset: 4,
            leader_epoch: -1,
            metadata: "m".into(),
            commit_timestamp: 258,
        };
        assert_eq!(
            offset_value(&value),
            [0, 3, 0, 0, 0, 0, 0, 0, 0, 4, 0xff, 0xff, 0xff, 0xff, 0, 1, b'm', 0, 0, 0, 0, 0, 0, 1, 2]
        );
        assert_eq!(decode_key(&offset_key(&key)), Some(RecordKey::Offset(key)));
        assert_eq!(decode_offset_value(&offset_value(&value)), Some(value));
    }

    #[test]
    fn the_labs_former_json_records_still_read_back() {
        let key = decode_key(br#"["analytics-prod","orders",0]"#);
        assert_eq!(
            key,
            Some(RecordKey::Offset(OffsetKey {
                group: "analytics-prod".into(),
                topic: "orders".into(),
                partition: 0
            }))
        );
        let value = decode_offset_value(br#"{"offset":4,"metadata":"c1#1 auto-timer","commit_timestamp":5}"#);
        assert_eq!(value.map(|v| (v.offset, v.commit_timestamp)), Some((4, 5)));
    }

    #[test]
    fn older_value_versions_read_and_bad_bytes_are_refused() {
        // Version 1: no leader epoch, an expire timestamp after the commit timestamp.
        let mut v1 = vec![0, 1];
        v1.extend_from_slice(&9i64.to_be_bytes());
        v1.extend_from_slice(&[0, 0]);
        v1.extend_from_slice(&7i64.to_be_bytes());
        v1.extend_from_slice(&(-1i64).to_be_bytes());
        assert_eq!(decode_offset_value(&v1).map(|v| v.offset), Some(9));
        assert_eq!(decode_offset_value(&[0, 9, 1]), None);
        assert_eq!(
            decode_key(&[0, 1, 0, 5, b'a']),
            None,
            "a string longer than the bytes"
        );
        assert_eq!(decode_key(&[0, 7]), None, "an unknown record type");
        // A member count far beyond the bytes: refused, nothing allocated for it.
        let mut huge = group_value(&GroupMetadata::default());
        let n = huge.len();
        huge[n - 4..].copy_from_slice(&i32::MAX.to_be_bytes());
        assert_eq!(decode_group_value(&huge), None);
        // Version 0's smallest member: 18 bytes, every field empty.
        let mut v0 = vec![0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0, 0, 0, 1];
        v0.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        let g = decode_group_value(&v0).expect("a version 0 group with one empty member");
        assert_eq!((g.generation, g.members.len()), (0, 1));
    }

    proptest! {
        #[test]
        fn offset_records_read_back_as_written(
            group in ".{0,40}", topic in "[a-z._-]{1,20}", partition in 0..10_000i32,
            offset in any::<i64>(), metadata in ".{0,40}", ts in any::<i64>(), leader_epoch in -1..=i32::MAX,
        ) {
            let key = OffsetKey { group, topic, partition };
            let value = OffsetAndMetadata { offset, leader_epoch, metadata, commit_timestamp: ts };
            prop_assert_eq!(decode_key(&offset_key(&key)), Some(RecordKey::Offset(key)));
            prop_assert_eq!(decode_offset_value(&offset_value(&value)), Some(value));
        }

        #[test]
        fn group_records_read_back_as_written(
            group in ".{0,40}", generation in any::<i32>(), protocol in proptest::option::of(".{0,10}"),
            members in proptest::collection::vec((".{0,20}", proptest::option::of(".{0,8}"), any::<i32>(), proptest::collection::vec(any::<u8>(), 0..16)), 0..4),
        ) {
            let g = GroupMetadata {
                protocol_type: "consumer".into(),
                generation,
                leader: members.first().map(|m| m.0.clone()),
                protocol,
                current_state_timestamp: 7,
                members: members
                    .into_iter()
                    .map(|(id, instance, timeout, bytes)| MemberMetadata {
                        member_id: id,
                        group_instance_id: instance,
                        client_id: "c".into(),
                        client_host: "/127.0.0.1".into(),
                        rebalance_timeout: timeout,
                        session_timeout: 45_000,
                        subscription: bytes.clone(),
                        assignment: bytes,
                    })
                    .collect(),
            };
            prop_assert_eq!(decode_key(&group_key(&group)), Some(RecordKey::Group(group)));
            prop_assert_eq!(decode_group_value(&group_value(&g)), Some(g));
        }
    }
}
