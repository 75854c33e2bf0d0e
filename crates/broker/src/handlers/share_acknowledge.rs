//! ShareAcknowledge (KIP-932): a share consumer's acknowledgements sent on their own — when it
//! commits without fetching, or closes. The epoch is its share session's next (ShareFetch and
//! ShareAcknowledge count on one counter); −1 applies them and closes the session, releasing
//! what the member still holds. Each partition's acknowledgements take effect all or none.

use super::share_acks;
use crate::broker::Broker;
use crate::share_sessions::Opened;
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::share_acknowledge_response::{
    PartitionData, ShareAcknowledgeTopicResponse,
};
use offsetlab_wire::kafka_protocol::messages::{ShareAcknowledgeRequest, ShareAcknowledgeResponse};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;

fn refused(code: i16, message: impl Into<String>) -> ShareAcknowledgeResponse {
    ShareAcknowledgeResponse::default()
        .with_error_code(code)
        .with_error_message(Some(StrBytes::from_string(message.into())))
}

pub(crate) fn handle(
    broker: &Broker,
    r: &ShareAcknowledgeRequest,
    connection: u64,
) -> ShareAcknowledgeResponse {
    let group = r.group_id.as_ref().map(|g| g.0.to_string()).unwrap_or_default();
    let member = r.member_id.as_ref().map(ToString::to_string).unwrap_or_default();
    if group.is_empty() || member.is_empty() {
        return refused(
            INVALID_REQUEST,
            "a share acknowledgement names its group and member",
        );
    }
    if r.share_session_epoch == 0 {
        return refused(
            INVALID_SHARE_SESSION_EPOCH,
            "acknowledgements go in an open share session (epoch 0 opens one with a ShareFetch)",
        );
    }
    let opened =
        match broker
            .share_sessions
            .update(connection, &group, &member, r.share_session_epoch, &[], &[])
        {
            Ok(o) => o,
            Err(code) => {
                return refused(
                    code,
                    format!(
                        "share session of {member} in {group}: epoch {}",
                        r.share_session_epoch
                    ),
                )
            }
        };
    let view = broker.lab.view();
    let mut responses = Vec::new();
    for t in &r.topics {
        let topic = view.topic_named_by_id(t.topic_id.as_bytes()).map(str::to_string);
        let partitions = t
            .partitions
            .iter()
            .map(|p| {
                let (code, message) = match &topic {
                    None => (UNKNOWN_TOPIC_ID, None),
                    Some(topic) => {
                        let tp = TopicPartition::new(topic.clone(), p.partition_index);
                        let batches = p
                            .acknowledgement_batches
                            .iter()
                            .map(|b| (b.first_offset, b.last_offset, &b.acknowledge_types[..]));
                        match share_acks::runs_of(batches) {
                            Ok(runs) => share_acks::apply(broker, &group, &member, &tp, runs),
                            Err(share_acks::Refused(code, m)) => (code, Some(m)),
                        }
                    }
                };
                PartitionData::default()
                    .with_partition_index(p.partition_index)
                    .with_error_code(code)
                    .with_error_message(message.map(StrBytes::from_string))
            })
            .collect();
        responses.push(
            ShareAcknowledgeTopicResponse::default()
                .with_topic_id(t.topic_id)
                .with_partitions(partitions),
        );
    }
    if opened == Opened::Closed {
        super::share_fetch::release(broker, &group, &member);
    }
    ShareAcknowledgeResponse::default().with_responses(responses)
}
