//! Real clients in share groups: what the Kafka listener's ShareGroupHeartbeat, ShareFetch and
//! ShareAcknowledge do to the lab. The rules are the share partition's, exactly as for the lab's
//! own share consumers; only who decides differs — a real client's member joins and leaves when
//! the listener says (its heartbeats and session are wall time), and acquires and acknowledges
//! what its requests name. There is no application to model: a real client's processing is its
//! own, so the audit counts deliveries and completions, not duplicates applied.

use super::share::{list, outcome};
use super::Lab;
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::record::{Offset, TopicPartition};
use crate::share::{AcknowledgeType, AcquireMode, HeldRecord, ShareMember};

impl Lab {
    /// A real client's ShareGroupHeartbeat that joins (member epoch 0) or names its topics
    /// again: member `member` of share group `group`, its client's id `client`, subscribed to
    /// `topics`. The group is created with Kafka's default configs when it is new; the share
    /// assignor runs when the membership or a subscription changed.
    pub fn share_client_join(
        &mut self,
        group: &str,
        member: &str,
        client: &str,
        topics: &[String],
    ) -> Result<(), LabError> {
        crate::names::check_group_id(group)?;
        if member.is_empty() {
            return Err(LabError::InvalidArgument(
                "a share group member needs an id".into(),
            ));
        }
        if topics.is_empty() {
            return Err(LabError::InvalidArgument(format!(
                "member {member} of share group {group} subscribes to no topic"
            )));
        }
        self.check_group_type(group, true)?;
        if let Some(m) = self.share.groups.get(group).and_then(|g| g.member(member)) {
            if !m.client {
                return Err(LabError::InvalidArgument(format!(
                    "{member} is the lab's share consumer {} in share group {group}, not a client's member",
                    m.consumer
                )));
            }
            if m.topics == topics {
                return Ok(());
            }
        }
        let g = self.share_group_entry(group);
        let joined = match g.members.iter_mut().find(|m| m.id == member) {
            Some(m) => {
                m.topics = topics.to_vec();
                false
            }
            None => {
                g.members.push(ShareMember {
                    id: member.to_string(),
                    consumer: client.to_string(),
                    topics: topics.to_vec(),
                    client: true,
                    crashed_at: None,
                    assignment: Default::default(),
                });
                true
            }
        };
        self.share_reassign(group)?;
        let assigned = self
            .share_group(group)?
            .member(member)
            .map(|m| m.assignment.clone())
            .unwrap_or_default();
        self.say(
            EventKind::Group,
            format!(
                "{member} ({client}, a real client's ShareConsumer) {} share group {group}, subscribed to {}; the share assignor gives it {}",
                if joined { "joined" } else { "changed its subscription in" },
                topics.join(", "),
                list(assigned.iter())
            ),
        );
        Ok(())
    }

    /// A real client's member leaves share group `group` — its ShareGroupHeartbeat with member
    /// epoch −1, or its session timing out on the listener: every record it still holds is
    /// released (Available again, or Archived at the delivery limit), and the others' assignment
    /// is computed again.
    pub fn share_client_leave(&mut self, group: &str, member: &str, why: &str) -> Result<(), LabError> {
        let g = self.share_group(group)?;
        if !g.member(member).is_some_and(|m| m.client) {
            return Err(LabError::UnknownMember {
                group: group.to_string(),
                member: member.to_string(),
            });
        }
        let released = self.share_client_release(group, member)?;
        self.share_group_mut(group)?.members.retain(|m| m.id != member);
        self.share_reassign(group)?;
        self.say(
            EventKind::Group,
            format!(
                "{member} left share group {group} ({why}){}",
                if released.is_empty() {
                    String::new()
                } else {
                    format!("; the records it held were released: {}", outcome(&released))
                }
            ),
        );
        Ok(())
    }

    /// Releases every record a real client's member holds — its share session closed (a
    /// ShareAcknowledge or ShareFetch with epoch −1, its connection gone) or it left.
    pub fn share_client_release(
        &mut self,
        group: &str,
        member: &str,
    ) -> Result<Vec<(TopicPartition, crate::share::partition::Transition)>, LabError> {
        Ok(self.share_group_mut(group)?.release_everything_of(member))
    }

    /// A real client's ShareFetch of one partition: up to `max` records acquired for member
    /// `member` — Available ones of the in-flight window first, then records past its end — each
    /// locked for `share.record.lock.duration.ms`. Kafka does not check that the member is
    /// assigned the partition (only the member's acknowledgements are checked), and neither
    /// does the lab; the member must be in the group.
    pub fn share_client_fetch(
        &mut self,
        group: &str,
        member: &str,
        tp: &TopicPartition,
        max: usize,
    ) -> Result<Vec<HeldRecord>, LabError> {
        self.partition_log(tp)?;
        if self.share_group(group)?.member(member).is_none() {
            return Err(LabError::UnknownMember {
                group: group.to_string(),
                member: member.to_string(),
            });
        }
        if max == 0 {
            return Ok(Vec::new());
        }
        // ShareFetch v0 and v1 carry no acquire mode: Kafka acquires whole batches for them.
        let handed = self.acquire_from(group, member, tp, max, AcquireMode::BatchOptimized)?;
        if !handed.is_empty() {
            let again = handed.iter().filter(|h| h.delivery_count > 1).count();
            self.say(
                EventKind::Poll,
                format!(
                    "share fetch: {member} acquired {} record(s) of {tp}: {}{}",
                    handed.len(),
                    super::share::held_list(&handed),
                    if again > 0 {
                        format!(" — {again} of them delivered before (a redelivery)")
                    } else {
                        String::new()
                    }
                ),
            );
        }
        Ok(handed)
    }

