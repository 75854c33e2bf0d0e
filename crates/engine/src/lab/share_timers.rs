//! A share consumer's life and the share group's timers: crash, close, restart, `commitSync()`;
//! acquisition locks expiring and crashed members' sessions timing out, on the lab's clock.

use super::share::{list, outcome};
use super::Lab;
use crate::clock::{format_duration, Millis};
use crate::consumer::ConsumerState;
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::share::AcknowledgementMode;

impl Lab {
    /// kill -9 of a share consumer: what it held and processed is gone with the process, and so
    /// is its connection — Kafka ends the share session with the connection and releases the
    /// records the member held at once (Available again, their delivery counted; Archived at the
    /// limit), as Apache Kafka 4.4 does (`scripts/share_consumers.py` shows it on both brokers).
    /// Its member stays in the group, silent, until `share.session.timeout.ms` passes. Whatever
    /// the dead process had processed is processed again by whoever acquires it next. (A
    /// consumer that is alive but slow keeps its records until their locks expire.)
    pub(crate) fn share_crash(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.running_share(name, "only a running consumer can crash")?;
        let (group, member) = (c.config.group.clone(), c.member_id());
        let held = c.held.len();
        let now = self.now();
        let c = self.share_consumer_mut(name)?;
        c.state = ConsumerState::Crashed { at: now };
        c.held.clear();
        let g = self.share_group_mut(&group)?;
        if let Some(m) = g.members.iter_mut().find(|m| m.id == member) {
            m.crashed_at = Some(now);
        }
        let session = g.config.session_timeout_ms;
        let released = g.release_everything_of(&member);
        self.say(
            EventKind::Crash,
            format!(
                "{member} crashed holding {held} record(s), unacknowledged: its connection closed with it, and the broker ended its share session and released them at once{}; the member stays in {group} until share.session.timeout.ms ({}) passes",
                if released.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", outcome(&released))
                },
                format_duration(session)
            ),
        );
        Ok(())
    }

    /// `close()`: the member leaves at once and every record it still holds is released —
    /// in implicit mode too, without accepting what was processed (Kafka's javadoc: close
    /// "releases any acquired records without acknowledgement"), so a clean shutdown commits
    /// first. Released records count their delivery; one at the limit is archived.
    pub(crate) fn share_close(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.running_share(name, "only a running consumer can close")?;
        let (group, member) = (c.config.group.clone(), c.member_id());
        let c = self.share_consumer_mut(name)?;
        c.state = ConsumerState::Closed;
        c.held.clear();
        let g = self.share_group_mut(&group)?;
        let released = g.release_everything_of(&member);
        g.members.retain(|m| m.id != member);
        self.share_reassign(&group)?;
        self.say(
            EventKind::Group,
            format!(
                "{member} closed and left share group {group}{}",
                if released.is_empty() {
                    String::new()
                } else {
                    format!("; the records it held were released: {}", outcome(&released))
                }
            ),
        );
        Ok(())
    }

    /// A new incarnation of a crashed or closed share consumer joins as a new member. A crashed
    /// incarnation's member stays beside it until its session times out.
    pub(crate) fn share_restart(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.share_consumer(name)?;
        if c.is_running() {
            return Err(LabError::WrongState {
                name: name.to_string(),
                state: c.state.label().to_string(),
                hint: "crash or close it first",
            });
        }
        let c = self.share_consumer_mut(name)?;
        c.incarnation += 1;
        c.state = ConsumerState::Running;
        c.held.clear();
        c.last_poll.clear();
        self.say(EventKind::Setup, format!("share consumer {name} starts again"));
        self.share_join(name)
    }

    /// `commitSync()` of a share consumer: in implicit mode it accepts everything held; in
    /// explicit mode the lab's `share-ack` has already committed each acknowledgement.
    pub(crate) fn share_commit(&mut self, name: &str) -> Result<(), LabError> {
        let c = self.running_share(name, "a dead consumer cannot commit")?;
        match c.config.acknowledgement_mode {
            AcknowledgementMode::Implicit => {
                self.implicit_accept(name, "commitSync()")?;
                // The commit landed: an observable effect.
                self.effect(name);
                Ok(())
            }
            AcknowledgementMode::Explicit => {
                let member = c.member_id();
                self.say(
                    EventKind::Commit,
                    format!("commitSync() of {member}: no acknowledgement pending (share-ack commits each one as it is made)"),
                );
                Ok(())
            }
        }
    }

    /// The earliest share-group timer: an acquisition lock expiring, or a crashed member's
    /// session.
    pub(crate) fn next_share_timer(&self) -> Option<Millis> {
        self.share
            .groups
            .values()
            .flat_map(|g| {
                let locks = g.partitions.values().filter_map(|p| p.next_lock_expiry());
                let sessions = g.members.iter().filter_map(|m| {
                    m.crashed_at
                        .map(|t| t.saturating_add(g.config.session_timeout_ms))
                });
                locks.chain(sessions).collect::<Vec<_>>()
            })
            .min()
    }

    /// Fires the share-group timers due at `now`: locks first (the records go back to
    /// Available, or are archived at the delivery limit), then sessions.
    pub(crate) fn fire_share_timers(&mut self, now: Millis) -> Result<(), LabError> {
        let names: Vec<String> = self.share.groups.keys().cloned().collect();
        for group in names {
            let g = self.share_group_mut(&group)?;
            let mut notes = Vec::new();
            // One note per partition whose locks ran out, in partition order.
            let mut expired = g.expire_locks(now).into_iter().peekable();
            while let Some((tp, member, first)) = expired.next() {
                let mut members = std::collections::BTreeSet::from([member]);
                let mut done = vec![(tp.clone(), first)];
                while let Some((_, m, t)) = expired.next_if(|(next, _, _)| *next == tp) {
                    members.insert(m);
                    done.push((tp.clone(), t));
                }
                notes.push(format!(
                    "acquisition lock of {} expired: {}",
                    list(members.iter()),
                    outcome(&done)
                ));
            }
            let session = g.config.session_timeout_ms;
            let gone: Vec<String> = g
                .members
                .iter()
                .filter(|m| m.crashed_at.is_some_and(|t| t.saturating_add(session) <= now))
                .map(|m| m.id.clone())
                .collect();
            g.members.retain(|m| !gone.contains(&m.id));
            if !gone.is_empty() {
                self.share_reassign(&group)?;
                notes.push(format!(
                    "share.session.timeout.ms ({}) passed without a heartbeat from {}: removed from share group {group}, its partitions reassigned",
                    format_duration(session),
                    list(gone.iter())
                ));
            }
            for n in notes {
                self.say(EventKind::Group, n);
            }
        }
        Ok(())
    }

    /// Every share partition follows its log start (after retention or DeleteRecords).
    pub(crate) fn share_follow_log_starts(&mut self) -> Result<(), LabError> {
        let pairs: Vec<(String, crate::record::TopicPartition)> = self
            .share
            .groups
            .iter()
            .flat_map(|(g, sg)| sg.partitions.keys().map(move |tp| (g.clone(), tp.clone())))
            .collect();
        for (g, tp) in pairs {
            self.follow_log_start_of(&g, &tp)?;
        }
        Ok(())
    }
}
