//! The group coordinator's figures on a cluster: a group's protocol, epoch and state, and a
//! member's epoch, what it owns and what it awaits under Kafka 4's consumer protocol (KIP-848)
//! — read with ConsumerGroupDescribe (through [`RunOptions::describe_group`](super::RunOptions))
//! — a classic group's state (DescribeGroups) and the generation a classic consumer last
//! joined (`__consumer_offsets`' GroupMetadata records, through
//! [`RunOptions::stored_generations`](super::RunOptions)).
//!
//! These figures move on the cluster's own timers, not the runner's: the coordinator computes a
//! target assignment at most once a second (`group.consumer.assignment.interval.ms`) and each
//! member learns of it on its own heartbeats, every `consumer.heartbeat.interval.ms` from its
//! join. The model holds each state from one such instant to the next, so an `expect` of them
//! is checked until the cluster shows the model's figures or the model's next instant comes —
//! [`settle_until`] — and fails with what the cluster showed last.

use super::{ClusterRun, LineFailure};
use crate::consumer_group::ConsumerGroupDescription;
use offsetlab_scenario::command::{Expect, ExpectKey};
use std::time::{Duration, Instant};

/// The longest an `expect` of these figures waits: two of Kafka's default heartbeat intervals
/// (the model's next change may be a session or a poll interval minutes away).
const AT_REST: Duration = Duration::from_secs(10);

/// How often a figure is read again while it settles.
pub(super) const REREAD: Duration = Duration::from_millis(100);

/// Whether `key` is one of the coordinator's figures this file reads.
pub(super) fn is_epoch_key(key: ExpectKey) -> bool {
    matches!(
        key,
        ExpectKey::Generation
            | ExpectKey::GroupEpoch
            | ExpectKey::GroupProtocol
            | ExpectKey::GroupState
            | ExpectKey::MemberEpoch
            | ExpectKey::Assigned
            | ExpectKey::Awaiting
    )
}

/// Until when an `expect` line with `e`'s keys is read again while it does not hold: the wall
/// instant of the model's next change, less a margin, and [`AT_REST`] at most; `None` for lines
/// of other figures, which are read once.
pub(super) fn settle_until(e: &Expect, run: &ClusterRun) -> Option<Instant> {
    if !e.checks.iter().any(|(k, _)| is_epoch_key(*k)) {
        return None;
    }
    let now = Instant::now();
    let rest = now + AT_REST;
    Some(match run.model.lab.next_deadline() {
        Some(t) => {
            let at = run.clock.at(t);
            at.checked_sub(super::clock::MARGIN)
                .unwrap_or(at)
                .clamp(now, rest)
        }
        None => rest,
    })
}

/// One of the coordinator's figures on the cluster, spelled as the model's `expect` spells it.
pub(super) fn actual(e: &Expect, key: ExpectKey, run: &mut ClusterRun) -> Result<String, LineFailure> {
    let dash = || "-".to_string();
    if matches!(
        key,
        ExpectKey::GroupEpoch | ExpectKey::GroupProtocol | ExpectKey::GroupState
    ) {
        let group = match &e.group {
            Some(g) => g.clone(),
            None => super::figures::only(run.model.lab.groups().keys().cloned(), "group")?,
        };
        let described = run.describe_consumer_group(&group)?;
        return Ok(match (key, described) {
            (ExpectKey::GroupProtocol, Some(_)) => "consumer".into(),
            (ExpectKey::GroupProtocol, None) => "classic".into(),
            (ExpectKey::GroupEpoch, Some(d)) => d.group_epoch.to_string(),
            (ExpectKey::GroupEpoch, None) => dash(),
            (_, Some(d)) => d.state,
            (_, None) => run.cluster.group_state(&run.opts.prefix.on_cluster(&group))?,
        });
    }
    let name = match &e.consumer {
        Some(c) => c.clone(),
        None => super::figures::only(run.model.lab.consumers().keys().cloned(), "consumer")?,
    };
    let config = run
        .app
        .consumers
        .get(&name)
        .map(|c| c.config.clone())
        .ok_or_else(|| LineFailure::Other(format!("no consumer {name} on the cluster")))?;
    let consumer_protocol = config.group_protocol == offsetlab_engine::group::GroupProtocol::Consumer;
    if key == ExpectKey::Generation && !consumer_protocol {
        let stored = run.stored_generations(&config.group)?;
        return Ok(crate::consumer_group::last_joined(&stored, &name)
            .unwrap_or(0)
            .to_string());
    }
    // A consumer that is not running has no member in the model: its dead incarnation's
    // member, still in the group until its session runs out, is not its.
    let running = run.app.consumers.get(&name).is_some_and(|c| c.is_running());
    if !running {
        return Ok(dash());
    }
    let Some(d) = run.describe_consumer_group(&config.group)? else {
        return Ok(dash());
    };
    let member = member_of(&d, &name)?;
    let Some(m) = member else {
        return Ok(dash());
    };
    let topic = run.opts.prefix.on_cluster(&config.topic);
    let list = |ps: Vec<i32>| {
        if ps.is_empty() {
            dash()
        } else {
            ps.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
        }
    };
    Ok(match key {
        // A consumer-protocol member's generation is its member epoch, as in the model.
        ExpectKey::MemberEpoch | ExpectKey::Generation => m.member_epoch.to_string(),
        ExpectKey::Assigned => list(m.assigned_of(&topic)),
        _ => list(m.awaiting(&topic)),
    })
}

