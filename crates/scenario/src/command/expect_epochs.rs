//! `expect` keys of Kafka 4's consumer group protocol (KIP-848): a group's epoch and protocol,
//! a member's epoch, reconciliation state, and its assigned, revoking and awaiting partitions.

use super::ExpectKey;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::{Lab, LabError};

/// `0,2,5` for partitions of one topic (`-` for none); `orders-0,payments-1` across topics.
fn partitions<'a>(tps: impl IntoIterator<Item = &'a TopicPartition>, topic: &str) -> String {
    let names: Vec<String> = tps
        .into_iter()
        .map(|tp| {
            if tp.topic == topic {
                tp.partition.to_string()
            } else {
                tp.to_string()
            }
        })
        .collect();
    if names.is_empty() {
        "-".to_string()
    } else {
        names.join(",")
    }
}

/// A group's `group-epoch` (`-` for a classic group) or `group-protocol`.
pub(super) fn group_actual(lab: &Lab, group: &str, key: ExpectKey) -> Result<String, LabError> {
    let g = lab.group(group)?;
    Ok(match key {
        ExpectKey::GroupProtocol => g.protocol().to_string(),
        _ => g
            .consumer
            .as_ref()
            .map_or("-".to_string(), |cg| cg.group_epoch.to_string()),
    })
}

/// A consumer's member figures in its consumer group: `-` (and no partitions) when its current
/// incarnation is not a member of one.
pub(super) fn member_actual(lab: &Lab, name: &str, key: ExpectKey) -> Result<String, LabError> {
    let c = lab.consumer(name)?;
    let member = c.member_id();
    let topic = c.config.topic.clone();
    let g = lab.group(&c.config.group)?;
    let found = g
        .consumer
        .as_ref()
        .and_then(|cg| cg.members.get(&member).map(|m| (cg, m)));
    let Some((cg, m)) = found else {
        return Ok("-".to_string());
    };
    Ok(match key {
        ExpectKey::MemberEpoch => m.member_epoch.to_string(),
        ExpectKey::MemberState => m.state.to_string(),
        ExpectKey::Assigned => partitions(&m.assigned, &topic),
        ExpectKey::Revoking => partitions(&m.pending_revocation, &topic),
        _ => partitions(&cg.awaiting(&member), &topic),
    })
}
