//! One line run for real, after the model ran it: what the model held before it (`Before`),
//! the line on the cluster (`real`), and the checks that what the cluster handed out is the
//! model's. The runner (`mod.rs`) drives lines and their waits; this file is what a line does.

use super::error::LineFailure;
use super::{app, figures, ClusterRun};
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::Command;
use offsetlab_scenario::script::Line;
use std::collections::{BTreeMap, BTreeSet};

/// What the model held before a line, that the line's real run needs.
#[derive(Debug, Default)]
pub(super) struct Before {
    /// Per partition: a `produce` line's log ends (what it sends is the model's records from
    /// there), a `seek` line's positions (what it jumps over forward is skipped on purpose), a
    /// `poll` line's positions of the partitions its consumer held.
    pub(super) offsets: BTreeMap<i32, i64>,
    /// A `poll` line rejoins a rebalance (eager) with partitions held: its revoke hook's
    /// commit comes first, and every partition and polled record is given up.
    pub(super) rejoins: bool,
    /// A `poll` line's consumer was removed from its group while it was away (it did not
    /// poll within `max.poll.interval.ms`): its partitions are lost and its polled records
    /// dropped, nothing committed, and it joins again inside this poll.
    pub(super) lost: bool,
    /// A `poll` line's consumer's records in flight (partition, offset), in order.
    pub(super) in_flight: Vec<(i32, i64)>,
}

impl ClusterRun {
    /// What the model held before the line, that the line's real run needs.
    pub(super) fn before(&self, line: &Line) -> Before {
        let lab = &self.model.lab;
        let positions = |name: &str| {
            lab.consumer(name).map_or_else(
                |_| BTreeMap::new(),
                |c| {
                    c.assignment
                        .iter()
                        .filter(|(tp, _)| tp.topic == c.config.topic)
                        .map(|(tp, f)| (tp.partition, f.position))
                        .collect()
                },
            )
        };
        match &line.command {
            Command::Seek(s) => Before {
                offsets: positions(&s.consumer),
                ..Before::default()
            },
            Command::Poll(p) => {
                let offsets = positions(&p.consumer);
                // Eager: a member the group's rebalance waits for, holding partitions, gives
                // them all up inside this poll (its revoke hook first).
                let rejoins = !offsets.is_empty()
                    && lab.consumer(&p.consumer).is_ok_and(|c| {
                        c.is_running()
                            && lab
                                .groups()
                                .get(&c.config.group)
                                .is_some_and(|g| g.waiting_for().iter().any(|m| m.id == c.member_id()))
                    });
                let in_flight = lab
                    .consumer(&p.consumer)
                    .map(|c| {
                        c.in_flight
                            .iter()
                            .map(|f| (f.tp.partition, f.record.offset))
                            .collect()
                    })
                    .unwrap_or_default();
                // Removed while it was away (max.poll.interval.ms): its partitions are lost,
                // not revoked — nothing committed — and its polled records dropped.
                let lost = lab.consumer(&p.consumer).is_ok_and(|c| {
                    c.is_running()
                        && lab
                            .groups()
                            .get(&c.config.group)
                            .is_some_and(|g| !g.is_member(&c.member_id()))
                });
                Before {
                    offsets,
                    rejoins: rejoins && !lost,
                    lost,
                    in_flight,
                }
            }
            Command::Produce(p) => {
                let count = lab.topic(&p.topic).map_or(0, |t| t.partitions.len() as i32);
                Before {
                    offsets: (0..count)
                        .filter_map(|i| {
                            lab.partition_log(&TopicPartition::new(p.topic.clone(), i))
                                .ok()
                                .map(|log| (i, log.log_end_offset()))
                        })
                        .collect(),
                    ..Before::default()
                }
            }
            _ => Before::default(),
        }
    }

    /// The records the model's poll handed out (partition, offset), in its batch's order: what
    /// its consumer has in flight after the line and did not before (an eager rejoin dropped
    /// everything it had).
    pub(super) fn model_batch(&self, name: &str, before: &Before) -> Vec<(i32, i64)> {
        let Ok(c) = self.model.lab.consumer(name) else {
            return Vec::new();
        };
        let had: BTreeSet<(i32, i64)> = if before.rejoins || before.lost {
            BTreeSet::new()
        } else {
            before.in_flight.iter().copied().collect()
        };
        c.in_flight
            .iter()
            .map(|f| (f.tp.partition, f.record.offset))
            .filter(|r| !had.contains(r))
            .collect()
    }

