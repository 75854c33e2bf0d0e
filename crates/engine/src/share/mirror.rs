//! A share group kept from what a real cluster showed its members: Kafka shows no outside
//! reader a share partition's records, so a run on a cluster (`offsetlab run
//! --bootstrap-server`) rebuilds the window from the cluster's own answers — each record a
//! member was handed, with the delivery count the broker gave it; each acknowledgement the
//! broker accepted; each member whose connection ended — with the same rules, so its figures
//! are computed as the model's are (one definition of every figure). Every later hand-out
//! checks the window: the runner compares it with the model's.

use super::group::ShareGroup;
use super::partition::{SharePartition, Transition};
use super::AcknowledgeType;
use crate::clock::Millis;
use crate::error::LabError;
use crate::record::{Offset, TopicPartition};

impl ShareGroup {
    /// The broker handed `offset` of `tp` to `member` at `now` (its lock until `now` plus
    /// `share.record.lock.duration.ms`); `start` is where the partition's window begins when
    /// this is the group's first record of it. Returns the delivery count this makes it.
    pub fn handed_out(
        &mut self,
        tp: &TopicPartition,
        offset: Offset,
        member: &str,
        now: Millis,
        start: Offset,
    ) -> u16 {
        let lock_ms = self.config.record_lock_duration_ms;
        let p = self
            .partitions
            .entry(tp.clone())
            .or_insert_with(|| SharePartition::new(start));
        let count = p.acquire(offset, member, now.saturating_add(lock_ms), offset + 1);
        self.audit.entry(tp.clone()).or_default().acquisitions += 1;
        count
    }

    /// The application applied the record at `offset` once more.
    pub fn applied(&mut self, tp: &TopicPartition, offset: Offset) {
        self.audit
            .entry(tp.clone())
            .or_default()
            .applied_once_more(offset);
    }

    /// The broker accepted `member`'s acknowledgement of `offsets`.
    pub fn acknowledged(
        &mut self,
        member: &str,
        tp: &TopicPartition,
        offsets: &[Offset],
        ack: AcknowledgeType,
    ) -> Result<Vec<Transition>, LabError> {
        let limit = self.config.delivery_count_limit;
        let p = self
            .partitions
            .get_mut(tp)
            .ok_or_else(|| LabError::InvalidRecordState(format!("{tp} was never handed out")))?;
        let done = p.acknowledge(member, offsets, ack, limit)?;
        self.record_completions(tp, &done);
        Ok(done)
    }

    /// Acquisition locks due at `now`: their records Available again, or Archived at the limit,
    /// the completions in the audit; what changed, by partition, with the member that held each.
    pub fn expire_locks(&mut self, now: Millis) -> Vec<(TopicPartition, String, Transition)> {
        let limit = self.config.delivery_count_limit;
        let mut out = Vec::new();
        let tps: Vec<TopicPartition> = self.partitions.keys().cloned().collect();
        for tp in tps {
            let Some(p) = self.partitions.get_mut(&tp) else {
                continue;
            };
            let expired = p.expire_locks(now, limit);
            let done: Vec<Transition> = expired.iter().map(|(_, t)| t.clone()).collect();
            self.record_completions(&tp, &done);
            out.extend(expired.into_iter().map(|(m, t)| (tp.clone(), m, t)));
        }
        out
    }

    /// Releases every record `member` holds in any partition (a close, a crash — its
    /// connection gone — a session ending), each Available again or archived at the delivery
    /// limit, the completions in the audit; what changed, by partition.
    pub fn release_everything_of(&mut self, member: &str) -> Vec<(TopicPartition, Transition)> {
        let limit = self.config.delivery_count_limit;
        let mut released = Vec::new();
        let tps: Vec<TopicPartition> = self.partitions.keys().cloned().collect();
        for tp in tps {
            let Some(p) = self.partitions.get_mut(&tp) else {
                continue;
            };
            let t = p.release_member(member, limit);
            self.record_completions(&tp, &t);
            released.extend(t.into_iter().map(|t| (tp.clone(), t)));
        }
        released
    }

    /// Completed deliveries into the group's audit.
    pub fn record_completions(&mut self, tp: &TopicPartition, done: &[Transition]) {
        let audit = self.audit.entry(tp.clone()).or_default();
        for t in done {
            if let Some(c) = t.completion {
                audit.completed(t.offset, c, t.delivery_count);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::share::config::ShareGroupConfig;
    use crate::share::DeliveryState;

    /// What a cluster showed: two members handed records, one accepting, the other's
    /// connection ending — the window and the audit as the lab's own rules make them.
    #[test]
    fn a_window_rebuilt_from_what_the_members_were_handed() {
        let mut g = ShareGroup::new("workers", ShareGroupConfig::default());
        let tp = TopicPartition::new("orders", 0);
        for o in 0..3 {
            assert_eq!(g.handed_out(&tp, o, "s1#1", 0, 0), 1);
        }
        for o in 3..6 {
            g.handed_out(&tp, o, "s2#1", 0, 0);
        }
        g.applied(&tp, 3);
        g.acknowledged("s2#1", &tp, &[3, 4, 5], AcknowledgeType::Accept)
            .expect("held");
        assert!(g
            .acknowledged("s2#1", &tp, &[0], AcknowledgeType::Accept)
            .is_err());
        g.applied(&tp, 0);
        g.release_everything_of("s1#1");
        let p = &g.partitions[&tp];
        assert_eq!((p.start_offset, p.count(DeliveryState::Available)), (0, 3));
        assert_eq!(g.handed_out(&tp, 0, "s2#1", 1_000, 0), 2, "the second delivery");
        g.applied(&tp, 0);
        let f = g.figures(|_| true);
        assert_eq!((f.duplicates, f.lost, f.accepted), (1, 2, 3));
        assert!(g.expire_locks(1_000 + 30_000).len() == 1, "the lock ran out");
    }
}
