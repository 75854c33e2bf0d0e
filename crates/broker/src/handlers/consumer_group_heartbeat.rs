//! ConsumerGroupHeartbeat (KIP-848): a consumer-protocol member joins, heartbeats, reconciles
//! and leaves — [`crate::coordinator::ModernGroup`] decides; what changed reaches the lab as the
//! group's new state, in the order decided (under the settle lock).

use crate::broker::Broker;
use crate::change;
use crate::coordinator::TopicsById;
use offsetlab_lab::read_view::ReadView;
use offsetlab_wire::kafka_protocol::messages::{
    ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse,
};

pub(crate) fn handle(
    broker: &Broker,
    r: &ConsumerGroupHeartbeatRequest,
    version: i16,
    client_id: &str,
    host: &str,
) -> ConsumerGroupHeartbeatResponse {
    let group = r.group_id.0.to_string();
    let _settle = broker.coordinator.settle_lock();
    let (lab_epoch, lab_own) = {
        let s = broker.lab.lock();
        s.lab().group(&group).map_or((None, false), |g| {
            (
                g.consumer.as_ref().map(|c| c.group_epoch).or(Some(g.generation)),
                !g.members.is_empty(),
            )
        })
    };
    let topics = topics_by_id(&broker.lab.view());
    let settled = broker
        .coordinator
        .consumer_heartbeat(r, version, client_id, host, &topics, lab_epoch, lab_own);
    // The answer stands even if the lab did not take the state: the coordinator offers it again
    // on its next tick ([`crate::coordinator::Coordinator::unsettled`]).
    let _ = change::settle(&broker.lab, &broker.coordinator, settled.commands);
    settled.answer
}

/// The lab's topics as a heartbeat names them: id and partition count, by name.
pub(crate) fn topics_by_id(view: &ReadView) -> TopicsById {
    view.topics()
        .map(|t| (t.name.to_string(), (t.id, t.partitions().len() as i32)))
        .collect()
}
