//! The figures of a consumer-protocol group (KIP-848) for the page and `--json`: the group and
//! member epochs, and per member what it owns, what it is revoking and what it awaits — the
//! reconciliation a stop-the-world rebalance does not have.

use super::Lab;
use crate::group::{ConsumerGroup, GroupProtocol, MemberState, ServerAssignor};
use crate::record::TopicPartition;
use serde::Serialize;

/// A consumer group's coordinator state (`None` in [`super::GroupView`] for a classic group).
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ConsumerGroupView {
    pub group_epoch: i32,
    /// The epoch of the target assignment.
    pub assignment_epoch: i32,
    /// The server-side assignor the group uses.
    pub assignor: ServerAssignor,
    /// Members, in join order.
    pub members: Vec<ConsumerGroupMemberView>,
}

/// One member of a consumer group, as ConsumerGroupDescribe would describe it.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ConsumerGroupMemberView {
    pub member_id: String,
    /// The lab consumer it is an incarnation of.
    pub consumer: String,
    /// `consumer`, or `classic` for a classic member of an upgraded or mixed group.
    pub protocol: GroupProtocol,
    pub member_epoch: i32,
    pub state: MemberState,
    /// Partitions it owns and fetches (`orders-0`).
    pub assigned: Vec<String>,
    /// Partitions it still owns but must revoke (its next poll does).
    pub revoking: Vec<String>,
    /// Partitions the target gives it that another member has not released yet.
    pub awaiting: Vec<String>,
    /// The partitions the target assignment gives it.
    pub target: Vec<String>,
}

fn names<'a>(tps: impl IntoIterator<Item = &'a TopicPartition>) -> Vec<String> {
    tps.into_iter().map(ToString::to_string).collect()
}

impl Lab {
    /// `group`'s consumer-protocol figures, if it speaks the consumer protocol.
    pub fn consumer_group_view(&self, group: &str) -> Option<ConsumerGroupView> {
        let g = self.groups.get(group)?;
        let cg: &ConsumerGroup = g.consumer.as_ref()?;
        // The lab's consumers by their name; real clients (through the listener) by client id.
        let members: Vec<(&str, &str)> = match &g.external {
            Some(e) if g.members.is_empty() => e
                .members
                .iter()
                .map(|m| (m.id.as_str(), m.client_id.as_str()))
                .collect(),
            _ => g
                .members
                .iter()
                .map(|m| (m.id.as_str(), m.consumer.as_str()))
                .collect(),
        };
        let members = members
            .into_iter()
            .filter_map(|(id, consumer)| {
                let cm = cg.members.get(id)?;
                Some(ConsumerGroupMemberView {
                    member_id: id.to_string(),
                    consumer: consumer.to_string(),
                    protocol: if cm.classic {
                        GroupProtocol::Classic
                    } else {
                        GroupProtocol::Consumer
                    },
                    member_epoch: cm.member_epoch,
                    state: cm.state,
                    assigned: names(&cm.assigned),
                    revoking: names(&cm.pending_revocation),
                    awaiting: names(&cg.awaiting(id)),
                    target: names(&cg.target_of(id)),
                })
            })
            .collect();
        Some(ConsumerGroupView {
            group_epoch: cg.group_epoch,
            assignment_epoch: cg.assignment_epoch,
            assignor: cg.assignor(),
            members,
        })
    }
}