    /// Why each partition the model's consumer holds after a poll came to it, for those it
    /// did not hold before (all of them after an eager rejoin).
    pub(super) fn taken_over(
        &self,
        name: &str,
        before: &Before,
    ) -> Vec<(i32, offsetlab_engine::delivery::DeliveryReason)> {
        let Ok(c) = self.model.lab.consumer(name) else {
            return Vec::new();
        };
        c.assignment
            .iter()
            .filter(|(tp, _)| tp.topic == c.config.topic)
            .filter(|(tp, _)| before.rejoins || before.lost || !before.offsets.contains_key(&tp.partition))
            .map(|(tp, f)| (tp.partition, f.origin.repeat_reason()))
            .collect()
    }

    /// The line, for real.
    pub(super) fn real(&mut self, line: &Line, t: i64, before: &Before) -> Result<String, LineFailure> {
        Ok(match &line.command {
            Command::Topic(topic) if self.opts.reuse.contains(&topic.name) => {
                self.reuse_topic(&topic.name)?
            }
            Command::Topic(topic) => self.create_topic(topic)?,
            Command::Produce(p) => self.produce(p, &before.offsets)?,
            Command::Consumer(c) => self.start(&c.config.name, t, Some(&c.config))?,
            Command::AlterShareGroup(a) => self.alter_share_group(a)?,
            Command::ShareConsumer(c) => self.start_share(&c.config.name)?,
            Command::Restart(r) if self.model.lab.is_share_consumer(&r.consumer) => {
                self.start_share(&r.consumer)?
            }
            Command::SharePoll(p) => self.share_poll(&p.consumer)?,
            Command::ShareAck(a) => self.share_ack(a)?,
            Command::Process(p) if self.model.lab.is_share_consumer(&p.consumer) => {
                self.share_process(&p.consumer)?
            }
            Command::Crash(c) if self.model.lab.is_share_consumer(&c.consumer) => {
                self.share_crash(&c.consumer)?
            }
            Command::Close(c) if self.model.lab.is_share_consumer(&c.consumer) => {
                self.share_close(&c.consumer)?
            }
            Command::Expect(e) if e.share_group.is_some() => {
                let group = e.share_group.clone().unwrap_or_default();
                let failures = self.share_expect(e, &group);
                if !failures.is_empty() {
                    return Err(LineFailure::Expectation(failures.join("; ")));
                }
                "holds on the cluster".to_string()
            }
            Command::Restart(r) => self.start(&r.consumer, t, None)?,
            Command::Poll(p) => self.poll(&p.consumer, t, before)?,
            Command::Process(p) => {
                let (n, crashed) = self.app.process(&p.consumer, p.count, t)?;
                format!("{n} record(s) written to the sink{}", crash_note(crashed))
            }
            Command::Commit(c) => {
                let crashed = self.app.commit_now(&c.consumer)?;
                format!("commitSync(){}", crash_note(crashed))
            }
            Command::Crash(c) => {
                self.app.crash(&c.consumer)?;
                format!("SIGKILL of {}'s process", c.consumer)
            }
            Command::Close(c) => {
                let crashed = self.app.close(&c.consumer)?;
                if crashed {
                    format!("{} was closing{}", c.consumer, crash_note(true))
                } else {
                    format!("{} closed (LeaveGroup sent)", c.consumer)
                }
            }
            Command::Fault(f) => {
                self.app.arm_fault(&f.consumer, f.after)?;
                format!(
                    "{} will be killed right after its next {} effect(s)",
                    f.consumer, f.after
                )
            }
            Command::Tick(tick) => format!("{} ms of wall time before the next line", tick.duration_ms),
            Command::Seek(s) => self.seek(s, &before.offsets)?,
            Command::ResetOffsets(r) => self.reset(r)?,
            Command::Expect(e) => {
                let failures = figures::check(e, self)?;
                if !failures.is_empty() {
                    return Err(LineFailure::Expectation(failures.join("; ")));
                }
                "holds on the cluster".to_string()
            }
            other => {
                return Err(LineFailure::Other(format!(
                    "{} does not run on a cluster",
                    other.to_string().split_whitespace().next().unwrap_or("this line")
                )))
            }
        })
    }

