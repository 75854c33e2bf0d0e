//! ListGroups: the lab's groups, the groups of real clients as the coordinator holds them now, and
//! groups that only have committed offsets.

use crate::broker::Broker;
use crate::str_bytes;
use offsetlab_lab::lock;
use offsetlab_wire::kafka_protocol::messages::list_groups_response::ListedGroup;
use offsetlab_wire::kafka_protocol::messages::{GroupId, ListGroupsRequest, ListGroupsResponse};

/// The group types (v5, KIP-848): the classic protocol (JoinGroup and SyncGroup), Kafka 4's
/// consumer protocol (ConsumerGroupHeartbeat), and share groups.
const CLASSIC: &str = "classic";
const CONSUMER: &str = "consumer";
/// Share groups (KIP-932): listed with "share" as their protocol type and their type.
const SHARE: &str = "share";
use std::collections::BTreeMap;

/// The lab's groups and the groups of real clients (their live state from the coordinator),
/// kept to the states (v4, KIP-518) and types (v5, KIP-848) the request filters on, compared
/// case-insensitively as Kafka compares them. A consumer-protocol group is listed with its type
/// and its state as that protocol names it (`Assigning`, `Reconciling`, …).
pub(crate) fn handle(broker: &Broker, r: &ListGroupsRequest) -> ListGroupsResponse {
    let (s, coordinator) = (broker.lab.lock(), &broker.coordinator);
    let mut listed: BTreeMap<String, (String, String, &str)> = s
        .lab()
        .groups()
        .values()
        // A group the coordinator removed, kept by the lab for its own consumers: not listed.
        .filter(|g| !g.is_dead())
        .map(|g| {
            let listing = if g.consumer.is_some() {
                (CONSUMER.to_string(), g.state_name().to_string(), CONSUMER)
            } else {
                (g.protocol_type().to_string(), g.state().to_string(), CLASSIC)
            };
            (g.name.clone(), listing)
        })
        .collect();
    for g in s.lab().share().groups.values().filter(|g| !g.deleted) {
        listed.insert(
            g.name.clone(),
            (SHARE.to_string(), g.state_name().to_string(), SHARE),
        );
    }
    for (name, g) in lock(&coordinator.groups).iter() {
        // An empty group the lab has not got (yet): listed while a join is on its way; one the
        // lab's coordinator removed since (no member, no offset) is gone.
        if !g.members.is_empty() || (!listed.contains_key(name) && g.has_pending()) {
            listed.insert(
                name.clone(),
                (g.protocol_type.clone(), g.state.name().to_string(), CLASSIC),
            );
        }
    }
    // A group that only has offsets — committed from outside any group (an admin's reset, a
    // consumer with `assign()`), or by a transaction — is Empty to Kafka's coordinator, with no
    // protocol type, and listed.
    for name in s.lab().offsets().groups() {
        listed
            .entry(name.to_string())
            .or_insert_with(|| (String::new(), "Empty".to_string(), CLASSIC));
    }
    let wanted = |filter: &[offsetlab_wire::kafka_protocol::protocol::StrBytes], value: &str| {
        filter.is_empty() || filter.iter().any(|f| f.eq_ignore_ascii_case(value))
    };
    ListGroupsResponse::default().with_groups(
        listed
            .into_iter()
            .filter(|(_, (_, state, _))| wanted(&r.states_filter, state))
            .filter(|(_, (_, _, kind))| wanted(&r.types_filter, kind))
            .map(|(name, (protocol_type, state, kind))| {
                ListedGroup::default()
                    .with_group_id(GroupId(str_bytes(&name)))
                    .with_protocol_type(str_bytes(&protocol_type))
                    .with_group_state(str_bytes(&state))
                    .with_group_type(str_bytes(kind))
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
        let listed = handle(&b, &ListGroupsRequest::default());
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
            5,
        );
        let g = &described.groups[0];
        assert_eq!((g.group_state.as_str(), g.members.len()), ("Stable", 1));
        let owned = offsetlab_wire::consumer_protocol::assigned_partitions(&g.members[0].member_assignment);
        assert_eq!(owned, vec![("orders".to_string(), 0)]);
        assert_eq!(described.groups[1].group_state.as_str(), "Dead");
    }

    /// ListGroups v4 filters by state and v5 by type, as Kafka's coordinator does.
    #[test]
    fn the_states_and_types_filters_keep_what_they_name() {
        let b = broker();
        let names = |r: ListGroupsRequest| -> Vec<String> {
            handle(&b, &r)
                .groups
                .iter()
                .map(|g| g.group_id.0.to_string())
                .collect()
        };
        let filter = |v: &[&str]| v.iter().map(|s| str_bytes(s)).collect::<Vec<_>>();
        assert_eq!(
            names(ListGroupsRequest::default().with_states_filter(filter(&["stable"]))),
            ["analytics-prod"]
        );
        assert!(names(ListGroupsRequest::default().with_states_filter(filter(&["Empty"]))).is_empty());
        assert_eq!(
            names(ListGroupsRequest::default().with_types_filter(filter(&["Classic"]))),
            ["analytics-prod"]
        );
        assert!(names(ListGroupsRequest::default().with_types_filter(filter(&["consumer"]))).is_empty());
        assert_eq!(
            handle(&b, &ListGroupsRequest::default()).groups[0]
                .group_type
                .as_str(),
            "classic"
        );
    }

    /// A share group is listed as Kafka lists one: type and protocol type `share`, Empty
    /// without members; `kafka-share-groups.sh --list` filters on the type.
    #[test]
    fn share_groups_are_listed_with_their_type() {
        let b = broker();
        let lines: Vec<String> = [
            "share-consumer s1 group=workers topic=orders",
            "share-consumer s2 group=idle topic=orders",
            "close s2",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        b.lab.lock().apply_lines(&lines).expect("two share groups");
        let share = handle(
            &b,
            &ListGroupsRequest::default().with_types_filter(vec![str_bytes("Share")]),
        );
        let listed: Vec<(&str, &str, &str, &str)> = share
            .groups
            .iter()
            .map(|g| {
                (
                    g.group_id.0.as_str(),
                    g.group_state.as_str(),
                    g.group_type.as_str(),
                    g.protocol_type.as_str(),
                )
            })
            .collect();
        assert_eq!(
            listed,
            [
                ("idle", "Empty", "share", "share"),
                ("workers", "Stable", "share", "share")
            ]
        );
        // Deleted, though the lab keeps it for s2's audit: no longer listed.
        let lines = vec!["delete-group idle".to_string()];
        b.lab
            .lock()
            .apply_lines(&lines)
            .expect("an Empty share group deleted");
        let share = handle(
            &b,
            &ListGroupsRequest::default().with_types_filter(vec![str_bytes("share")]),
        );
        let names: Vec<&str> = share.groups.iter().map(|g| g.group_id.0.as_str()).collect();
        assert_eq!(names, ["workers"]);
        let classic = handle(
            &b,
            &ListGroupsRequest::default().with_types_filter(vec![str_bytes("classic")]),
        );
        assert!(classic.groups.iter().all(|g| g.group_type.as_str() == "classic"));
    }

    #[test]
    fn a_group_with_only_committed_offsets_is_listed_and_described_empty() {
        let b = broker();
        let lines = vec!["reset-offsets audit topic=orders to-offset=3 execute".to_string()];
        b.lab
            .lock()
            .apply_lines(&lines)
            .expect("an offset reset for a new group");
        let listed = handle(&b, &ListGroupsRequest::default());
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
            5,
        );
        let states: Vec<&str> = described.groups.iter().map(|g| g.group_state.as_str()).collect();
        assert_eq!(states, ["Empty", "Dead"]);
    }

    /// A group the coordinator's cleanup removed (no member, no offset) is neither listed nor
    /// described, though the lab keeps it for its own consumer.
    #[test]
    fn a_group_the_cleanup_removed_is_gone_to_clients() {
        let b = broker();
        let lines: Vec<String> = [
            "consumer q1 group=quiet topic=orders commit=manual-batch",
            "poll q1",
            "close q1",
            "tick 10m",
        ]
        .iter()
        .map(ToString::to_string)
        .collect();
        b.lab
            .lock()
            .apply_lines(&lines)
            .expect("a group left without offsets");
        let listed = handle(&b, &ListGroupsRequest::default());
        assert!(
            listed.groups.iter().all(|g| g.group_id.0.as_str() != "quiet"),
            "{listed:?}"
        );
        let described = crate::handlers::describe_groups::handle(
            &b,
            &DescribeGroupsRequest::default().with_groups(vec![GroupId(name("quiet"))]),
            5,
        );
        assert_eq!(described.groups[0].group_state.as_str(), "Dead");
    }
}
