//! Share groups' members as the group coordinator keeps them for real clients (KIP-932): the
//! epoch each was last told, the assignment it was last sent, and its last heartbeat — on wall
//! time, as a member's session is. Joins, leaves and session timeouts reach the lab as
//! `share-join` and `share-leave` lines; the lab decides the assignment (Kafka's simple
//! assignor) and keeps the records' states.

use offsetlab_engine::record::TopicPartition;
use offsetlab_lab::lock;
use offsetlab_scenario::command::{Command, ShareLeave};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Kafka's `group.share.heartbeat.interval.ms`.
pub(crate) const HEARTBEAT_INTERVAL: Duration = Duration::from_secs(5);
/// Kafka's `group.share.session.timeout.ms`, for a group whose own `share.session.timeout.ms`
/// is not known.
pub(crate) const SESSION_TIMEOUT: Duration = Duration::from_secs(45);

/// One member, as the coordinator knows it.
#[derive(Debug, Clone)]
pub(crate) struct ShareMemberState {
    /// The member epoch it was last told, and the one before (a heartbeat crossing the
    /// response that moved it on still counts, as in Kafka).
    pub(crate) epoch: i32,
    pub(crate) previous_epoch: i32,
    pub(crate) last_heartbeat: Instant,
    /// What its last response carried; `None` before the first.
    pub(crate) sent: Option<BTreeSet<TopicPartition>>,
    pub(crate) host: String,
}

#[derive(Debug, Default)]
pub(crate) struct ShareMembers {
    members: Mutex<HashMap<(String, String), ShareMemberState>>,
}

impl ShareMembers {
    pub(crate) fn get(&self, group: &str, member: &str) -> Option<ShareMemberState> {
        lock(&self.members)
            .get(&(group.to_string(), member.to_string()))
            .cloned()
    }

    pub(crate) fn put(&self, group: &str, member: &str, state: ShareMemberState) {
        lock(&self.members).insert((group.to_string(), member.to_string()), state);
    }

    pub(crate) fn remove(&self, group: &str, member: &str) {
        lock(&self.members).remove(&(group.to_string(), member.to_string()));
    }

    /// The members whose session ran out at `now` — each group's `share.session.timeout.ms`
    /// (`timeout_of`) after its last heartbeat — forgotten here and written as the lines that
    /// take them out of their groups.
    pub(crate) fn expired(&self, now: Instant, timeout_of: impl Fn(&str) -> Duration) -> Vec<Command> {
        let mut members = lock(&self.members);
        let gone: Vec<(String, String)> = members
            .iter()
            .filter(|((group, _), m)| now.duration_since(m.last_heartbeat) >= timeout_of(group))
            .map(|(k, _)| k.clone())
            .collect();
        gone.into_iter()
            .map(|(group, member)| {
                members.remove(&(group.clone(), member.clone()));
                Command::ShareLeave(ShareLeave {
                    group,
                    member,
                    session_timeout: true,
                })
            })
            .collect()
    }
}
