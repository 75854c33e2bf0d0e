//! The figures of a run, read from the cluster: committed offsets from the group coordinator
//! (OffsetFetch), log start and end from the partition leader (ListOffsets), and the audit of
//! what the real consumers handed to the application — one definition with the model's
//! (DESIGN.md, "Audit"), computed by the engine's own [`GroupAudit`](offsetlab_engine::audit::GroupAudit).
//!
//! Which partitions a group's figures cover is the model's answer (the group's view), so both
//! sets of figures name the same things and can be compared one by one.

use super::{ClusterRun, LineFailure};
use offsetlab_engine::audit::{AuditFigures, Progress};
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::strategy::AutoOffsetReset;
use offsetlab_engine::Lab;
use offsetlab_scenario::command::{Expect, ExpectKey};
use serde::Serialize;
use std::collections::BTreeSet;

/// One partition of a group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PartitionFigures {
    pub topic: String,
    pub partition: i32,
    pub committed: Option<i64>,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    pub lag: Option<i64>,
    pub audit: AuditFigures,
    /// The lost offsets, as half-open ranges.
    pub lost_ranges: Vec<(i64, i64)>,
}

/// A group's figures.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct GroupFigures {
    pub group: String,
    pub sink_rows: u64,
    pub distinct_keys: u64,
    pub duplicate_rows: u64,
    pub partitions: Vec<PartitionFigures>,
}

impl GroupFigures {
    fn sum(&self, f: impl Fn(&AuditFigures) -> u64) -> u64 {
        self.partitions.iter().map(|p| f(&p.audit)).sum()
    }

    /// Every figure by name (a partition's as `committed[orders-0]`), in a fixed order.
    pub fn named(&self) -> Vec<(String, String)> {
        let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
        let mut out = Vec::new();
        for p in &self.partitions {
            let tp = format!("{}-{}", p.topic, p.partition);
            out.push((format!("committed[{tp}]"), opt(p.committed)));
            out.push((format!("log-end-offset[{tp}]"), p.log_end_offset.to_string()));
            out.push((format!("lag[{tp}]"), opt(p.lag)));
        }
        let totals = [
            ("lost", self.sum(|a| a.lost)),
            ("duplicates", self.sum(|a| a.duplicates)),
            ("redeliveries", self.sum(|a| a.redeliveries)),
            ("crash-redeliveries", self.sum(|a| a.crash_redeliveries)),
            ("replays", self.sum(|a| a.replays)),
            ("skipped", self.sum(|a| a.skipped)),
            ("deliveries", self.sum(|a| a.deliveries)),
            ("sink-rows", self.sink_rows),
            ("distinct-keys", self.distinct_keys),
            ("duplicate-rows", self.duplicate_rows),
        ];
        out.extend(totals.map(|(k, v)| (k.to_string(), v.to_string())));
        out
    }
}

/// The expect keys a run can check on a cluster: exactly those [`actual`] reads off it. A
/// scenario with any other is refused before it starts, not at its `expect` line half-way
/// through a run (a transaction's last stable offset and aborted reads, a topic's metadata, a
/// member's partitions being revoked and share groups are the model's to tell).
pub fn on_cluster(key: ExpectKey) -> bool {
    matches!(
        key,
        ExpectKey::State
            | ExpectKey::InFlight
            | ExpectKey::Polled
            | ExpectKey::Position
            | ExpectKey::SinkRows
            | ExpectKey::DistinctKeys
            | ExpectKey::DuplicateRows
            | ExpectKey::Lost
            | ExpectKey::Duplicates
            | ExpectKey::Redeliveries
            | ExpectKey::CrashRedeliveries
            | ExpectKey::Replays
            | ExpectKey::Skipped
            | ExpectKey::Deliveries
            | ExpectKey::Lag
            | ExpectKey::Committed
            | ExpectKey::LogEndOffset
            | ExpectKey::LogStartOffset
    ) || super::epochs::is_epoch_key(key)
}

/// The groups whose figures a run reports: those its consumers read with.
fn reported(run: &ClusterRun) -> Vec<String> {
    run.app.groups.keys().cloned().collect()
}

/// The model's figures of the groups the run reports.
pub fn model(run: &ClusterRun) -> Vec<GroupFigures> {
    reported(run)
        .iter()
        .filter_map(|g| model_group(&run.model.lab, g))
        .collect()
}

