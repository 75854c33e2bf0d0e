//! JoinGroup: a real client joins (or rejoins) a group; the answer waits until the rebalance
//! completes — every member rejoined, or the rebalance timeout passed. A group of the lab's own
//! consumers refuses real members (INCONSISTENT_GROUP_PROTOCOL): the two never share a group.

use crate::broker::Broker;
use crate::coordinator::Join;
use offsetlab_wire::error::{INCONSISTENT_GROUP_PROTOCOL, INVALID_GROUP_ID, NONE, UNKNOWN_MEMBER_ID};
use offsetlab_wire::kafka_protocol::messages::{JoinGroupRequest, JoinGroupResponse};
use std::sync::Arc;

pub(crate) async fn handle(
    broker: &Arc<Broker>,
    r: JoinGroupRequest,
    version: i16,
    client_id: &str,
    host: &str,
) -> Option<JoinGroupResponse> {
    let response = join(broker, r, version, client_id, host).await?;
    // From v7 a refusal names no protocol (null), as Kafka's does.
    Some(if version >= 7 && response.error_code != NONE {
        response.with_protocol_name(None)
    } else {
        response
    })
}

async fn join(
    broker: &Arc<Broker>,
    r: JoinGroupRequest,
    version: i16,
    client_id: &str,
    host: &str,
) -> Option<JoinGroupResponse> {
    let name = r.group_id.0.to_string();
    if name.is_empty() {
        return Some(
            JoinGroupResponse::default()
                .with_error_code(INVALID_GROUP_ID)
                .with_generation_id(-1),
        );
    }
    let lab = broker.lab.clone();
    let (lab_members, lab_generation) = tokio::task::spawn_blocking(move || {
        lab.lock()
            .lab()
            .group(&name)
            .map_or((false, 0), |g| (!g.members.is_empty(), g.generation))
    })
    .await
    .ok()?;
    if lab_members {
        return Some(
            JoinGroupResponse::default()
                .with_error_code(INCONSISTENT_GROUP_PROTOCOL)
                .with_generation_id(-1),
        );
    }
    Some(
        match broker
            .coordinator
            .join(&r, version, client_id, host, lab_generation)
        {
            Join::Now(response) => response,
            Join::Wait(rx, timeout) => match tokio::time::timeout(timeout, rx).await {
                Ok(Ok(response)) => response,
                // Dropped from the rebalance (it timed out) or the wait outlived it.
                _ => JoinGroupResponse::default()
                    .with_error_code(UNKNOWN_MEMBER_ID)
                    .with_generation_id(-1),
            },
        },
    )
}
