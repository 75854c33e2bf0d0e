//! DescribeGroups: a group's state, protocol and members, with the partitions each owns.

use crate::broker::Broker;
use crate::coordinator;
use crate::str_bytes;
use offsetlab_lab::lock;
use offsetlab_wire::consumer_protocol;
use offsetlab_wire::kafka_protocol::messages::describe_groups_response::{
    DescribedGroup, DescribedGroupMember,
};
use offsetlab_wire::kafka_protocol::messages::{DescribeGroupsRequest, DescribeGroupsResponse, GroupId};
use std::collections::BTreeMap;

/// A group of real clients as the coordinator sees it now (`None` when it has no members).
fn describe_external(coordinator: &coordinator::Coordinator, id: &GroupId) -> Option<DescribedGroup> {
    let groups = lock(&coordinator.groups);
    let g = groups.get(id.0.as_str()).filter(|g| !g.members.is_empty())?;
    let members = g
        .ordered()
        .map(|(member_id, m)| {
            DescribedGroupMember::default()
                .with_member_id(str_bytes(member_id))
                .with_group_instance_id(m.instance_id.as_deref().map(str_bytes))
                .with_client_id(str_bytes(&m.client_id))
                .with_client_host(str_bytes(&m.host))
                .with_member_metadata(m.metadata(&g.protocol))
                .with_member_assignment(m.assignment.clone())
        })
        .collect();
    Some(
        DescribedGroup::default()
            .with_group_id(id.clone())
            .with_group_state(str_bytes(g.state.name()))
            .with_protocol_type(str_bytes(&g.protocol_type))
            .with_protocol_data(str_bytes(&g.protocol))
            .with_members(members),
    )
}

/// What Kafka's coordinator leaves out of a group that is not Stable (`GroupMetadata.summary`):
/// while a rebalance is on, no protocol is chosen for everyone and no assignment holds, so the
/// members come without their metadata and assignment bytes, and the protocol is empty.
fn summarized(g: DescribedGroup) -> DescribedGroup {
    if g.group_state.as_str() == "Stable" {
        return g;
    }
    let members = g
        .members
        .iter()
        .cloned()
        .map(|m| {
            m.with_member_metadata(Default::default())
                .with_member_assignment(Default::default())
        })
        .collect();
    g.with_protocol_data(str_bytes("")).with_members(members)
}

/// The lab's groups as a Kafka coordinator describes them: members with the partitions they own
/// (the consumer protocol's assignment bytes), the assignor as the protocol. An unknown group is
/// `Dead`, as Kafka answers.
pub(crate) fn handle(broker: &Broker, r: &DescribeGroupsRequest, version: i16) -> DescribeGroupsResponse {
    let (s, coordinator) = (broker.lab.lock(), &broker.coordinator);
    let lab = s.lab();
    let ops = crate::authorized::if_asked(r.include_authorized_operations, crate::authorized::GROUP);
    let groups = r
        .groups
        .iter()
        .map(|id| {
            if let Some(described) = describe_external(coordinator, id) {
                return summarized(described);
            }
            let name = id.0.to_string();
            // A group the coordinator removed is kept by the lab for its own consumers
            // (`dead`): to a client it is gone.
            let found = lab.group(&name).ok().filter(|g| !g.is_dead());
            let Some(g) = found else {
                // Only offsets: Empty, with no protocol (as Kafka's coordinator has it); else Dead.
                let state = if lab.offsets().groups().any(|g| g == name) {
                    "Empty"
                } else {
                    "Dead"
                };
                return DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_group_state(str_bytes(state));
            };
            if g.consumer.is_some() {
                // A consumer-protocol group is not a classic group: Kafka 4.4 describes it as
                // Dead (GROUP_ID_NOT_FOUND from v6); ConsumerGroupDescribe describes it.
                return DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_group_state(str_bytes("Dead"));
            }
            let assignor = g
                .members
                .first()
                .and_then(|m| lab.consumer(&m.consumer).ok())
                .map_or("range".to_string(), |c| c.config.assignor.to_string());
            let members = g
                .members
                .iter()
                .map(|m| {
                    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                    for (tp, owner) in &g.owners {
                        if owner == &m.id {
                            by_topic.entry(tp.topic.clone()).or_default().push(tp.partition);
                        }
                    }
                    let bytes = consumer_protocol::assignment(
                        by_topic.iter().map(|(t, ps)| (t.as_str(), ps.clone())),
                    );
                    DescribedGroupMember::default()
                        .with_member_id(str_bytes(&m.id))
                        .with_group_instance_id(m.instance_id.as_deref().map(str_bytes))
                        .with_client_id(str_bytes(&m.consumer))
                        .with_client_host(str_bytes("/127.0.0.1"))
                        .with_member_metadata(
                            lab.consumer(&m.consumer)
                                .map(|c| consumer_protocol::subscription([c.config.topic.as_str()]))
                                .unwrap_or_default(),
                        )
                        .with_member_assignment(bytes)
                })
                .collect();
            summarized(
                DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_group_state(str_bytes(&g.state().to_string()))
                    .with_protocol_type(str_bytes(g.protocol_type()))
                    .with_protocol_data(str_bytes(if g.members.is_empty() { "" } else { &assignor }))
                    .with_members(members),
            )
        })
        .map(|g: DescribedGroup| {
            // From v6 (KIP-1043) a group that does not exist is an error, not a Dead group.
            let missing = version >= 6 && g.group_state.as_str() == "Dead";
            if missing {
                let message = format!("Group {} not found.", g.group_id.0.as_str());
                g.with_error_code(offsetlab_wire::error::GROUP_ID_NOT_FOUND)
                    .with_error_message(Some(str_bytes(&message)))
            } else {
                g.with_authorized_operations(ops)
            }
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};

    fn describe(b: &Broker) -> DescribedGroup {
        let r = DescribeGroupsRequest::default().with_groups(vec![GroupId(name("analytics-prod"))]);
        handle(b, &r, 5).groups.remove(0)
    }

    fn act(b: &Broker, lines: &[&str]) {
        let lines: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
        b.lab.lock().apply_lines(&lines).expect("the lines apply");
    }

    #[test]
    fn a_rebalancing_group_is_described_without_protocol_or_member_bytes() {
        let b = broker();
        act(&b, &["poll c1"]);
        let stable = describe(&b);
        assert_eq!(stable.group_state.as_str(), "Stable");
        assert_eq!(stable.protocol_data.as_str(), "range");
        assert!(
            !stable.members[0].member_assignment.is_empty(),
            "c1 owns orders-0"
        );
        assert_eq!(
            consumer_protocol::subscribed_topics(&stable.members[0].member_metadata),
            ["orders"],
            "the member's metadata is its subscription, as Sarama and kafka-consumer-groups decode it"
        );
        act(&b, &["consumer c2 group=analytics-prod topic=orders", "poll c2"]);
        let rebalancing = describe(&b);
        assert_ne!(rebalancing.group_state.as_str(), "Stable");
        assert_eq!(
            rebalancing.protocol_data.as_str(),
            "",
            "no protocol while rebalancing"
        );
        assert!(!rebalancing.members.is_empty(), "the members are still listed");
        assert!(rebalancing
            .members
            .iter()
            .all(|m| m.member_assignment.is_empty() && m.member_metadata.is_empty()));
        act(&b, &["poll c1"]);
        assert_eq!(describe(&b).group_state.as_str(), "Stable");
    }
}
