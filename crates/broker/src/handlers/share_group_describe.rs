//! ShareGroupDescribe (KIP-932): a share group's state, epoch, assignor and members — each with
//! its topics and what the simple assignor gives it. Answered from the lab, so the lab's own share
//! consumers' groups are described as real clients' are. A group that is no share group is
//! GROUP_ID_NOT_FOUND, as on Kafka.

use crate::broker::Broker;
use offsetlab_engine::Lab;
use offsetlab_lab::read_view::ReadView;
use offsetlab_wire::error::GROUP_ID_NOT_FOUND;
use offsetlab_wire::kafka_protocol::messages::share_group_describe_response::{
    Assignment, DescribedGroup, Member, TopicPartitions,
};
use offsetlab_wire::kafka_protocol::messages::{
    ShareGroupDescribeRequest, ShareGroupDescribeResponse, TopicName,
};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::Uuid;
use std::collections::BTreeMap;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

pub(crate) fn handle(broker: &Broker, r: &ShareGroupDescribeRequest) -> ShareGroupDescribeResponse {
    let ops = crate::authorized::if_asked(r.include_authorized_operations, crate::authorized::GROUP);
    let view = broker.lab.view();
    let s = broker.lab.lock();
    let groups = r
        .group_ids
        .iter()
        .map(|id| {
            describe(broker, s.lab(), &view, id.as_str())
                .with_group_id(id.clone())
                .with_authorized_operations(ops)
        })
        .collect();
    ShareGroupDescribeResponse::default().with_groups(groups)
}

fn describe(broker: &Broker, lab: &Lab, view: &ReadView, group: &str) -> DescribedGroup {
    let Some(g) = lab.share_group(group).ok().filter(|g| !g.deleted) else {
        let message = if lab.group(group).is_ok() {
            format!("Group {group} is not a share group.")
        } else {
            format!("Group {group} not found.")
        };
        return DescribedGroup::default()
            .with_error_code(GROUP_ID_NOT_FOUND)
            .with_error_message(Some(text(&message)));
    };
    let members = g
        .members
        .iter()
        .map(|m| {
            let known = broker.share_members.get(group, &m.id);
            let mut by_topic: BTreeMap<&str, Vec<i32>> = BTreeMap::new();
            for tp in &m.assignment {
                by_topic.entry(tp.topic.as_str()).or_default().push(tp.partition);
            }
            let assignment = Assignment::default().with_topic_partitions(
                by_topic
                    .into_iter()
                    .map(|(topic, partitions)| {
                        TopicPartitions::default()
                            .with_topic_id(view.topic_id_of(topic).map_or(Uuid::nil(), Uuid::from_bytes))
                            .with_topic_name(TopicName(text(topic)))
                            .with_partitions(partitions)
                    })
                    .collect(),
            );
            Member::default()
                .with_member_id(text(&m.id))
                .with_member_epoch(known.as_ref().map_or(g.epoch, |k| k.epoch))
                .with_client_id(text(&m.consumer))
                .with_client_host(text(known.as_ref().map_or("/127.0.0.1", |k| k.host.as_str())))
                .with_subscribed_topic_names(m.topics.iter().map(|t| TopicName(text(t))).collect())
                .with_assignment(assignment)
        })
        .collect();
    DescribedGroup::default()
        .with_group_state(text(g.state_name()))
        .with_group_epoch(g.epoch)
        .with_assignment_epoch(g.epoch)
        .with_assignor_name(text("simple"))
        .with_members(members)
}
