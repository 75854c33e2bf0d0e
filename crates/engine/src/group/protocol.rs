//! The classic (eager) group protocol's states and its commit fence: one definition for the
//! lab's own consumers (driven by the logical clock in this crate) and for the coordinator the
//! Kafka listener runs for real clients (on wall time), so the two cannot drift apart.
//!
//! ```text
//!            a member joins, leaves or times out
//!   Empty ─────────────────────────────▶ PreparingRebalance ──(every member rejoined, or the
//!     ▲                                     │   ▲               rebalance timeout passed)
//!     │ the join completed with nobody      │   │ membership changed
//!     └─────────────────────────────────────┘   │
//!                                               │           ▼
//!                      Stable ◀──(the leader's SyncGroup)── CompletingRebalance
//! ```
//!
//! These are Kafka's `ClassicGroupState`s and their valid previous states. The lab's consumers
//! join and sync in one step (the engine computes the assignment the moment the last member
//! rejoins), so they pass through CompletingRebalance without stopping there.

use serde::{Deserialize, Serialize};

/// A group's state, as Kafka's coordinator names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GroupState {
    /// No members: offsets can be reset, the group deleted.
    Empty,
    /// Membership changed: the coordinator waits for every member to rejoin.
    PreparingRebalance,
    /// Every member rejoined and has its generation: the leader's assignment is awaited.
    CompletingRebalance,
    /// Every member has its assignment.
    Stable,
}

impl GroupState {
    pub fn name(self) -> &'static str {
        match self {
            Self::Empty => "Empty",
            Self::PreparingRebalance => "PreparingRebalance",
            Self::CompletingRebalance => "CompletingRebalance",
            Self::Stable => "Stable",
        }
    }

    /// Whether a group may move to `self` from `previous` (Kafka's `validPreviousStates`).
    pub fn can_follow(self, previous: GroupState) -> bool {
        use GroupState::*;
        match self {
            PreparingRebalance => matches!(previous, Empty | Stable | CompletingRebalance),
            CompletingRebalance => previous == PreparingRebalance,
            Stable => previous == CompletingRebalance,
            Empty => previous == PreparingRebalance,
        }
    }
}

impl std::fmt::Display for GroupState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a member's offset commit is fenced off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fenced {
    /// Kafka's `UNKNOWN_MEMBER_ID`: not a member (any more) — a zombie, or a client whose
    /// session expired.
    UnknownMember,
    /// Kafka's `ILLEGAL_GENERATION`: a member, but of another generation.
    IllegalGeneration { current: i32 },
    /// Kafka's `REBALANCE_IN_PROGRESS`: the new generation's assignment is not settled yet —
    /// commit after the SyncGroup.
    RebalanceInProgress,
}

/// The commit fence: only a current member of the current generation commits, and not while
/// its group waits for the leader's assignment.
pub fn check_commit(state: GroupState, is_member: bool, generation: i32, current: i32) -> Result<(), Fenced> {
    if !is_member {
        return Err(Fenced::UnknownMember);
    }
    if generation != current {
        return Err(Fenced::IllegalGeneration { current });
    }
    if state == GroupState::CompletingRebalance {
        return Err(Fenced::RebalanceInProgress);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use GroupState::*;

    #[test]
    fn the_states_follow_kafkas_rules() {
        let all = [Empty, PreparingRebalance, CompletingRebalance, Stable];
        let allowed: Vec<(GroupState, GroupState)> = all
            .iter()
            .flat_map(|&from| all.iter().map(move |&to| (from, to)))
            .filter(|&(from, to)| to.can_follow(from))
            .collect();
        assert_eq!(
            allowed,
            vec![
                (Empty, PreparingRebalance),
                (PreparingRebalance, Empty),
                (PreparingRebalance, CompletingRebalance),
                (CompletingRebalance, PreparingRebalance),
                (CompletingRebalance, Stable),
                (Stable, PreparingRebalance),
            ]
        );
    }

    #[test]
    fn the_fence_checks_member_then_generation_then_state() {
        assert_eq!(check_commit(Stable, true, 3, 3), Ok(()));
        assert_eq!(
            check_commit(PreparingRebalance, true, 3, 3),
            Ok(()),
            "Kafka accepts it"
        );
        assert_eq!(check_commit(Stable, false, 3, 3), Err(Fenced::UnknownMember));
        assert_eq!(
            check_commit(Stable, true, 2, 3),
            Err(Fenced::IllegalGeneration { current: 3 })
        );
        assert_eq!(
            check_commit(CompletingRebalance, true, 3, 3),
            Err(Fenced::RebalanceInProgress)
        );
    }
}
