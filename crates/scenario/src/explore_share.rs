//! The explorer's share rows: the same application run as a share group's consumer (KIP-932,
//! "queues for Kafka"), crashed at every instant, so the matrix answers "what does a
//! queue-style consumer buy me, and what does it cost?".
//!
//! The scenario's consumer group becomes a share group of the same name: each of its
//! consumers a `share-consumer` (reading from the earliest record when the group did: a
//! consumer's `reset=earliest`, or an executed `reset-offsets … to-earliest`), each `poll` a
//! `share-poll`. Two ways to acknowledge are explored:
//!
//! - **implicit** (`share.acknowledgement.mode=implicit`, Kafka's default): the next poll, or
//!   `commitSync()`, accepts everything the previous poll handed over — processed or not;
//! - **explicit**: the application acknowledges each record it processed, right after
//!   processing it (`acknowledge(record, ACCEPT)` and `commitSync()`).
//!
//! A crash (kill -9) ends the member's share session with its connection: what it held is
//! released at once and handed to the next poll — as Apache Kafka 4.4 does — so a record
//! processed and not yet acknowledged is processed again. Lines with no meaning for a share
//! group (a seek, an offset reset, a transaction) are left out.

use crate::command::{AlterShareGroup, Command, ShareAck, SharePoll, StartShareConsumer};
use crate::error::ScenarioError;
use crate::explore::target_consumer;
use crate::runner::Runner;
use crate::script::{Line, Script};
use offsetlab_engine::lab::FaultPlan;
use offsetlab_engine::share::{
    AcknowledgeType, AcknowledgementMode, ShareAutoOffsetReset, ShareConsumerConfig, ShareGroupConfigChange,
};
use offsetlab_engine::strategy::AutoOffsetReset;
use offsetlab_engine::{Lab, LabError};
use serde::Serialize;
use std::collections::BTreeMap;

/// Upper bound on poll/process rounds while draining after the restart.
const MAX_DRAIN_ROUNDS: usize = 100_000;

/// One share row of the matrix: an acknowledgement mode, crashed at every instant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ShareCell {
    pub mode: AcknowledgementMode,
    pub crash_points: u64,
    /// Records whose delivery completed without being applied (accepted unprocessed).
    pub max_lost: u64,
    pub total_lost: u64,
    /// Records applied again: a crashed member's records, released and handed out once more.
    pub max_duplicates: u64,
    /// The crash point with the most lost, then the most duplicates.
    pub worst_crash_point: u64,
}

/// What one crash run of a share variant ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ShareRun {
    pub lost: u64,
    pub duplicates: u64,
    pub deliveries: u64,
}

/// The share rows: both acknowledgement modes, crashing `consumer` (default: the first one the
/// script starts).
pub fn explore_share(script: &Script, consumer: Option<&str>) -> Result<Vec<ShareCell>, ScenarioError> {
    let target = target_consumer(script, consumer)?;
    [AcknowledgementMode::Implicit, AcknowledgementMode::Explicit]
        .into_iter()
        .map(|mode| explore_share_cell(script, &target, mode))
        .collect()
}

/// One acknowledgement mode, crashed at every instant.
pub fn explore_share_cell(
    script: &Script,
    target: &str,
    mode: AcknowledgementMode,
) -> Result<ShareCell, ScenarioError> {
    let variant = share_variant(script, target, mode);
    let (clean, _) = run_share_with_crash(&variant, target, None)?;
    let effects = clean.effects_of(target);
    let mut cell = ShareCell {
        mode,
        crash_points: effects + 1,
        max_lost: 0,
        total_lost: 0,
        max_duplicates: 0,
        worst_crash_point: 0,
    };
    let mut worst = (0, 0);
    for k in 0..=effects {
        let (_, r) = run_share_with_crash(&variant, target, Some(k))?;
        cell.max_lost = cell.max_lost.max(r.lost);
        cell.total_lost += r.lost;
        cell.max_duplicates = cell.max_duplicates.max(r.duplicates);
        if (r.lost, r.duplicates) > worst {
            worst = (r.lost, r.duplicates);
            cell.worst_crash_point = k;
        }
    }
    Ok(cell)
}

/// The group `target` belongs to in `script`.
fn group_of(script: &Script, target: &str) -> Option<String> {
    script.lines.iter().find_map(|l| match &l.command {
        Command::Consumer(c) if c.config.name == target => Some(c.config.group.clone()),
        Command::ShareConsumer(c) if c.config.name == target => Some(c.config.group.clone()),
        _ => None,
    })
}