fn model_group(lab: &Lab, group: &str) -> Option<GroupFigures> {
    let view = lab.group_view(group).ok()?;
    Some(GroupFigures {
        group: group.to_string(),
        sink_rows: view.sink.rows,
        distinct_keys: view.sink.distinct_keys,
        duplicate_rows: view.sink.duplicate_rows,
        partitions: view
            .partitions
            .iter()
            .map(|p| PartitionFigures {
                topic: p.topic.clone(),
                partition: p.partition,
                committed: p.committed.or(p.kafka_committed),
                log_start_offset: p.log_start_offset,
                log_end_offset: p.log_end_offset,
                lag: p.lag,
                audit: p.audit,
                lost_ranges: p.lost_ranges.clone(),
            })
            .collect(),
    })
}

/// The cluster's figures of the groups the run reports.
pub(crate) fn real(run: &mut ClusterRun) -> Result<Vec<GroupFigures>, LineFailure> {
    reported(run).iter().map(|g| real_group(run, g)).collect()
}

fn real_group(run: &mut ClusterRun, group: &str) -> Result<GroupFigures, LineFailure> {
    let parts: Vec<TopicPartition> = run
        .model
        .lab
        .group_view(group)
        .map(|v| {
            v.partitions
                .iter()
                .map(|p| TopicPartition::new(p.topic.clone(), p.partition))
                .collect()
        })
        .unwrap_or_default();
    let on_cluster = run.prefix().on_cluster(group);
    let topics: BTreeSet<String> = parts.iter().map(|tp| tp.topic.clone()).collect();
    let mut partitions = Vec::new();
    for topic in topics {
        let cluster_topic = run.prefix().on_cluster(&topic);
        let ps: Vec<i32> = parts
            .iter()
            .filter(|tp| tp.topic == topic)
            .map(|tp| tp.partition)
            .collect();
        let committed = run.inspector().committed(&on_cluster, &cluster_topic, &ps)?;
        for &p in &ps {
            let (low, high) = run.inspector().watermarks(&on_cluster, &cluster_topic, p)?;
            let tp = TopicPartition::new(topic.clone(), p);
            // A transactional sink holds the group's offsets: they are its committed ones.
            let in_sink = match run.app.groups.get(group).and_then(|g| g.sink.as_ref()) {
                Some(sink) if sink.kind() == offsetlab_engine::sink::SinkKind::Transactional => Some(
                    sink.stored_offset(&tp)
                        .map_err(|e| LineFailure::Other(e.to_string()))?,
                ),
                _ => None,
            };
            let committed = match in_sink {
                Some(Some(o)) => Some(o),
                _ => committed.get(&p).copied().flatten(),
            };
            let live_next = run.app.live_next(group, &tp);
            let kept = committed.filter(|&o| o >= 0);
            let resume = match (kept, live_next) {
                (Some(c), Some(l)) => Some(c.min(l)),
                (c, _) => c,
            };
            let hidden = BTreeSet::new();
            let (audit, lost_ranges) = match (run.app.groups.get(group), run.model.lab.partition_log(&tp)) {
                (Some(g), Ok(log)) => {
                    let progress = Progress {
                        resume,
                        log,
                        hidden: &hidden,
                    };
                    (g.audit.figures(&tp, progress), g.audit.lost_ranges(&tp, progress))
                }
                _ => (AuditFigures::default(), Vec::new()),
            };
            partitions.push(PartitionFigures {
                topic: topic.clone(),
                partition: p,
                committed,
                log_start_offset: low,
                log_end_offset: high,
                lag: kept.map(|c| high - c),
                audit,
                lost_ranges,
            });
        }
    }
    let stats = run
        .app
        .groups
        .get(group)
        .and_then(|g| g.sink.as_ref())
        .map(|s| s.stats())
        .transpose()
        .map_err(|e| LineFailure::Other(e.to_string()))?
        .unwrap_or_default();
    Ok(GroupFigures {
        group: group.to_string(),
        sink_rows: stats.rows,
        distinct_keys: stats.distinct_keys,
        duplicate_rows: stats.duplicate_rows,
        partitions,
    })
}

