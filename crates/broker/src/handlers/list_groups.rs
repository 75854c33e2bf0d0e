//! ListGroups: the lab's groups, the groups of real clients as the coordinator holds them now, and
//! groups that only have committed offsets.

use crate::broker::Broker;
use crate::str_bytes;
use offsetlab_lab::lock;
use offsetlab_wire::kafka_protocol::messages::list_groups_response::ListedGroup;
use offsetlab_wire::kafka_protocol::messages::{GroupId, ListGroupsResponse};
use std::collections::BTreeMap;

/// The lab's groups and the groups of real clients (their live state from the coordinator).
pub(crate) fn handle(broker: &Broker) -> ListGroupsResponse {
    let (s, coordinator) = (broker.lab.lock(), &broker.coordinator);
    let mut listed: BTreeMap<String, (String, String)> = s
        .lab()
        .groups()
        .values()
        .map(|g| {
            (
                g.name.clone(),
                (g.protocol_type().to_string(), g.state().to_string()),
            )
        })
        .collect();
    for (name, g) in lock(&coordinator.groups).iter() {
        if !g.members.is_empty() || !listed.contains_key(name) {
            listed.insert(
                name.clone(),
                (g.protocol_type.clone(), g.state.name().to_string()),
            );
        }
    }
    // A group that only has offsets — committed from outside any group (an admin's reset, a
    // consumer with `assign()`), or by a transaction — is Empty to Kafka's coordinator, with no
    // protocol type, and listed.
    for name in s.lab().offsets().groups() {
        listed
            .entry(name.to_string())
            .or_insert_with(|| (String::new(), "Empty".to_string()));
    }
    ListGroupsResponse::default().with_groups(
        listed
            .into_iter()
            .map(|(name, (protocol_type, state))| {
                ListedGroup::default()
                    .with_group_id(GroupId(str_bytes(&name)))
                    .with_protocol_type(str_bytes(&protocol_type))
                    .with_group_state(str_bytes(&state))
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::{DescribeGroupsRequest, GroupId};

    #[test]
    fn the_labs_groups_are_listed_and_described_as_kafka_would() {
        let b = broker();
        let listed = handle(&b);
        let names: Vec<(&str, &str)> = listed
            .groups
            .iter()
            .map(|g| (g.group_id.0.as_str(), g.group_state.as_str()))
            .collect();
        assert_eq!(names, vec![("analytics-prod", "Stable")]);
        let described = crate::handlers::describe_groups::handle(
            &b,
            &DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(name("analytics-prod")), GroupId(name("nobody"))]),
        );
        let g = &described.groups[0];
        assert_eq!((g.group_state.as_str(), g.members.len()), ("Stable", 1));
        let owned = offsetlab_wire::consumer_protocol::assigned_partitions(&g.members[0].member_assignment);
        assert_eq!(owned, vec![("orders".to_string(), 0)]);
        assert_eq!(described.groups[1].group_state.as_str(), "Dead");
    }

    #[test]
    fn a_group_with_only_committed_offsets_is_listed_and_described_empty() {
        let b = broker();
        let lines = vec!["reset-offsets audit topic=orders to-offset=3 execute".to_string()];
        b.lab
            .lock()
            .apply_lines(&lines)
            .expect("an offset reset for a new group");
        let listed = handle(&b);
        let audit = listed
            .groups
            .iter()
            .find(|g| g.group_id.0.as_str() == "audit")
            .expect("the group is listed");
        assert_eq!(
            (audit.group_state.as_str(), audit.protocol_type.as_str()),
            ("Empty", "")
        );
        let described = crate::handlers::describe_groups::handle(
            &b,
            &DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(name("audit")), GroupId(name("nobody"))]),
        );
        let states: Vec<&str> = described.groups.iter().map(|g| g.group_state.as_str()).collect();
        assert_eq!(states, ["Empty", "Dead"]);
    }
}
