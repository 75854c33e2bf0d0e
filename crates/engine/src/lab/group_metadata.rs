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
            Some(e) => {
                // Another client's protocol (Kafka Connect's, …): its members' bytes are not the
                // consumer protocol's, and the lab does not keep them — written empty.
                let consumer = e.protocol_type == "consumer";
                let members = e
                    .members
                    .iter()
                    .map(|m| MemberMetadata {
                        member_id: m.id.clone(),
                        group_instance_id: m.instance_id.clone(),
                        client_id: m.client_id.clone(),
                        client_host: m.host.clone(),
                        rebalance_timeout: m.rebalance_timeout_ms.unwrap_or(-1),
                        session_timeout: m.session_timeout_ms.unwrap_or(-1),
                        subscription: if consumer {
                            schema::subscription(m.topics.iter().map(String::as_str))
                        } else {
                            Vec::new()
                        },
                        assignment: if consumer {
                            schema::assignment(&m.partitions)
                        } else {
                            Vec::new()
                        },
                    })
                    .collect();
                (e.protocol.clone(), members)
            }
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

#[cfg(test)]
mod tests {
    use crate::group::ExternalMember;
    use crate::offsets::schema;
    use crate::Lab;

    /// The group metadata record of each rebalance: a consumer group's members with their
    /// subscription and assignment in the consumer protocol, another client's (Kafka Connect's)
    /// with its protocol type and no made-up consumer bytes.
    #[test]
    fn each_rebalance_writes_the_groups_metadata_with_its_protocol_type() {
        let mut lab = Lab::default();
        lab.create_topic("orders", Default::default()).expect("topic");
        let member = |id: &str| ExternalMember {
            id: id.into(),
            client_id: "c".into(),
            host: "/127.0.0.1".into(),
            ..ExternalMember::default()
        };
        let worker = ExternalMember {
            partitions: vec![crate::record::TopicPartition::new("orders", 0)],
            topics: vec!["orders".into()],
            ..member("consumer-1")
        };
        lab.external_rebalance("readers", 1, "range", vec![worker])
            .expect("rebalance");
        lab.external_rebalance_of(
            "connect-cluster",
            1,
            "connect",
            "sessioned",
            vec![member("worker-1")],
        )
        .expect("rebalance");
        let mut groups = Vec::new();
        lab.offsets().log().read(0, usize::MAX, &mut |r| {
            if let (Some(schema::RecordKey::Group(g)), Some(v)) = (
                r.key.and_then(schema::decode_key),
                r.value.and_then(schema::decode_group_value),
            ) {
                groups.push((g, v));
            }
        });
        let (name, readers) = &groups[0];
        assert_eq!(
            (name.as_str(), readers.protocol_type.as_str()),
            ("readers", "consumer")
        );
        assert_eq!(schema::assigned(&readers.members[0].assignment).len(), 1);
        let (name, connect) = &groups[1];
        assert_eq!(
            (name.as_str(), connect.protocol_type.as_str()),
            ("connect-cluster", "connect")
        );
        assert_eq!(connect.protocol.as_deref(), Some("sessioned"));
        assert!(connect.members[0].subscription.is_empty() && connect.members[0].assignment.is_empty());
    }
}