/// Each figure that differs between the model and the cluster, named: `group g: lost: model
/// 3, cluster 2`.
pub fn differences(model: &[GroupFigures], real: &[GroupFigures]) -> Vec<String> {
    let mut out = Vec::new();
    for r in real {
        let Some(m) = model.iter().find(|m| m.group == r.group) else {
            out.push(format!("group {}: the model has no such group", r.group));
            continue;
        };
        let (mn, rn) = (m.named(), r.named());
        for ((name, mv), (_, rv)) in mn.iter().zip(rn.iter()) {
            if mv != rv {
                out.push(format!("group {}: {name}: model {mv}, cluster {rv}", r.group));
            }
        }
        if mn.len() != rn.len() {
            out.push(format!(
                "group {}: the model and the cluster report different partitions",
                r.group
            ));
        }
    }
    out
}

/// Where a real consumer fetches `partition` from next, as the Java client's `position()`
/// answers: past the last record it handed out or where a seek put it; before it read any,
/// where it starts — the sink's offset (a transactional sink), the group's committed offset on
/// the cluster, or `auto.offset.reset` against the partition's log start or end. `None` for a
/// consumer that is not running, or `reset=none` with nothing committed.
fn position(run: &mut ClusterRun, name: &str, partition: Option<i32>) -> Result<Option<i64>, LineFailure> {
    let Some(c) = run.app.consumers.get(name) else {
        return Err(LineFailure::Other(format!("no consumer {name} on the cluster")));
    };
    if !c.is_running() {
        return Ok(None);
    }
    let config = c.config.clone();
    let p = match partition {
        Some(p) => p,
        None if run.partitions(&config.topic) == 1 => 0,
        None => {
            return Err(LineFailure::Other(format!(
                "expect: {name}'s topic has several partitions: add partition=P"
            )))
        }
    };
    if let Some(at) = c.position(p) {
        return Ok(Some(at));
    }
    let tp = TopicPartition::new(config.topic.clone(), p);
    if !config.commits_to_kafka() {
        let sink = run.app.groups.get(&config.group).and_then(|g| g.sink.as_ref());
        if let Some(stored) = sink
            .map(|s| s.stored_offset(&tp))
            .transpose()
            .map_err(|e| LineFailure::Other(e.to_string()))?
            .flatten()
        {
            return Ok(Some(stored));
        }
    }
    let group = run.opts.prefix.on_cluster(&config.group);
    let topic = run.opts.prefix.on_cluster(&config.topic);
    if let Some(committed) = run
        .inspector()
        .committed(&group, &topic, &[p])?
        .get(&p)
        .copied()
        .flatten()
    {
        return Ok(Some(committed));
    }
    let (low, high) = run.inspector().watermarks(&group, &topic, p)?;
    Ok(match config.auto_offset_reset {
        AutoOffsetReset::Earliest => Some(low),
        AutoOffsetReset::Latest => Some(high),
        AutoOffsetReset::None => None,
    })
}

/// The failures of an `expect` line against the cluster's figures (empty: it holds). A line
/// of the consumer protocol's figures, which move on the cluster's own timers, is read again
/// until it holds or the model's next change is due ([`super::epochs`]).
pub(crate) fn check(e: &Expect, run: &mut ClusterRun) -> Result<Vec<String>, LineFailure> {
    let settle = super::epochs::settle_until(e, run);
    let time_left = |until: std::time::Instant| std::time::Instant::now() + super::epochs::REREAD < until;
    loop {
        let mut failures = Vec::new();
        for (key, expected) in &e.checks {
            let actual = match actual(e, *key, run) {
                Ok(a) => a,
                // A coordinator being moved or loaded, a dead incarnation's member not gone
                // yet: read again while the line may still hold.
                Err(LineFailure::Other(why)) if settle.is_some_and(time_left) => {
                    failures.push(why);
                    break;
                }
                Err(other) => return Err(other),
            };
            let wanted = super::epochs::expected_on_cluster(e, *key, expected, run);
            if actual != wanted {
                let shown = if &wanted == expected {
                    String::new()
                } else {
                    format!(
                        " ({wanted} with the partitions it is revoking, as ConsumerGroupDescribe lists them)"
                    )
                };
                failures.push(format!("{} expected {expected}{shown}, got {actual}", key.name()));
            }
        }
        match settle {
            Some(until) if !failures.is_empty() && time_left(until) => {
                std::thread::sleep(super::epochs::REREAD);
            }
            _ => return Ok(failures),
        }
    }
}

