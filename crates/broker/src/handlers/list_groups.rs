//! ListGroups: the lab's groups, and the groups of real clients as the coordinator holds them now.

use crate::broker::Broker;
use crate::str_bytes;
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
        .map(|g| (g.name.clone(), ("consumer".to_string(), g.state().to_string())))
        .collect();
    for (name, g) in coordinator
        .groups
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        if !g.members.is_empty() || !listed.contains_key(name) {
            listed.insert(
                name.clone(),
                (g.protocol_type.clone(), g.state.name().to_string()),
            );
        }
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