/// `script` with `target`'s consumer group turned into a share group acknowledging in `mode`.
/// Its share consumers keep to `max.poll.records` (`share.acquire.mode=record_limit`): each
/// poll hands the application the batch the consumer group's poll handed it, so the same lines
/// process the same records. (In Kafka's default mode a poll takes whole producer batches: the
/// seed's twelve orders, one batch, would all come in the first poll, and the application's
/// next poll would accept eight it never processed.)
pub fn share_variant(script: &Script, target: &str, mode: AcknowledgementMode) -> Script {
    let Some(group) = group_of(script, target) else {
        return script.clone();
    };
    let members: Vec<String> = script
        .lines
        .iter()
        .filter_map(|l| match &l.command {
            Command::Consumer(c) if c.config.group == group => Some(c.config.name.clone()),
            Command::ShareConsumer(c) if c.config.group == group => Some(c.config.name.clone()),
            _ => None,
        })
        .collect();
    let ours = |name: &str| members.iter().any(|m| m == name);
    // Where the consumer group starts: the earliest record when a consumer says so, or when an
    // executed reset put the group there before it read (the seed's bookmark).
    let from_earliest = script.lines.iter().any(|l| match &l.command {
        Command::Consumer(c) => {
            c.config.group == group && c.config.auto_offset_reset == AutoOffsetReset::Earliest
        }
        Command::ResetOffsets(r) => {
            r.group == group && r.execute && r.spec == offsetlab_engine::lab::ResetSpec::ToEarliest
        }
        _ => false,
    });
    let mut lines = Vec::new();
    let mut configured = false;
    let push = |lines: &mut Vec<Line>, number: usize, command: Command| {
        lines.push(Line {
            number,
            text: command.to_string(),
            command,
        });
    };
    for line in &script.lines {
        let n = line.number;
        let command = match &line.command {
            Command::Consumer(c) if c.config.group == group => {
                if !configured {
                    configured = true;
                    if from_earliest {
                        push(
                            &mut lines,
                            n,
                            Command::AlterShareGroup(AlterShareGroup {
                                group: group.clone(),
                                change: ShareGroupConfigChange {
                                    auto_offset_reset: Some(ShareAutoOffsetReset::Earliest),
                                    ..Default::default()
                                },
                            }),
                        );
                    }
                }
                let mut config = ShareConsumerConfig::new(&c.config.name, &group, &c.config.topic);
                config.acknowledgement_mode = mode;
                config.max_poll_records = c.config.max_poll_records;
                config.acquire_mode = offsetlab_engine::share::AcquireMode::RecordLimit;
                Command::ShareConsumer(StartShareConsumer { config })
            }
            Command::ShareConsumer(c) if c.config.group == group => {
                let mut config = c.config.clone();
                config.acknowledgement_mode = mode;
                Command::ShareConsumer(StartShareConsumer { config })
            }
            Command::Poll(p) if ours(&p.consumer) => Command::SharePoll(SharePoll {
                consumer: p.consumer.clone(),
            }),
            // A share group has no positions and no offsets to move, nor transactions.
            Command::Seek(s) if ours(&s.consumer) => continue,
            Command::Abort(a) if ours(&a.consumer) => continue,
            Command::Fault(f) if ours(&f.consumer) => continue,
            Command::ResetOffsets(r) if r.group == group => continue,
            Command::AlterOffsets(r) if r.group == group => continue,
            Command::DeleteOffsets(r) if r.group == group => continue,
            c if c.is_claim() => continue,
            other => other.clone(),
        };
        push(&mut lines, n, command);
    }
    Script { lines }
}

/// In explicit mode the application acknowledges each record right after processing it: the
/// `share-ack` lines for what `name` has processed and still holds, one per partition.
fn acks_for_processed(lab: &Lab, name: &str) -> Vec<Command> {
    let Ok(c) = lab.share_consumer(name) else {
        return Vec::new();
    };
    if !c.is_running() || c.config.acknowledgement_mode != AcknowledgementMode::Explicit {
        return Vec::new();
    }
    let mut by_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
    for h in c.held.iter().filter(|h| h.processed) {
        by_partition.entry(h.tp.partition).or_default().push(h.offset);
    }
    by_partition
        .into_iter()
        .map(|(p, offsets)| {
            Command::ShareAck(ShareAck {
                consumer: name.to_string(),
                partition: Some(p),
                offsets: Some(offsets),
                ack: AcknowledgeType::Accept,
            })
        })
        .collect()
}

