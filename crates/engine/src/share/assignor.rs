//! The share-group assignor: Kafka's `SimpleAssignor` (`group.share.assignors`, the only one
//! Kafka ships), as its homogeneous builder assigns partitions.
//!
//! Unlike a consumer group's assignors, it may give one partition to several members — that
//! is the point of a share group — but it does not give every partition to every member (its
//! first versions did, until Kafka 4.1). It balances first and keeps assignments second:
//! - each partition is shared by `desired_sharing = ⌈members / partitions⌉` members, so with
//!   more members than partitions every member gets one, and with fewer each partition has one
//!   owner, as in a consumer group;
//! - member `i` (of `m`) gets `⌈a(i+1)/m⌉ − ⌈a·i/m⌉` partitions, `a = desired_sharing ×
//!   partitions`, so counts differ by at most one;
//! - a member keeps what it had as far as that balance allows.
//!
//! Kafka walks members and partitions in hash-set order; the lab walks members in the order
//! they joined and partitions by number, so a scenario assigns the same way every time.

use crate::record::TopicPartition;
use std::collections::{BTreeMap, BTreeSet};

/// The assignment of `partitions` (of the topics the members subscribe to) among `members`
/// (in join order, each with what it holds now).
pub fn assign(
    members: &[(String, BTreeSet<TopicPartition>)],
    partitions: &[TopicPartition],
) -> BTreeMap<String, BTreeSet<TopicPartition>> {
    let m = members.len();
    let p = partitions.len();
    let mut out: BTreeMap<String, BTreeSet<TopicPartition>> = members
        .iter()
        .map(|(id, _)| (id.clone(), BTreeSet::new()))
        .collect();
    if m == 0 || p == 0 {
        return out;
    }
    let sharing = m.div_ceil(p);
    let a = sharing * p;
    let quota: Vec<usize> = (0..m)
        .map(|i| (a * (i + 1)).div_ceil(m) - (a * i).div_ceil(m))
        .collect();
    let mut shared: BTreeMap<&TopicPartition, usize> = partitions.iter().map(|tp| (tp, 0)).collect();
    // Stickiness: each member keeps what it held, within its quota and the partition's sharing.
    for (i, (id, held)) in members.iter().enumerate() {
        for tp in held {
            let Some(n) = shared.get_mut(tp) else { continue };
            let mine = out.entry(id.clone()).or_default();
            if *n < sharing && mine.len() < quota[i] {
                *n += 1;
                mine.insert(tp.clone());
            }
        }
    }
    // Balance: every partition short of its sharing goes to the next member with room.
    let mut next = 0;
    for tp in partitions {
        while shared.get(tp).copied().unwrap_or(sharing) < sharing {
            let candidate = (0..m).map(|k| (next + k) % m).find(|&i| {
                let mine = out.get(&members[i].0).map_or(0, BTreeSet::len);
                mine < quota[i] && !out.get(&members[i].0).is_some_and(|s| s.contains(tp))
            });
            let Some(i) = candidate else { break };
            out.entry(members[i].0.clone()).or_default().insert(tp.clone());
            if let Some(n) = shared.get_mut(tp) {
                *n += 1;
            }
            next = (i + 1) % m;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tps(n: i32) -> Vec<TopicPartition> {
        (0..n).map(|p| TopicPartition::new("orders", p)).collect()
    }

    fn members(ids: &[&str]) -> Vec<(String, BTreeSet<TopicPartition>)> {
        ids.iter().map(|id| (id.to_string(), BTreeSet::new())).collect()
    }

    #[test]
    fn more_members_than_partitions_share_them() {
        let a = assign(&members(&["s1#1", "s2#1"]), &tps(1));
        assert!(a.values().all(|s| s.len() == 1), "{a:?}");
    }

    #[test]
    fn fewer_members_than_partitions_split_them_as_a_consumer_group_would() {
        let a = assign(&members(&["s1#1", "s2#1"]), &tps(3));
        let sizes: Vec<usize> = a.values().map(BTreeSet::len).collect();
        assert_eq!(sizes, vec![2, 1]);
        let all: BTreeSet<&TopicPartition> = a.values().flatten().collect();
        assert_eq!(all.len(), 3, "every partition has exactly one member");
    }

    #[test]
    fn a_member_keeps_what_it_had() {
        let mut ms = members(&["s1#1", "s2#1", "s3#1"]);
        ms[0].1 = [TopicPartition::new("orders", 2)].into();
        let a = assign(&ms, &tps(3));
        assert!(a["s1#1"].contains(&TopicPartition::new("orders", 2)));
    }
}
