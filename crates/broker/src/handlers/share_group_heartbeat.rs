//! ShareGroupHeartbeat (KIP-932): a real client's share consumer joins a share group (member
//! epoch 0, with the topics it subscribes to), stays in it, or leaves it (member epoch −1). The
//! member id is the client's own (v1). The lab runs the simple assignor when the membership or a
//! subscription changes; the response carries the assignment when it is new to the member, or
//! when the request was a full one (epoch 0, or topics named).

use crate::broker::Broker;
use crate::change;
use crate::share_members::{ShareMemberState, HEARTBEAT_INTERVAL};
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::{Command, ShareJoin, ShareLeave};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::share_group_heartbeat_response::{Assignment, TopicPartitions};
use offsetlab_wire::kafka_protocol::messages::{ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::Uuid;
use std::collections::BTreeSet;
use std::time::Instant;

/// Kafka's bound on a member id a client chooses.
const MAX_MEMBER_ID: usize = 36;

fn refused(code: i16, message: impl Into<String>) -> ShareGroupHeartbeatResponse {
    ShareGroupHeartbeatResponse::default()
        .with_error_code(code)
        .with_error_message(Some(StrBytes::from_string(message.into())))
        .with_member_epoch(0)
}

pub(crate) fn handle(
    broker: &Broker,
    r: &ShareGroupHeartbeatRequest,
    client_id: &str,
    host: &str,
) -> ShareGroupHeartbeatResponse {
    let (group, member) = (r.group_id.0.to_string(), r.member_id.to_string());
    let topics: Option<Vec<String>> = r
        .subscribed_topic_names
        .as_ref()
        .map(|ts| ts.iter().map(|t| t.0.to_string()).collect());
    if group.is_empty() || member.is_empty() || member.len() > MAX_MEMBER_ID {
        return refused(
            INVALID_REQUEST,
            "a share group member needs a group id and a member id of 1 to 36 characters",
        );
    }
    if r.rack_id.as_ref().is_some_and(|rack| rack.is_empty()) {
        return refused(INVALID_REQUEST, "the rack id, when given, cannot be empty");
    }
    if r.member_epoch < -1 {
        return refused(
            INVALID_REQUEST,
            format!("member epoch {} is not an epoch", r.member_epoch),
        );
    }
    if let Some(bad) = topics
        .iter()
        .flatten()
        .find(|t| offsetlab_engine::names::check_topic_name(t).is_err())
    {
        // The lab writes the subscription into its history: a name that is no topic's cannot be
        // written back as one.
        return refused(INVALID_REQUEST, format!("'{bad}' is not a topic name"));
    }
    if r.member_epoch == 0 && topics.as_ref().is_none_or(Vec::is_empty) {
        return refused(
            INVALID_REQUEST,
            "a member joining a share group subscribes to at least one topic",
        );
    }
    let s = broker.lab.lock();
    let lab = s.lab();
    if lab.group(&group).is_ok() {
        return refused(
            GROUP_ID_NOT_FOUND,
            format!("group {group} is a consumer group, not a share group"),
        );
    }
    let known = lab
        .share_group(&group)
        .ok()
        .and_then(|g| g.member(&member))
        .filter(|m| m.client)
        .map(|m| m.topics.clone());
    let coordinator = &broker.share_members;
    if r.member_epoch == -1 {
        if known.is_none() {
            return refused(
                UNKNOWN_MEMBER_ID,
                format!("{member} is not a member of share group {group}"),
            );
        }
        let leave = Command::ShareLeave(ShareLeave {
            group: group.clone(),
            member: member.clone(),
            session_timeout: false,
        });
        if let Err(e) = change::apply_commands(&broker.lab, s, vec![leave]) {
            return refused(e.code(), e.message());
        }
        coordinator.remove(&group, &member);
        broker.share_sessions.forget(&group, &member);
        // No interval: a member that left sends no more heartbeats (Kafka answers 0).
        return ShareGroupHeartbeatResponse::default()
            .with_member_id(Some(r.member_id.clone()))
            .with_member_epoch(-1);
    }
    let state = coordinator.get(&group, &member);
    if r.member_epoch > 0 {
        let (Some(_), Some(state)) = (&known, &state) else {
            return refused(
                UNKNOWN_MEMBER_ID,
                format!("{member} is not a member of share group {group}"),
            );
        };
        if r.member_epoch != state.epoch && r.member_epoch != state.previous_epoch {
            return refused(
                FENCED_MEMBER_EPOCH,
                format!(
                    "member epoch {} is not {member}'s ({})",
                    r.member_epoch, state.epoch
                ),
            );
        }
    }
    // Join, or a new subscription: the lab runs the assignor.
    let join = match (&topics, &known) {
        (Some(t), Some(k)) if t == k => None,
        (Some(t), _) => Some(t.clone()),
        (None, _) => None,
    };
    let s = match join {
        Some(topics) => {
            let line = Command::ShareJoin(ShareJoin {
                group: group.clone(),
                member: member.clone(),
                client: client_id.to_string(),
                topics,
            });
            if let Err(e) = change::apply_commands(&broker.lab, s, vec![line]) {
                return refused(e.code(), e.message());
            }
            broker.lab.lock()
        }
        None => s,
    };
    let lab = s.lab();
    let Some((epoch, assigned)) = lab
        .share_group(&group)
        .ok()
        .and_then(|g| g.member(&member).map(|m| (g.epoch, m.assignment.clone())))
    else {
        return refused(
            UNKNOWN_MEMBER_ID,
            format!("{member} is not a member of share group {group}"),
        );
    };
    let view = broker.lab.view();
    drop(s);
    let full = r.member_epoch == 0 || topics.is_some();
    let changed = state.as_ref().and_then(|m| m.sent.as_ref()) != Some(&assigned);
    let previous_epoch = state.as_ref().map_or(0, |m| {
        if m.epoch == epoch {
            m.previous_epoch
        } else {
            m.epoch
        }
    });
    coordinator.put(
        &group,
        &member,
        ShareMemberState {
            epoch,
            previous_epoch,
            last_heartbeat: Instant::now(),
            sent: Some(assigned.clone()),
            host: host.to_string(),
        },
    );
    let assignment =
        (full || changed).then(|| Assignment::default().with_topic_partitions(by_topic_id(&view, &assigned)));
    ShareGroupHeartbeatResponse::default()
        .with_member_id(Some(r.member_id.clone()))
        .with_member_epoch(epoch)
        .with_heartbeat_interval_ms(HEARTBEAT_INTERVAL.as_millis() as i32)
        .with_assignment(assignment)
}

/// An assignment as the response names it: by topic id.
fn by_topic_id(
    view: &offsetlab_lab::read_view::ReadView,
    assigned: &BTreeSet<TopicPartition>,
) -> Vec<TopicPartitions> {
    let mut out: Vec<TopicPartitions> = Vec::new();
    for tp in assigned {
        let Some(id) = view.topic_id_of(&tp.topic) else {
            continue;
        };
        let id = Uuid::from_bytes(id);
        match out.iter_mut().find(|t| t.topic_id == id) {
            Some(t) => t.partitions.push(tp.partition),
            None => out.push(
                TopicPartitions::default()
                    .with_topic_id(id)
                    .with_partitions(vec![tp.partition]),
            ),
        }
    }
    out
}