    /// Whether a ShareFetch of `tp` by share group `group` would change anything: the group
    /// has not started reading the partition (its first fetch sets the SPSO), a record of its
    /// window is Available, or the log holds records past the window's end and the in-flight
    /// limit leaves room. The listener asks before it writes a `share-fetch` line, so that the
    /// empty fetches a client sends all day leave nothing in the history.
    pub fn share_acquirable(&self, group: &str, tp: &TopicPartition) -> bool {
        let (Ok(g), Ok(log)) = (self.share_group(group), self.partition_log(tp)) else {
            return false;
        };
        let Some(p) = g.partitions.get(tp) else {
            return true;
        };
        let mut a_record_past_the_window = false;
        if log.log_end_offset() > p.end_offset && p.room(g.config.partition_max_record_locks) > 0 {
            // Markers alone (a transaction's end) are nothing to acquire: a fetch would find no
            // record and leave the window where it is.
            log.read(p.end_offset, 64, &mut |r| a_record_past_the_window |= !r.control);
        }
        p.available().next().is_some() || a_record_past_the_window || log.log_start_offset() > p.start_offset
    }

    /// The records of `tp` member `member` holds now, with their delivery counts.
    pub fn share_held_by(&self, group: &str, member: &str, tp: &TopicPartition) -> Vec<(Offset, u16)> {
        let Some(p) = self.share.groups.get(group).and_then(|g| g.partitions.get(tp)) else {
            return Vec::new();
        };
        p.records()
            .filter(|(_, r)| r.lock.as_ref().is_some_and(|l| l.member == member))
            .map(|(o, r)| (o, r.delivery_count))
            .collect()
    }

    /// A real client's acknowledgements of one partition (in a ShareFetch or a
    /// ShareAcknowledge): each offset with its type. All or nothing for the partition, as Kafka
    /// applies them: a record the member does not hold (never acquired, its lock expired,
    /// another member's) is INVALID_RECORD_STATE and nothing of the partition changes.
    pub fn share_client_acknowledge(
        &mut self,
        group: &str,
        member: &str,
        tp: &TopicPartition,
        acks: &[(Offset, AcknowledgeType)],
    ) -> Result<(), LabError> {
        if acks.is_empty() {
            return Ok(());
        }
        let g = self.share_group(group)?;
        if g.member(member).is_none() {
            return Err(LabError::UnknownMember {
                group: group.to_string(),
                member: member.to_string(),
            });
        }
        let p = g.partitions.get(tp).ok_or_else(|| {
            LabError::InvalidRecordState(format!("share group {group} has no in-flight records of {tp}"))
        })?;
        // Records below the SPSO are delivery-complete already: Kafka ignores them.
        let start = p.start_offset;
        let acks: Vec<(Offset, AcknowledgeType)> =
            acks.iter().copied().filter(|(o, _)| *o >= start).collect();
        let offsets: Vec<Offset> = acks.iter().map(|(o, _)| *o).collect();
        p.check_held(member, &offsets)?;
        let g = self.share_group_mut(group)?;
        let limit = g.config.delivery_count_limit;
        let mut done = Vec::new();
        for ack in [
            AcknowledgeType::Accept,
            AcknowledgeType::Release,
            AcknowledgeType::Reject,
        ] {
            let these: Vec<Offset> = acks.iter().filter(|(_, a)| *a == ack).map(|(o, _)| *o).collect();
            if these.is_empty() {
                continue;
            }
            if let Some(p) = g.partitions.get_mut(tp) {
                let t = p.acknowledge(member, &these, ack, limit)?;
                g.record_completions(tp, &t);
                done.extend(t.into_iter().map(|t| (tp.clone(), t)));
            }
        }
        if !offsets.is_empty() {
            self.say(
                EventKind::Commit,
                format!(
                    "{member} acknowledged {} of {tp}: {}",
                    describe(&acks),
                    outcome(&done)
                ),
            );
        }
        Ok(())
    }
}

/// `3-5 accept, 6 reject`: runs of consecutive offsets with one type.
fn describe(acks: &[(Offset, AcknowledgeType)]) -> String {
    let mut runs: Vec<(Offset, Offset, AcknowledgeType)> = Vec::new();
    for &(o, a) in acks {
        match runs.last_mut() {
            Some((_, last, t)) if *last + 1 == o && *t == a => *last = o,
            _ => runs.push((o, o, a)),
        }
    }
    list(runs.iter().map(|(a, b, t)| {
        if a == b {
            format!("{a} {t}")
        } else {
            format!("{a}-{b} {t}")
        }
    }))
}
