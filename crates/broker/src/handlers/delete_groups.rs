//! DeleteGroups: an Empty group and its offsets — or an Empty share group and its share state —
//! gone.

use crate::broker::Broker;
use crate::change::{self};
use crate::coordinator::Coordinator;
use offsetlab_lab::lock;
use offsetlab_lab::session::Session;
use offsetlab_scenario::command::{Command, DeleteGroup};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::delete_groups_response::DeletableGroupResult;
use offsetlab_wire::kafka_protocol::messages::{DeleteGroupsRequest, DeleteGroupsResponse};

/// Whether the lab or the coordinator knows `group`.
pub(crate) fn known_group(s: &Session, coordinator: &Coordinator, group: &str) -> bool {
    s.lab().groups().contains_key(group)
        || s.lab().share().groups.get(group).is_some_and(|g| !g.deleted)
        || s.lab().offsets().has_group(group)
        || lock(&coordinator.groups).contains_key(group)
}

/// DeleteGroups: an Empty group's offsets become tombstones; a group with members (the lab's or
/// real clients) is `NON_EMPTY_GROUP`.
pub(crate) fn handle(broker: &Broker, r: &DeleteGroupsRequest) -> DeleteGroupsResponse {
    let (lab, coordinator) = (&broker.lab, &broker.coordinator);
    // The coordinator's decisions and the lab's lines stay in one order.
    let _settle = coordinator.settle_lock();
    let s = lab.lock_for_change();
    let mut commands = Vec::new();
    let mut plan: Vec<Result<Option<usize>, i16>> = Vec::new();
    for g in &r.groups_names {
        let group = g.0.to_string();
        let in_lab = s.lab().groups().contains_key(&group)
            || s.lab().share().groups.get(&group).is_some_and(|g| !g.deleted)
            || s.lab().offsets().has_group(&group);
        // The lab never has a group with an empty id (it refuses one's commits): not found, as
        // Kafka answers for a group it does not have.
        plan.push(if !known_group(&s, coordinator, &group) {
            Err(GROUP_ID_NOT_FOUND)
        } else if s.lab().groups().get(&group).is_some_and(|g| g.has_members())
            || s.lab().share_group(&group).is_ok_and(|g| !g.members.is_empty())
            // Checked and forgotten in one step, before the lab's line: a client joining from
            // now on finds a new group, as it would in Kafka after the deletion.
            || !coordinator.forget_if_empty(&group)
        {
            Err(NON_EMPTY_GROUP)
        } else if in_lab {
            commands.push(Command::DeleteGroup(DeleteGroup { group }));
            Ok(Some(commands.len() - 1))
        } else {
            // Known only to the coordinator (joined once, never committed): nothing to tombstone.
            Ok(None)
        });
    }
    let results = change::apply_each(lab, s, commands);
    DeleteGroupsResponse::default().with_results(
        r.groups_names
            .iter()
            .zip(plan)
            .map(|(g, planned)| {
                let code = match planned.map(|line| line.map(|i| &results[i])) {
                    Err(code) => code,
                    Ok(Some(Err(failure))) => failure.code(),
                    Ok(_) => NONE,
                };
                DeletableGroupResult::default()
                    .with_group_id(g.clone())
                    .with_error_code(code)
            })
            .collect(),
    )
}
