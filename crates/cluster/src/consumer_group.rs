//! What a group's coordinator knows and no client tells: a consumer-protocol group (KIP-848) as
//! ConsumerGroupDescribe describes it — the figures a run's `expect group-epoch= /
//! member-epoch= / assigned= / awaiting=` lines are checked against — and a classic group's
//! generations as `__consumer_offsets` stores them (`expect generation=`).
//!
//! Only ConsumerGroupDescribe tells a group's epoch and each member's: librdkafka keeps them to
//! itself, and its admin API describes members without epochs. The runner does not speak the
//! Kafka protocol itself (its clients are librdkafka's), so it is handed a
//! [`DescribeConsumerGroup`] and [`StoredGenerations`] by its caller — the CLI's admin client,
//! which does (`offsetlab groups --describe` and `offsetlab offsets` read the same).

use serde::Serialize;

/// A consumer-protocol group: its state, epochs and members.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ConsumerGroupDescription {
    /// `Empty`, `Assigning`, `Reconciling`, `Stable` or `Dead`.
    pub state: String,
    /// Bumped whenever the group's membership or subscriptions change.
    pub group_epoch: i32,
    /// The group epoch its current target assignment was computed at.
    pub assignment_epoch: i32,
    pub members: Vec<MemberDescription>,
}

/// One member of a consumer-protocol group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MemberDescription {
    pub member_id: String,
    /// `client.id`: the scenario consumer's name in a run.
    pub client_id: String,
    pub member_epoch: i32,
    /// What it owns now, (topic, partition) sorted — not what it is still revoking.
    pub assigned: Vec<(String, i32)>,
    /// What the group's target assignment gives it.
    pub target: Vec<(String, i32)>,
}

impl MemberDescription {
    /// The partitions of `topic` its target gives it and it does not own yet: another member
    /// still has to revoke them, or its next heartbeat picks them up.
    pub fn awaiting(&self, topic: &str) -> Vec<i32> {
        self.target
            .iter()
            .filter(|tp| tp.0 == topic && !self.assigned.contains(tp))
            .map(|tp| tp.1)
            .collect()
    }

    /// The partitions of `topic` it owns.
    pub fn assigned_of(&self, topic: &str) -> Vec<i32> {
        self.assigned
            .iter()
            .filter(|tp| tp.0 == topic)
            .map(|tp| tp.1)
            .collect()
    }
}

/// Asks the coordinator of `group` on the cluster at `bootstrap` (with the run's client
/// properties `extra`) for ConsumerGroupDescribe: `None` for a classic group, or none.
pub type DescribeConsumerGroup = fn(
    bootstrap: &str,
    extra: &[(String, String)],
    group: &str,
) -> Result<Option<ConsumerGroupDescription>, String>;

/// A classic group's generation as its coordinator stored it in `__consumer_offsets` (a
/// GroupMetadata record, written as each generation's assignment is synced): the generation and
/// the `client.id` of each member in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StoredGeneration {
    pub generation: i32,
    pub members: Vec<String>,
}

/// Reads every generation `group` stored on the cluster at `bootstrap`, oldest first (none
/// before a tombstone, which ends a deleted group). No client tells its application the
/// generation it joined and DescribeGroups does not show it: `__consumer_offsets` does.
pub type StoredGenerations =
    fn(bootstrap: &str, extra: &[(String, String)], group: &str) -> Result<Vec<StoredGeneration>, String>;

/// The generation the consumer with `client.id` `name` last joined: the newest stored generation
/// that lists it; `None` before it joined one.
pub fn last_joined(stored: &[StoredGeneration], name: &str) -> Option<i32> {
    stored
        .iter()
        .rev()
        .find(|g| g.members.iter().any(|m| m == name))
        .map(|g| g.generation)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_member_awaits_what_its_target_gives_it_and_it_does_not_own() {
        let m = MemberDescription {
            member_id: "m".into(),
            client_id: "k3".into(),
            member_epoch: 4,
            assigned: vec![("orders".into(), 5)],
            target: vec![("orders".into(), 2), ("orders".into(), 5), ("other".into(), 2)],
        };
        assert_eq!(m.awaiting("orders"), vec![2]);
        assert_eq!(m.assigned_of("orders"), vec![5]);
        assert_eq!(m.awaiting("other"), vec![2]);
    }

    #[test]
    fn a_consumer_is_in_the_newest_generation_that_lists_it() {
        let stored = [
            StoredGeneration {
                generation: 1,
                members: vec!["e1".into()],
            },
            StoredGeneration {
                generation: 2,
                members: vec!["e1".into(), "e2".into()],
            },
            StoredGeneration {
                generation: 3,
                members: vec!["e2".into(), "e3".into()],
            },
        ];
        assert_eq!(
            last_joined(&stored, "e1"),
            Some(2),
            "removed at 3: it last joined 2"
        );
        assert_eq!(last_joined(&stored, "e3"), Some(3));
        assert_eq!(last_joined(&stored, "e9"), None);
    }
}