    /// `poll NAME`: the real consumer polls as the model's did (its assignment, its batch, a
    /// rejoin or a loss first), and hands out what the model's handed out — no fewer, and
    /// each the model's record.
    fn poll(&mut self, name: &str, t: i64, before: &Before) -> Result<String, LineFailure> {
        let assigned = self.model_assignment(name);
        // Partitions held before and not after, where the consumer keeps the others: the
        // consumer protocol's revocation, inside this poll.
        let revoked = match &assigned {
            Some(after) if !before.rejoins && !before.lost => before
                .offsets
                .keys()
                .filter(|p| !after.contains(p))
                .copied()
                .collect(),
            _ => Vec::new(),
        };
        let plan = app::PollPlan {
            batch: assigned.as_ref().map(|_| self.model_batch(name, before)),
            assigned,
            rejoins: before.rejoins,
            revoked,
            lost: before.lost,
        };
        let wanted = plan.batch.clone();
        let (n, crashed) = self.app.poll(name, t, plan)?;
        if !crashed {
            self.app.took_over(name, &self.taken_over(name, before))?;
        }
        self.check_handed_out(name)?;
        if let Some(wanted) = wanted.filter(|w| !crashed && n < w.len()) {
            return Err(LineFailure::Other(self.short_poll(name, n, &wanted)));
        }
        Ok(format!(
            "the cluster handed {n} record(s) to {name}{}",
            crash_note(crashed)
        ))
    }

    /// Why a poll that handed out fewer records than the model's stops the run: what each
    /// partition that fell short holds on the cluster — a log that starts past the records the
    /// model handed out was cut by retention or DeleteRecords; one that ends before them never
    /// got them. Every figure after such a poll would differ, so the run says so here rather
    /// than at a later line.
    pub(super) fn short_poll(&mut self, name: &str, n: usize, wanted: &[(i32, i64)]) -> String {
        let got: BTreeSet<(i32, i64)> = self
            .app
            .consumers
            .get(name)
            .map(|c| c.in_flight_records().map(|r| (r.partition, r.offset)).collect())
            .unwrap_or_default();
        let mut missing: BTreeMap<i32, (i64, i64)> = BTreeMap::new();
        for &(p, o) in wanted.iter().filter(|r| !got.contains(r)) {
            let e = missing.entry(p).or_insert((o, o));
            e.0 = e.0.min(o);
            e.1 = e.1.max(o);
        }
        let topic = self
            .app
            .consumers
            .get(name)
            .map(|c| c.config.topic.clone())
            .unwrap_or_default();
        let cluster_topic = self.opts.prefix.on_cluster(&topic);
        let asker = self.opts.prefix.on_cluster("runner");
        let mut why = Vec::new();
        for (p, (first, last)) in missing {
            let held = match self.inspector.watermarks(&asker, &cluster_topic, p) {
                Ok((low, _)) if low > first => format!(
                    "its log on the cluster starts at offset {low}: the records before it were deleted (retention, or DeleteRecords by another client), the model still holds them"
                ),
                Ok((_, high)) if high <= last => {
                    format!("its log on the cluster ends at offset {high}")
                }
                Ok((low, high)) => format!(
                    "the cluster holds offsets {low}..{high} but did not hand them to {name} within {:?}",
                    app::POLL_TIMEOUT
                ),
                Err(e) => format!("its offsets could not be read: {e}"),
            };
            why.push(format!("{topic}-{p} offsets {first}..={last}: {why}", why = held));
        }
        format!(
            "the cluster handed {n} record(s) to {name} where the model's poll handed out {}; missing {}",
            wanted.len(),
            why.join("; ")
        )
    }

    /// Every record the cluster handed out is the model's at that offset (same key and value):
    /// otherwise the audit, which reads the model's log, would count other records.
    pub(super) fn check_handed_out(&self, name: &str) -> Result<(), LineFailure> {
        let Some(c) = self.app.consumers.get(name) else {
            return Ok(());
        };
        for r in c.in_flight_records() {
            let tp = TopicPartition::new(c.config.topic.clone(), r.partition);
            self.check_models_record(&tp, r.offset, r.key.as_ref(), r.value.as_ref())?;
        }
        Ok(())
    }

    /// The record the cluster handed out at `offset` of `tp` is the model's there (same key
    /// and value): otherwise the audit, which reads the model's log, would count other records.
    pub(super) fn check_models_record(
        &self,
        tp: &TopicPartition,
        offset: i64,
        key: Option<&offsetlab_records::RecordBytes>,
        value: Option<&offsetlab_records::RecordBytes>,
    ) -> Result<(), LineFailure> {
        let log = self
            .model
            .lab
            .partition_log(tp)
            .map_err(|e| LineFailure::Other(e.to_string()))?;
        let mut same = None;
        log.read(offset, 1, &mut |m| {
            if m.offset == offset {
                same = Some(m.key == key.map(|k| k.as_bytes()) && m.value == value.map(|v| v.as_bytes()));
            }
        });
        if same != Some(true) {
            return Err(LineFailure::Other(format!(
                "the cluster handed out {tp}@{offset} that is not the model's record there: was the topic written by another client?"
            )));
        }
        Ok(())
    }
}

pub(super) fn crash_note(crashed: bool) -> &'static str {
    if crashed {
        "; then its fault plan killed it (SIGKILL)"
    } else {
        ""
    }
}
