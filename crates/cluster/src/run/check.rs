//! What a run refuses before it creates anything: lines a cluster cannot run (or this runner
//! does not run yet), rebalances it does not mirror, writes to a reused topic, groups that
//! exist. Apart from the runner, since all of it is decided on the script alone (or one
//! question to the cluster), before the first line runs.

use super::error::RunError;
use super::figures;
use crate::admin::{Cluster, ClusterError};
use crate::names::Prefix;
use crate::preflight::{self, Unrunnable};
use offsetlab_scenario::command::{Command, ExpectKey};
use offsetlab_scenario::Script;
use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

/// Every line that cannot run on a cluster (with why), before anything is created.
pub fn check(script: &Script, prefix: &Prefix, reuse: &BTreeSet<String>) -> Result<(), RunError> {
    for topic in reuse {
        let declared = script
            .lines
            .iter()
            .any(|l| matches!(&l.command, Command::Topic(t) if &t.name == topic));
        if !declared {
            return Err(RunError::Reuse {
                topic: topic.clone(),
                why: format!("the scenario has no `topic {topic}` line"),
            });
        }
    }
    let mut refused = preflight::check(script);
    refused.extend(script.lines.iter().filter_map(|l| {
        not_yet(&l.command)
            .or_else(|| writes_to_reused(&l.command, reuse))
            .map(|why| Unrunnable {
                line: l.number,
                text: l.text.clone(),
                why,
            })
    }));
    // Several consumers in one group rebalance among themselves: mirrored for the eager
    // protocol, the consumer protocol (KIP-848) and a sink whose offsets are Kafka's or the
    // sink's own; a group that mixes protocols is not.
    let mut consumers_of: BTreeMap<String, Vec<&offsetlab_engine::consumer::ConsumerConfig>> =
        BTreeMap::new();
    for l in &script.lines {
        if let Command::Consumer(c) = &l.command {
            let group = consumers_of.entry(c.config.group.clone()).or_default();
            if !group.iter().any(|other| other.name == c.config.name) {
                group.push(&c.config);
            }
            if group.len() > 1 {
                if group
                    .iter()
                    .any(|other| other.group_protocol != c.config.group_protocol)
                {
                    refused.push(Unrunnable {
                        line: l.number,
                        text: l.text.clone(),
                        why: format!(
                            "group {} mixes the classic protocol and the consumer protocol (an upgrade, KIP-848): not run on a cluster yet (it runs on the model: drop --bootstrap-server)",
                            c.config.group
                        ),
                    });
                    continue;
                }
                if let Some(why) = group.iter().find_map(|c| rebalance_not_mirrored(c)) {
                    refused.push(Unrunnable {
                        line: l.number,
                        text: l.text.clone(),
                        why: format!("a second consumer in group {}: {why}", c.config.group),
                    });
                }
            }
        }
    }
    // A share consumer's `commit` (acknowledgements without a poll) and fault plans are the
    // model's only so far.
    let share_consumers: BTreeSet<&str> = script
        .lines
        .iter()
        .filter_map(|l| match &l.command {
            Command::ShareConsumer(c) => Some(c.config.name.as_str()),
            _ => None,
        })
        .collect();
    for l in &script.lines {
        let on_share = match &l.command {
            Command::Commit(c) => share_consumers.contains(c.consumer.as_str()).then_some("commit"),
            Command::Fault(f) => share_consumers.contains(f.consumer.as_str()).then_some("fault"),
            Command::Expect(e) => e
                .consumer
                .as_deref()
                .filter(|c| share_consumers.contains(c))
                .map(|_| "expect consumer=…"),
            _ => None,
        };
        if let Some(what) = on_share {
            refused.push(Unrunnable {
                line: l.number,
                text: l.text.clone(),
                why: format!("{what} on a share consumer is not run on a cluster yet (it runs on the model: drop --bootstrap-server)"),
            });
        }
    }
    refused.sort_by_key(|u| u.line);
    if !refused.is_empty() {
        return Err(RunError::Unrunnable(refused));
    }
    prefix.check(script)?;
    Ok(())
}

/// Why a rebalance between running members of a group with this consumer is not run on a
/// cluster yet: the cooperative protocol's partial revocations, and a kafka-tx application's
/// transaction aborted in its revoke hook, are not mirrored.
pub(super) fn rebalance_not_mirrored(c: &offsetlab_engine::consumer::ConsumerConfig) -> Option<String> {
    let later = |what: &str| {
        Some(format!(
            "rebalances between running members with {what} are not run on a cluster yet (it runs on the model: drop --bootstrap-server)"
        ))
    };
    if c.assignor == offsetlab_engine::consumer::Assignor::CooperativeSticky {
        return later("the cooperative protocol (assignor=cooperative-sticky)");
    }
    if c.is_transactional_producer() {
        return later("sink=kafka-tx");
    }
    None
}

/// Why a line would write to a reused topic, which a run never does: it takes it as it is.
pub(super) fn writes_to_reused(command: &Command, reuse: &BTreeSet<String>) -> Option<String> {
    let topic = match command {
        Command::Produce(p) => &p.topic,
        Command::Consumer(c) if c.config.is_transactional_producer() => c.config.output.as_ref()?,
        _ => return None,
    };
    reuse
        .contains(topic)
        .then(|| format!("topic {topic} is reused (--reuse-topic): a run writes only to topics it created"))
}