/// Applies `line`, then — in explicit mode, after a `process` — the acknowledgements of what it
/// processed. Returns the lines applied (the acknowledgements included); a line that finds
/// nothing to do under this variant is skipped.
fn apply_with_acks(runner: &mut Runner, line: &Line, group: &str) -> Result<Vec<Line>, ScenarioError> {
    match runner.apply(line) {
        Err(ScenarioError::Rejected {
            error: LabError::NothingInFlight(_),
            ..
        }) => return Ok(Vec::new()),
        other => {
            other?;
        }
    }
    let mut applied = vec![line.clone()];
    // Only the explored group's members: other share consumers of the scenario acknowledge as
    // its lines say.
    let ours = |name: &str| {
        runner
            .lab
            .share_consumer(name)
            .is_ok_and(|c| c.config.group == group)
    };
    if let Command::Process(p) = &line.command {
        if !ours(&p.consumer) {
            return Ok(applied);
        }
        for command in acks_for_processed(&runner.lab, &p.consumer) {
            let ack = Line {
                number: line.number,
                text: command.to_string(),
                command,
            };
            runner.apply(&ack)?;
            applied.push(ack);
            if runner.lab.fault_fired() {
                break;
            }
        }
    }
    Ok(applied)
}

/// Replays a share variant with `target` crashing right after its `crash_after`-th effect (never,
/// with `None`), restarts it and drains the log with every member of the group.
pub fn run_share_with_crash(
    variant: &Script,
    target: &str,
    crash_after: Option<u64>,
) -> Result<(Lab, ShareRun), ScenarioError> {
    let mut runner = Runner::new(Lab::default());
    if let Some(after) = crash_after.filter(|&k| k > 0) {
        runner.lab.plan_fault(Some(FaultPlan {
            consumer: target.to_string(),
            after,
        }));
    }
    let mut crashed = false;
    let group = group_of(variant, target).unwrap_or_default();
    for line in &variant.lines {
        apply_with_acks(&mut runner, line, &group)?;
        let starts_target = matches!(&line.command, Command::ShareConsumer(c) if c.config.name == target);
        if crash_after == Some(0) && starts_target {
            runner.lab.crash(target).map_err(|e| rejected(line.number, e))?;
            crashed = true;
            break;
        }
        if crash_after.is_some_and(|k| k > 0) && runner.lab.fault_fired() {
            crashed = true;
            break;
        }
    }
    let mut lab = runner.lab;
    if crashed {
        lab.restart(target).map_err(|e| rejected(0, e))?;
    }
    let group = lab
        .share_consumer(target)
        .map_err(|e| rejected(0, e))?
        .config
        .group
        .clone();
    drain(&mut lab, &group).map_err(|e| rejected(0, e))?;
    let f = lab
        .share_group(&group)
        .map_err(|e| rejected(0, e))?
        .figures(|_| true);
    Ok((
        lab,
        ShareRun {
            lost: f.lost,
            duplicates: f.duplicates,
            deliveries: f.deliveries,
        },
    ))
}

/// Every running member of the share group reads to the end of the log: poll, process what it
/// was handed, acknowledge it (explicit) or let the next poll accept it (implicit).
fn drain(lab: &mut Lab, group: &str) -> Result<(), LabError> {
    let members = |lab: &Lab| -> Vec<String> {
        lab.share()
            .consumers
            .values()
            .filter(|c| c.config.group == group && c.is_running())
            .map(|c| c.config.name.clone())
            .collect()
    };
    for _ in 0..MAX_DRAIN_ROUNDS {
        let mut progressed = false;
        for name in members(lab) {
            let c = lab.share_consumer(&name)?;
            if c.held.iter().any(|h| !h.processed) {
                lab.process(&name, None)?;
                for command in acks_for_processed(lab, &name) {
                    // An acknowledgement may be the instant the fault fires: the rest die with it.
                    if !lab.share_consumer(&name).is_ok_and(|c| c.is_running()) {
                        break;
                    }
                    command.apply(lab).map_err(|e| match e {
                        crate::command::ApplyError::Lab(error) => error,
                        other => LabError::InvalidArgument(other.to_string()),
                    })?;
                }
                progressed = true;
            } else if lab.share_poll(&name)? > 0 {
                progressed = true;
            }
        }
        if !progressed {
            break;
        }
    }
    // What the last polls handed over and was processed is accepted by commitSync().
    for name in members(lab) {
        lab.commit(&name)?;
    }
    Ok(())
}

