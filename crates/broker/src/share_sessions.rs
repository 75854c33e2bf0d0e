//! Share sessions (Kafka's `ShareSessionCache`): what a member's ShareFetch and
//! ShareAcknowledge requests build on. A session is keyed by group and member; epoch 0 opens one
//! (replacing any before it) with the partitions it names, each later request must carry the
//! session's next epoch — ShareFetch and ShareAcknowledge count on one counter — and may add
//! partitions or forget some, and epoch −1 closes it, releasing the records the member holds.
//! A fetch reads every partition of its session, not only those it names.

use offsetlab_engine::record::TopicPartition;
use offsetlab_lab::lock;
use offsetlab_wire::error::{
    INVALID_SHARE_SESSION_EPOCH, SHARE_SESSION_LIMIT_REACHED, SHARE_SESSION_NOT_FOUND,
};
use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

/// The epoch that closes a session.
pub(crate) const FINAL_EPOCH: i32 = -1;

/// Kafka's `group.share.max.share.sessions`: a new session past it is
/// SHARE_SESSION_LIMIT_REACHED (each costs memory the listener would otherwise give any client).
pub(crate) const MAX_SESSIONS: usize = 2000;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ShareSession {
    /// The epoch the next request must carry.
    pub(crate) next_epoch: i32,
    pub(crate) partitions: BTreeSet<TopicPartition>,
    /// The connection its last request came on: the session ends with it.
    pub(crate) connection: u64,
}

#[derive(Debug, Default)]
pub(crate) struct ShareSessions {
    sessions: Mutex<HashMap<(String, String), ShareSession>>,
}

/// What a request's epoch did to its session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Opened {
    /// A new session (epoch 0): a full response.
    New(ShareSession),
    /// The session at its next epoch.
    Continued(ShareSession),
    /// Closed (epoch −1): the member's records are released.
    Closed,
}

impl ShareSessions {
    /// Applies a request's epoch and partitions (added, then forgotten) to the member's session,
    /// or refuses with Kafka's error code and nothing changed.
    pub(crate) fn update(
        &self,
        connection: u64,
        group: &str,
        member: &str,
        epoch: i32,
        added: &[TopicPartition],
        forgotten: &[TopicPartition],
    ) -> Result<Opened, i16> {
        let key = (group.to_string(), member.to_string());
        let mut sessions = lock(&self.sessions);
        match epoch {
            0 => {
                if !sessions.contains_key(&key) && sessions.len() >= MAX_SESSIONS {
                    return Err(SHARE_SESSION_LIMIT_REACHED);
                }
                let s = ShareSession {
                    connection,
                    next_epoch: 1,
                    partitions: added
                        .iter()
                        .filter(|tp| !forgotten.contains(tp))
                        .cloned()
                        .collect(),
                };
                sessions.insert(key, s.clone());
                Ok(Opened::New(s))
            }
            FINAL_EPOCH => match sessions.remove(&key) {
                Some(_) => Ok(Opened::Closed),
                None => Err(SHARE_SESSION_NOT_FOUND),
            },
            e if e > 0 => {
                let s = sessions.get_mut(&key).ok_or(SHARE_SESSION_NOT_FOUND)?;
                if s.next_epoch != e {
                    return Err(INVALID_SHARE_SESSION_EPOCH);
                }
                s.partitions.extend(added.iter().cloned());
                for tp in forgotten {
                    s.partitions.remove(tp);
                }
                s.next_epoch = if e == i32::MAX { 1 } else { e + 1 };
                s.connection = connection;
                Ok(Opened::Continued(s.clone()))
            }
            _ => Err(INVALID_SHARE_SESSION_EPOCH),
        }
    }

    /// Ends the sessions whose requests came on `connection`, which closed: their group and
    /// member, whose records are then released.
    pub(crate) fn close_connection(&self, connection: u64) -> Vec<(String, String)> {
        let mut sessions = lock(&self.sessions);
        let closed: Vec<(String, String)> = sessions
            .iter()
            .filter(|(_, s)| s.connection == connection)
            .map(|(k, _)| k.clone())
            .collect();
        for k in &closed {
            sessions.remove(k);
        }
        closed
    }

    /// Whether the member has a session now (opened on any connection).
    pub(crate) fn has(&self, group: &str, member: &str) -> bool {
        lock(&self.sessions).contains_key(&(group.to_string(), member.to_string()))
    }

    /// Forgets every session of the member (it left the group).
    pub(crate) fn forget(&self, group: &str, member: &str) {
        lock(&self.sessions).remove(&(group.to_string(), member.to_string()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epochs_open_continue_and_close_a_session() {
        let s = ShareSessions::default();
        let tp = |p| TopicPartition::new("orders", p);
        assert_eq!(s.update(1, "g", "m", 3, &[], &[]), Err(SHARE_SESSION_NOT_FOUND));
        assert!(matches!(
            s.update(1, "g", "m", 0, &[tp(0)], &[]),
            Ok(Opened::New(_))
        ));
        assert_eq!(
            s.update(1, "g", "m", 2, &[], &[]),
            Err(INVALID_SHARE_SESSION_EPOCH)
        );
        let Ok(Opened::Continued(session)) = s.update(1, "g", "m", 1, &[tp(1)], &[tp(0)]) else {
            panic!("epoch 1 continues the session");
        };
        assert_eq!(session.partitions, [tp(1)].into());
        assert_eq!(session.next_epoch, 2);
        assert_eq!(s.update(1, "g", "m", FINAL_EPOCH, &[], &[]), Ok(Opened::Closed));
        assert_eq!(
            s.update(1, "g", "m", FINAL_EPOCH, &[], &[]),
            Err(SHARE_SESSION_NOT_FOUND)
        );
    }
}
