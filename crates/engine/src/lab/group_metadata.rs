//! The group coordinator's record of each group's membership in `__consumer_offsets`.
//!
//! Kafka's coordinator writes a `GroupMetadata` record keyed by the group whenever a rebalance
//! completes (with every member, its subscription and its assignment), when the group empties
//! (no members, no protocol), and a tombstone when the group is deleted. A coordinator taking
//! over a group rebuilds its membership from these records; tools that read the topic — lag
//! monitors, Kafka's own `GroupMetadataMessageFormatter` — learn who owns what from them.

use super::Lab;
use crate::offsets::schema::{self, GroupMetadata, MemberMetadata};
use crate::record::TopicPartition;

impl Lab {
    /// Appends `group`'s membership as it stands now (after a completed rebalance, or Empty).
    pub(crate) fn record_group_metadata(&mut self, group: &str) {
        let Some(g) = self.groups.get(group) else {
            return;
        };
        let now = self.clock.now();
        let owned = |id: &str| -> Vec<TopicPartition> {
            g.owners
                .iter()
                .filter(|(_, o)| o.as_str() == id)
                .map(|(tp, _)| tp.clone())
                .collect()
        };
        let (protocol, members): (String, Vec<MemberMetadata>) = match &g.external {
            Some(e) => (
                e.protocol.clone(),
                e.members
                    .iter()
                    .map(|m| MemberMetadata {
                        member_id: m.id.clone(),
                        group_instance_id: m.instance_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.host.clone(),
                        rebalance_timeout: m.rebalance_timeout_ms.unwrap_or(-1),
                        session_timeout: m.session_timeout_ms.unwrap_or(-1),
                        subscription: schema::subscription(m.topics.iter().map(String::as_str)),
                        assignment: schema::assignment(&m.partitions),
                    })
                    .collect(),
            ),
            None => (
                if g.cooperative() {
                    "cooperative-sticky".to_string()
                } else {
                    "range".to_string()
                },
                g.members
                    .iter()
                    .map(|m| {
                        let config = self.consumers.get(&m.consumer).map(|c| &c.config);
                        let millis = |v: Option<i64>| v.map_or(-1, |v| i32::try_from(v).unwrap_or(i32::MAX));
                        MemberMetadata {
                            member_id: m.id.clone(),
                            group_instance_id: m.instance_id.clone(),
                            client_id: m.consumer.clone(),
                            client_host: "/127.0.0.1".to_string(),
                            rebalance_timeout: millis(config.map(|c| c.max_poll_interval_ms)),
                            session_timeout: millis(config.map(|c| c.session_timeout_ms)),
                            subscription: schema::subscription([m.topic.as_str()]),
                            assignment: schema::assignment(&owned(&m.id)),
                        }
                    })
                    .collect(),
            ),
        };
        let metadata = GroupMetadata {
            protocol_type: g.protocol_type().to_string(),
            generation: g.generation,
            protocol: (!members.is_empty()).then_some(protocol),
            leader: members.first().map(|m| m.member_id.clone()),
            current_state_timestamp: now,
            members,
        };
        self.offsets.write_group(group, &metadata, now);
    }
}