/// Lines a cluster could run that this runner does not run yet: said, never approximated.
pub(super) fn not_yet(command: &Command) -> Option<String> {
    let later = |what: &str| {
        Some(format!(
            "{what} is not run on a cluster yet (it runs on the model: drop --bootstrap-server)"
        ))
    };
    match command {
        Command::Abort(_) => later("abort"),
        Command::AlterOffsets(_) => later("alter-offsets"),
        Command::AlterTopic(_) => later("alter-topic"),
        Command::AddPartitions(_) => later("add-partitions"),
        Command::DeleteRecords(_) => later("delete-records"),
        Command::DeleteTopic(_) | Command::DeleteGroup(_) | Command::DeleteOffsets(_) => later("deleting"),
        Command::AlterShareOffsets(_) | Command::DeleteShareOffsets(_) => {
            later("moving a share group's start offsets")
        }
        Command::ShareConsumer(c) if c.config.acquire_mode == offsetlab_engine::share::AcquireMode::RecordLimit => {
            later("share-consumer acquire-mode=record-limit (librdkafka's share consumer has no share.acquire.mode)")
        }
        Command::Expect(e) if e.share_group.is_some() => e
            .checks
            .iter()
            .find(|(k, _)| *k == ExpectKey::GroupState)
            .and_then(|(k, _)| later(&format!("expect share-group=… {}", k.name()))),
        Command::Expect(e) => e
            .checks
            .iter()
            .find(|(k, _)| !figures::on_cluster(*k))
            .and_then(|(k, _)| later(&format!("expect {}", k.name()))),
        _ => None,
    }
}

/// The wall time a script's ticks add up to.
pub fn ticks(script: &Script) -> Duration {
    let ms: i64 = script
        .lines
        .iter()
        .filter_map(|l| match &l.command {
            Command::Tick(t) => Some(t.duration_ms.max(0)),
            _ => None,
        })
        .sum();
    Duration::from_millis(u64::try_from(ms).unwrap_or(0))
}

/// A run uses only groups of its own: one that exists on the cluster (any state but Dead) is
/// refused before the run touches it.
pub(super) fn refuse_existing_group(cluster: &Cluster, name: &str) -> Result<(), RunError> {
    if cluster.group_exists(name)? {
        return Err(ClusterError::Refused {
            what: format!("group {name:?}"),
            why: "it exists on the cluster: a run uses only groups of its own (choose another --prefix)"
                .into(),
        }
        .into());
    }
    Ok(())
}

/// Every group a script names (its consumers' and its offset resets').
pub(super) fn script_groups(script: &Script) -> BTreeSet<String> {
    script
        .lines
        .iter()
        .filter_map(|l| match &l.command {
            Command::Consumer(c) => Some(c.config.group.clone()),
            Command::ResetOffsets(r) => Some(r.group.clone()),
            Command::ShareConsumer(c) => Some(c.config.group.clone()),
            Command::AlterShareGroup(a) => Some(a.group.clone()),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(source: &str) -> Vec<(usize, String)> {
        let script = Script::parse(source).expect("parses");
        let prefix = Prefix::new("t-").expect("prefix");
        match check(&script, &prefix, &BTreeSet::new()) {
            Ok(()) => Vec::new(),
            Err(RunError::Unrunnable(u)) => u.into_iter().map(|u| (u.line, u.why)).collect(),
            Err(e) => panic!("{e}"),
        }
    }

    /// A share group runs on a cluster — but not what librdkafka's share consumer cannot do
    /// (`share.acquire.mode`), nor what the runner does not mirror yet.
    #[test]
    fn share_lines_run_but_what_the_client_cannot_do_is_refused() {
        let ok = "topic orders\nproduce orders count=3 batch=1\nalter-share-group sg share.auto.offset.reset=earliest\nshare-consumer s1 group=sg topic=orders ack=explicit max-poll=2\nshare-poll s1\nprocess s1 count=all\nshare-ack s1 accept\nexpect share-group=sg spso=2 acquired=0\ncrash s1\nrestart s1\nclose s1\n";
        assert_eq!(refused(ok), Vec::new());
        let bad = "topic orders\nshare-consumer s1 group=sg topic=orders acquire-mode=record-limit\ncommit s1\nexpect share-group=sg group-state=Stable\nalter-share-offsets sg offsets=orders:0=0\nexpect consumer=s1 polled=-\n";
        let lines: Vec<usize> = refused(bad).iter().map(|(l, _)| *l).collect();
        assert_eq!(lines, vec![2, 3, 4, 5, 6]);
        assert!(refused(bad)[0].1.contains("share.acquire.mode"));
    }

    /// Consumer-protocol members rebalance among themselves on a cluster; a group that mixes
    /// them with classic members (an upgrade) is refused, as are the figures no client tells.
    #[test]
    fn consumer_protocol_groups_run_and_mixed_ones_are_refused() {
        let ok = "topic orders partitions=4\nconsumer k1 group=g topic=orders group-protocol=consumer\nconsumer k2 group=g topic=orders group-protocol=consumer\nexpect group=g group-epoch=3 group-protocol=consumer group-state=Assigning\nexpect consumer=k2 member-epoch=2 assigned=- awaiting=-\n";
        assert_eq!(refused(ok), Vec::new());
        let mixed = "topic orders partitions=4\nconsumer c1 group=g topic=orders\nconsumer k1 group=g topic=orders group-protocol=consumer\nexpect consumer=k1 revoking=-\n";
        let got = refused(mixed);
        assert_eq!(got.iter().map(|(l, _)| *l).collect::<Vec<_>>(), vec![3, 4]);
        assert!(got[0].1.contains("mixes the classic protocol"), "{}", got[0].1);
        assert!(got[1].1.contains("revoking"), "{}", got[1].1);
    }
}
