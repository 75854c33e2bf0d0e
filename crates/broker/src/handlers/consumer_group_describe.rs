//! ConsumerGroupDescribe (KIP-848): a consumer-protocol group's epochs, assignor and members —
//! each with its member epoch, what it owns and what the target assignment gives it. Answered
//! from the lab, so the lab's own consumer-protocol groups (lesson 13's) are described as real
//! clients' are. A classic group, or one the lab does not have, is GROUP_ID_NOT_FOUND with
//! Kafka's message: an admin client then asks DescribeGroups.

use crate::broker::Broker;
use offsetlab_engine::lab::ConsumerGroupMemberView;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::Lab;
use offsetlab_wire::error::GROUP_ID_NOT_FOUND;
use offsetlab_wire::kafka_protocol::messages::consumer_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use offsetlab_wire::kafka_protocol::messages::{
    ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse, TopicName,
};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::Uuid;
use std::collections::BTreeMap;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub(crate) fn handle(broker: &Broker, r: &ConsumerGroupDescribeRequest) -> ConsumerGroupDescribeResponse {
    let ops = crate::authorized::if_asked(r.include_authorized_operations, crate::authorized::GROUP);
    let s = broker.lab.lock();
    let groups = r
        .group_ids
        .iter()
        .map(|id| {
            describe(s.lab(), id.as_str())
                .with_group_id(id.clone())
                .with_authorized_operations(ops)
        })
        .collect();
    ConsumerGroupDescribeResponse::default().with_groups(groups)
}

fn describe(lab: &Lab, group: &str) -> DescribedGroup {
    let (Ok(g), Some(view), Some(cg)) = (
        lab.group(group),
        lab.consumer_group_view(group),
        lab.group(group).ok().and_then(|g| g.consumer.as_ref()),
    ) else {
        let message = if lab.group(group).is_ok() {
            format!("Group {group} is not a consumer group.")
        } else {
            format!("Group {group} not found.")
        };
        return DescribedGroup::default()
            .with_error_code(GROUP_ID_NOT_FOUND)
            .with_error_message(Some(text(&message)));
    };
    let external: BTreeMap<&str, &offsetlab_engine::group::ExternalMember> = g
        .external
        .iter()
        .flat_map(|e| e.members.iter().map(|m| (m.id.as_str(), m)))
        .collect();
    let assignment = |tps: &mut dyn Iterator<Item = &TopicPartition>| -> Assignment {
        let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
        for tp in tps {
            by_topic.entry(tp.topic.clone()).or_default().push(tp.partition);
        }
        Assignment::default().with_topic_partitions(
            by_topic
                .into_iter()
                .map(|(topic, partitions)| {
                    TopicPartitions::default()
                        .with_topic_id(Uuid::from_bytes(lab.topic_id_of(&topic).unwrap_or_default()))
                        .with_topic_name(TopicName(text(&topic)))
                        .with_partitions(partitions)
                })
                .collect(),
        )
    };
    let member = |m: &ConsumerGroupMemberView| -> Member {
        let ext = external.get(m.member_id.as_str());
        let topics: Vec<TopicName> = match ext {
            Some(e) => e.topics.iter().map(|t| TopicName(text(t))).collect(),
            None => g
                .members
                .iter()
                .filter(|lm| lm.id == m.member_id)
                .map(|lm| TopicName(text(&lm.topic)))
                .collect(),
        };
        let (owned, target) = match cg.members.get(&m.member_id) {
            // A partition being revoked is still the member's: Kafka lists it in its assignment.
            Some(cm) => (
                cm.assigned
                    .iter()
                    .chain(&cm.pending_revocation)
                    .cloned()
                    .collect::<Vec<_>>(),
                cg.target_of(&m.member_id).into_iter().collect::<Vec<_>>(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        Member::default()
            .with_member_id(text(&m.member_id))
            .with_instance_id(ext.and_then(|e| e.instance_id.as_deref()).map(text))
            .with_member_epoch(m.member_epoch)
            .with_client_id(text(ext.map_or(m.consumer.as_str(), |e| e.client_id.as_str())))
            .with_client_host(text(ext.map_or("", |e| e.host.as_str())))
            .with_subscribed_topic_names(topics)
            // Kafka 4.4 describes "no regular expression" as an empty one.
            .with_subscribed_topic_regex(Some(text("")))
            .with_assignment(assignment(&mut owned.iter()))
            .with_target_assignment(assignment(&mut target.iter()))
            .with_member_type(match m.protocol {
                offsetlab_engine::group::GroupProtocol::Classic => 0,
                offsetlab_engine::group::GroupProtocol::Consumer => 1,
            })
    };
    DescribedGroup::default()
        .with_group_state(text(g.state_name()))
        .with_group_epoch(view.group_epoch)
        .with_assignment_epoch(view.assignment_epoch)
        .with_assignor_name(text(&view.assignor.to_string()))
        .with_members(view.members.iter().map(member).collect())
}