/// What the cluster must show for `key` where the line expects `expected` (which the model's
/// figure is: the model ran the line first). The same, except `assigned`: Kafka's
/// ConsumerGroupDescribe lists the partitions a member is still revoking among those it owns,
/// so the cluster must show the model's assigned and revoking partitions together — no outside
/// reader can tell the two apart.
pub(super) fn expected_on_cluster(e: &Expect, key: ExpectKey, expected: &str, run: &ClusterRun) -> String {
    if key != ExpectKey::Assigned {
        return expected.to_string();
    }
    let lab = &run.model.lab;
    let Some(name) = e
        .consumer
        .clone()
        .or_else(|| super::figures::only(lab.consumers().keys().cloned(), "consumer").ok())
    else {
        return expected.to_string();
    };
    let Ok(c) = lab.consumer(&name) else {
        return expected.to_string();
    };
    let revoking: Vec<i32> = lab
        .group(&c.config.group)
        .ok()
        .and_then(|g| g.consumer.as_ref())
        .and_then(|cg| cg.members.get(&c.member_id()))
        .map(|m| {
            m.pending_revocation
                .iter()
                .filter(|tp| tp.topic == c.config.topic)
                .map(|tp| tp.partition)
                .collect()
        })
        .unwrap_or_default();
    if revoking.is_empty() {
        return expected.to_string();
    }
    let mut all: Vec<i32> = expected
        .split(',')
        .filter_map(|p| p.trim().parse().ok())
        .chain(revoking)
        .collect();
    all.sort_unstable();
    all.dedup();
    all.iter().map(ToString::to_string).collect::<Vec<_>>().join(",")
}

/// The member whose `client.id` is the scenario consumer's name. Two (an earlier incarnation
/// killed, whose session has not run out yet) cannot be told apart from outside: said.
fn member_of<'a>(
    d: &'a ConsumerGroupDescription,
    name: &str,
) -> Result<Option<&'a crate::consumer_group::MemberDescription>, LineFailure> {
    let mut found = d.members.iter().filter(|m| m.client_id == name);
    let first = found.next();
    if found.next().is_some() {
        return Err(LineFailure::Other(format!(
            "expect: the cluster's group has several members with client.id {name} (an earlier incarnation whose session has not run out): which is the model's cannot be told from outside"
        )));
    }
    Ok(first)
}

impl ClusterRun {
    /// The generations `group` (the scenario's name) stored in the cluster's
    /// `__consumer_offsets`, oldest first.
    pub(super) fn stored_generations(
        &self,
        group: &str,
    ) -> Result<Vec<crate::consumer_group::StoredGeneration>, LineFailure> {
        let Some(read) = self.opts.stored_generations else {
            return Err(LineFailure::Other(
                "this run cannot read a group's generations off the cluster (no __consumer_offsets reader was given to it)".into(),
            ));
        };
        let on_cluster = self.opts.prefix.on_cluster(group);
        read(&self.opts.bootstrap, &self.opts.extra, &on_cluster).map_err(|e| {
            LineFailure::Other(format!(
                "the generations of {on_cluster} in __consumer_offsets: {e}"
            ))
        })
    }

    /// ConsumerGroupDescribe of `group` (the scenario's name) on the cluster: `None` for a
    /// classic group or none.
    pub(super) fn describe_consumer_group(
        &self,
        group: &str,
    ) -> Result<Option<ConsumerGroupDescription>, LineFailure> {
        let Some(describe) = self.opts.describe_group else {
            return Err(LineFailure::Other(
                "this run cannot ask the cluster for a consumer group's epochs (no ConsumerGroupDescribe client was given to it)".into(),
            ));
        };
        let on_cluster = self.opts.prefix.on_cluster(group);
        describe(&self.opts.bootstrap, &self.opts.extra, &on_cluster)
            .map_err(|e| LineFailure::Other(format!("ConsumerGroupDescribe of {on_cluster}: {e}")))
    }
}