/// The lines that reproduce one crash of a share row, up to the line during which the consumer
/// died: the share variant for `mode`, with a `fault` line armed right after `target` starts
/// (or a `crash` line for crash point 0). Loading it in the lab shows the moment of the crash.
pub fn share_crash_replay(
    script: &Script,
    target: &str,
    mode: AcknowledgementMode,
    crash_after: u64,
) -> Result<Script, ScenarioError> {
    let variant = share_variant(script, target, mode);
    let mut runner = Runner::new(Lab::default());
    let mut kept = Vec::new();
    let group = group_of(&variant, target).unwrap_or_default();
    for line in &variant.lines {
        kept.extend(apply_with_acks(&mut runner, line, &group)?);
        if matches!(&line.command, Command::ShareConsumer(c) if c.config.name == target) {
            let armed = crate::explore::armed_crash(target, crash_after, line.number);
            runner.apply(&armed)?;
            kept.push(armed);
        }
        if runner.lab.share_consumer(target).is_ok_and(|c| !c.is_running()) {
            return Ok(Script { lines: kept });
        }
    }
    Err(rejected(
        0,
        LabError::InvalidArgument(format!(
            "crash point {crash_after} is past the last instant of {target} in this scenario"
        )),
    ))
}

fn rejected(line: usize, error: LabError) -> ScenarioError {
    ScenarioError::Rejected {
        line,
        text: "(explorer)".to_string(),
        error,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed() -> Script {
        Script::parse(crate::SEED_SCENARIO).expect("seed")
    }

    /// The seed's application as a share group's consumer: neither mode loses a record to a
    /// crash — the crashed member's records come back at once — but both process some twice;
    /// acknowledging each record right after processing it narrows that to one record.
    #[test]
    fn a_queue_style_consumer_trades_loss_for_redelivery() {
        let rows = explore_share(&seed(), None).expect("explores");
        assert_eq!(rows.len(), 2);
        let implicit = &rows[0];
        let explicit = &rows[1];
        assert_eq!(implicit.mode, AcknowledgementMode::Implicit);
        for r in &rows {
            assert!(r.crash_points > 12, "{r:?}");
            assert_eq!(r.max_lost, 0, "a crash releases, it never accepts: {r:?}");
            assert!(
                r.max_duplicates > 0,
                "what was processed and not acknowledged comes back: {r:?}"
            );
        }
        assert_eq!(
            explicit.max_duplicates, 1,
            "acknowledged right after processing: {explicit:?}"
        );
        assert!(
            implicit.max_duplicates > explicit.max_duplicates,
            "{implicit:?} vs {explicit:?}"
        );
    }

    /// Implicit acknowledgement accepts what the previous poll handed over, processed or not: a
    /// scenario that polls before it finished a batch loses what it skipped — with or without a
    /// crash.
    #[test]
    fn implicit_acknowledgement_loses_what_the_next_poll_accepts_unprocessed() {
        let script = Script::parse(
            "topic orders partitions=1\nproduce orders count=6\n\
             consumer c1 group=g topic=orders commit=manual-batch max-poll=3 reset=earliest\n\
             poll c1\nprocess c1 count=2\npoll c1\nprocess c1 count=all\n",
        )
        .expect("script");
        let implicit = explore_share_cell(&script, "c1", AcknowledgementMode::Implicit).expect("cell");
        assert!(implicit.max_lost >= 1, "{implicit:?}");
        let explicit = explore_share_cell(&script, "c1", AcknowledgementMode::Explicit).expect("cell");
        assert_eq!(explicit.max_lost, 0, "{explicit:?}");
    }

    /// Every lesson's application can be explored as a share group's consumer: lines that mean
    /// nothing to a share group are left out, and the scenario's own share consumers keep
    /// acknowledging as its lines say.
    #[test]
    fn every_lesson_has_share_rows() {
        for lesson in crate::lessons::LESSONS {
            let script = Script::parse(lesson.source).expect("a lesson parses");
            let rows = explore_share(&script, None).unwrap_or_else(|e| panic!("{}: {e:?}", lesson.file));
            assert_eq!(rows.len(), 2, "{}", lesson.file);
        }
    }

    #[test]
    fn a_share_crash_replay_stops_at_the_crash_and_round_trips_as_text() {
        let script = seed();
        let cell = explore_share_cell(&script, "c1", AcknowledgementMode::Implicit).expect("cell");
        let replay = share_crash_replay(
            &script,
            "c1",
            AcknowledgementMode::Implicit,
            cell.worst_crash_point,
        )
        .expect("replay");
        let text = replay.to_text();
        assert!(text.contains("share-consumer c1"), "{text}");
        let runner = crate::runner::run_source(&text).expect("replays");
        assert!(
            !runner.lab.share_consumer("c1").expect("c1").is_running(),
            "{text}"
        );
    }
}
