//! LeaveGroup: one member (before v3) or a list of them leaves; the rest rebalance, or the group
//! is Empty — a `rebalance` line with no members.

use crate::broker::Broker;
use crate::change;
use crate::str_bytes;
use offsetlab_wire::kafka_protocol::messages::leave_group_response::MemberResponse;
use offsetlab_wire::kafka_protocol::messages::{LeaveGroupRequest, LeaveGroupResponse};
use std::sync::Arc;

pub(crate) async fn handle(
    broker: &Arc<Broker>,
    r: LeaveGroupRequest,
    version: i16,
) -> Option<LeaveGroupResponse> {
    let b = Arc::clone(broker);
    let per_member = tokio::task::spawn_blocking(move || {
        let _settle = b.coordinator.settle_lock();
        let settled = b.coordinator.leave(&r);
        let _ = change::settle(&b.lab, &b.coordinator, settled.commands);
        settled.answer
    })
    .await
    .ok()?;
    Some(if version >= 3 {
        LeaveGroupResponse::default().with_members(
            per_member
                .iter()
                .map(|(id, code)| {
                    // No static membership here: every member's instance id is null, as Kafka
                    // answers for a dynamic member.
                    MemberResponse::default()
                        .with_member_id(str_bytes(id))
                        .with_group_instance_id(None)
                        .with_error_code(*code)
                })
                .collect(),
        )
    } else {
        LeaveGroupResponse::default().with_error_code(per_member.first().map_or(0, |m| m.1))
    })
}