pub(super) fn only<I: IntoIterator<Item = String>>(names: I, what: &str) -> Result<String, LineFailure> {
    let names: Vec<String> = names.into_iter().collect();
    match names.as_slice() {
        [one] => Ok(one.clone()),
        _ => Err(LineFailure::Other(format!(
            "expect: name the {what} (the scenario has {})",
            names.len()
        ))),
    }
}

fn actual(e: &Expect, key: ExpectKey, run: &mut ClusterRun) -> Result<String, LineFailure> {
    if super::epochs::is_epoch_key(key) {
        return super::epochs::actual(e, key, run);
    }
    let opt = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    if matches!(key, ExpectKey::State | ExpectKey::InFlight | ExpectKey::Polled) {
        let name = match &e.consumer {
            Some(c) => c.clone(),
            None => only(run.model.lab.consumers().keys().cloned(), "consumer")?,
        };
        let c = run
            .app
            .consumers
            .get(&name)
            .ok_or_else(|| LineFailure::Other(format!("no consumer {name} on the cluster")))?;
        return Ok(match key {
            ExpectKey::State => c.state.to_string(),
            ExpectKey::InFlight => c.in_flight().to_string(),
            _ => {
                let polled: Vec<(i32, i64)> = c
                    .last_poll
                    .iter()
                    .filter(|(p, _)| e.partition.is_none_or(|want| *p == want))
                    .copied()
                    .collect();
                if polled.iter().any(|(p, _)| *p != polled[0].0) {
                    return Err(LineFailure::Other(format!(
                        "expect: consumer '{name}''s last poll handed over records of several partitions: add partition=P"
                    )));
                }
                offsetlab_scenario::command::offset_ranges(polled.iter().map(|(_, o)| *o))
            }
        });
    }
    if key == ExpectKey::Position {
        let name = match &e.consumer {
            Some(c) => c.clone(),
            None => only(run.model.lab.consumers().keys().cloned(), "consumer")?,
        };
        return Ok(opt(position(run, &name, e.partition)?));
    }
    // A topic's log, with no group named: read off its partition leader.
    if let (None, Some(topic), ExpectKey::LogEndOffset | ExpectKey::LogStartOffset) =
        (&e.group, &e.topic, key)
    {
        let partitions = run
            .model
            .lab
            .topic(topic)
            .map_err(|err| LineFailure::Other(err.to_string()))?
            .partitions
            .len();
        let partition = match (e.partition, partitions) {
            (Some(p), _) => p,
            (None, 1) => 0,
            (None, _) => {
                return Err(LineFailure::Other(
                    "expect: several partitions: add partition=P".into(),
                ))
            }
        };
        let asker = run.opts.prefix.on_cluster("runner");
        let name = run.opts.prefix.on_cluster(topic);
        let (low, high) = run
            .inspector
            .watermarks(&asker, &name, partition)
            .map_err(|err| LineFailure::Other(format!("{name}-{partition}'s offsets: {err}")))?;
        return Ok(if key == ExpectKey::LogEndOffset { high } else { low }.to_string());
    }
    let group = match &e.group {
        Some(g) => g.clone(),
        None => only(run.model.lab.groups().keys().cloned(), "group")?,
    };
    let figures = real_group(run, &group)?;
    let parts: Vec<&PartitionFigures> = figures
        .partitions
        .iter()
        .filter(|p| e.topic.as_ref().is_none_or(|t| &p.topic == t))
        .filter(|p| e.partition.is_none_or(|want| p.partition == want))
        .collect();
    if parts.is_empty() {
        return Err(LineFailure::Other(format!(
            "group '{group}' reads no such topic-partition"
        )));
    }
    let single = || match parts.as_slice() {
        [one] => Ok(*one),
        _ => Err(LineFailure::Other(
            "expect: several partitions: add partition=P".into(),
        )),
    };
    let sum = |f: &dyn Fn(&AuditFigures) -> u64| parts.iter().map(|p| f(&p.audit)).sum::<u64>().to_string();
    Ok(match key {
        ExpectKey::SinkRows => figures.sink_rows.to_string(),
        ExpectKey::DistinctKeys => figures.distinct_keys.to_string(),
        ExpectKey::DuplicateRows => figures.duplicate_rows.to_string(),
        ExpectKey::Lost => sum(&|a| a.lost),
        ExpectKey::Duplicates => sum(&|a| a.duplicates),
        ExpectKey::Redeliveries => sum(&|a| a.redeliveries),
        ExpectKey::CrashRedeliveries => sum(&|a| a.crash_redeliveries),
        ExpectKey::Replays => sum(&|a| a.replays),
        ExpectKey::Skipped => sum(&|a| a.skipped),
        ExpectKey::Deliveries => sum(&|a| a.deliveries),
        ExpectKey::Lag => {
            let lags: Option<Vec<i64>> = parts.iter().map(|p| p.lag).collect();
            opt(lags.map(|l| l.iter().sum()))
        }
        ExpectKey::Committed => opt(single()?.committed),
        ExpectKey::LogEndOffset => single()?.log_end_offset.to_string(),
        ExpectKey::LogStartOffset => single()?.log_start_offset.to_string(),
        other => {
            return Err(LineFailure::Other(format!(
                "expect {} is not checked on a cluster",
                other.name()
            )))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key `on_cluster` admits is one `actual` answers: none is refused mid-run.
    #[test]
    fn the_keys_checked_on_a_cluster_are_those_it_can_answer() {
        use ExpectKey as K;
        for key in [
            K::Metadata,
            K::LastStableOffset,
            K::Spso,
            K::Revoking,
            K::MemberState,
        ] {
            assert!(!on_cluster(key), "{} is not read off a cluster", key.name());
        }
        for key in [
            K::Lost,
            K::Committed,
            K::State,
            K::Position,
            K::SinkRows,
            K::Lag,
            // The group's state (DescribeGroups, ConsumerGroupDescribe) and the consumer
            // protocol's epochs and partitions (ConsumerGroupDescribe).
            K::Polled,
            K::GroupState,
            K::Generation,
            K::GroupEpoch,
            K::GroupProtocol,
            K::MemberEpoch,
            K::Assigned,
            K::Awaiting,
        ] {
            assert!(on_cluster(key), "{}", key.name());
        }
    }

    fn group(name: &str, committed: Option<i64>, lost: u64, rows: u64) -> GroupFigures {
        GroupFigures {
            group: name.into(),
            sink_rows: rows,
            distinct_keys: 12,
            duplicate_rows: 0,
            partitions: vec![PartitionFigures {
                topic: "orders".into(),
                partition: 0,
                committed,
                log_start_offset: 0,
                log_end_offset: 12,
                lag: committed.map(|c| 12 - c),
                audit: AuditFigures {
                    lost,
                    deliveries: rows,
                    ..AuditFigures::default()
                },
                lost_ranges: Vec::new(),
            }],
        }
    }

    #[test]
    fn equal_figures_have_no_differences() {
        let g = group("ledger", Some(12), 0, 12);
        assert!(differences(std::slice::from_ref(&g), std::slice::from_ref(&g)).is_empty());
    }

    #[test]
    fn each_differing_figure_is_named_with_both_values() {
        let model = [group("ledger", Some(12), 0, 12)];
        let real = [group("ledger", Some(8), 4, 8)];
        assert_eq!(
            differences(&model, &real),
            [
                "group ledger: committed[orders-0]: model 12, cluster 8",
                "group ledger: lag[orders-0]: model 0, cluster 4",
                "group ledger: lost: model 0, cluster 4",
                "group ledger: deliveries: model 12, cluster 8",
                "group ledger: sink-rows: model 12, cluster 8",
            ]
        );
    }

    #[test]
    fn nothing_committed_reads_as_a_dash_and_a_missing_group_is_named() {
        let model = [group("ledger", Some(4), 0, 4)];
        let real = [group("ledger", None, 0, 4), group("view", None, 0, 0)];
        assert_eq!(
            differences(&model, &real),
            [
                "group ledger: committed[orders-0]: model 4, cluster -",
                "group ledger: lag[orders-0]: model 8, cluster -",
                "group view: the model has no such group",
            ]
        );
    }
}
