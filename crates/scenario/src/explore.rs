//! The explorer: crash a consumer at every possible instant of a scenario, for every commit
//! strategy × sink, and report what was lost and duplicated.
//!
//! An *instant* is the moment right after one observable effect of the consumer: a poll
//! returning, a record written to the sink, a commit landing. For each instant `k` (and `k = 0`,
//! right after the consumer starts) the explorer replays the scenario from scratch with a
//! [`FaultPlan`] that kills the consumer right after its `k`-th effect, restarts it, lets it
//! consume to the end of the log, and reads the audit. The matrix it builds is the lab's
//! central claim.

use crate::command::Command;
use crate::error::ScenarioError;
use crate::runner::Runner;
use crate::script::Script;
use offsetlab_engine::lab::{FaultPlan, GroupView};
use offsetlab_engine::sink::SinkKind;
use offsetlab_engine::strategy::CommitStrategy;
use offsetlab_engine::{Lab, LabError};
use serde::Serialize;

/// Upper bound on poll/process rounds while draining after the restart.
const MAX_DRAIN_ROUNDS: usize = 100_000;

/// One cell of the matrix. `max_duplicates` counts redeliveries (records applied again because of
/// the crash), not replays the scenario asked for on purpose.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Cell {
    pub strategy: CommitStrategy,
    pub sink: SinkKind,
    pub crash_points: u64,
    pub max_lost: u64,
    pub total_lost: u64,
    pub max_duplicates: u64,
    pub max_duplicate_rows: u64,
    /// The crash point (effects before the crash) with the most lost, then most duplicate rows.
    pub worst_crash_point: u64,
}

/// What one crash run ended with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunResult {
    pub lost: u64,
    pub duplicates: u64,
    /// Duplicates a crash, restart or rebalance caused (deliberate replays of the script excluded).
    pub redeliveries: u64,
    pub duplicate_rows: u64,
}

/// Explores every strategy × database sink, and Kafka transactions under the two strategies
/// that commit them. `consumer` names the one to crash (default: the first one the script
/// starts).
pub fn explore(script: &Script, consumer: Option<&str>) -> Result<Vec<Cell>, ScenarioError> {
    let target = target_consumer(script, consumer)?;
    let mut cells = Vec::new();
    for strategy in CommitStrategy::ALL {
        for sink in SinkKind::DATABASES {
            cells.push(explore_cell(script, &target, strategy, sink)?);
        }
    }
    // The same application as a read-process-write loop with Kafka transactions (to its
    // output topic, or one the explorer adds), under the two strategies that commit them.
    for strategy in [CommitStrategy::ManualBatch, CommitStrategy::ManualRecord] {
        cells.push(explore_cell(script, &target, strategy, SinkKind::KafkaTx)?);
    }
    Ok(cells)
}

/// Explores one strategy × sink.
pub fn explore_cell(
    script: &Script,
    target: &str,
    strategy: CommitStrategy,
    sink: SinkKind,
) -> Result<Cell, ScenarioError> {
    let variant = with_settings(script, target, strategy, sink);
    let (clean, _) = run_with_crash(&variant, target, None)?;
    let effects = clean.effects_of(target);
    let mut cell = Cell {
        strategy,
        sink,
        crash_points: effects + 1,
        max_lost: 0,
        total_lost: 0,
        max_duplicates: 0,
        max_duplicate_rows: 0,
        worst_crash_point: 0,
    };
    let mut worst = (0, 0);
    for k in 0..=effects {
        let (_, r) = run_with_crash(&variant, target, Some(k))?;
        cell.max_lost = cell.max_lost.max(r.lost);
        cell.total_lost += r.lost;
        cell.max_duplicates = cell.max_duplicates.max(r.redeliveries);
        cell.max_duplicate_rows = cell.max_duplicate_rows.max(r.duplicate_rows);
        if (r.lost, r.duplicate_rows.max(r.redeliveries)) > worst {
            worst = (r.lost, r.duplicate_rows.max(r.redeliveries));
            cell.worst_crash_point = k;
        }
    }
    Ok(cell)
}

/// Replays `script` with `target` crashing right after its `crash_after`-th effect (never, with
/// `None`), then restarts it and drains. Returns the lab and its figures. This is also how the
/// web lab replays a matrix cell's worst crash.
pub fn run_with_crash(
    script: &Script,
    target: &str,
    crash_after: Option<u64>,
) -> Result<(Lab, RunResult), ScenarioError> {
    let mut runner = Runner::new(Lab::default());
    if let Some(after) = crash_after.filter(|&k| k > 0) {
        runner.lab.plan_fault(Some(FaultPlan {
            consumer: target.to_string(),
            after,
        }));
    }
    let mut crashed = false;
    for line in &script.lines {
        if line.command.is_claim() {
            continue;
        }
        match runner.apply(line) {
            // Under another strategy, a line written for the original one may find nothing to
            // process (the records were skipped or not fetched yet) or no transaction to abort
            // (it committed already): the application idles.
            Err(ScenarioError::Rejected {
                error: LabError::NothingInFlight(_) | LabError::NoOpenTransaction(_),
                ..
            }) => {}
            other => {
                other?;
            }
        }
        let starts_target = matches!(&line.command, Command::Consumer(c) if c.config.name == target);
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
    drain(&mut lab, target).map_err(|e| rejected(0, e))?;
    let group = lab
        .consumer(target)
        .map_err(|e| rejected(0, e))?
        .config
        .group
        .clone();
    let view: GroupView = lab.group_view(&group).map_err(|e| rejected(0, e))?;
    let result = RunResult {
        lost: view.audit.lost,
        duplicates: view.audit.duplicates,
        redeliveries: view.audit.redeliveries,
        duplicate_rows: view.audit.duplicate_rows,
    };
    Ok((lab, result))
}

/// The lines that reproduce one crash of the explorer, up to and including the line during
/// which the consumer died: the variant of `script` for `strategy` × `sink`, with a `fault`
/// line armed right after `target` starts (or a `crash` line for crash point 0). Lines that
/// would be rejected under this variant (nothing to process) are left out. Loading the result in
/// the lab shows the moment of the crash; exporting it replays exactly.
pub fn crash_replay(
    script: &Script,
    target: &str,
    strategy: CommitStrategy,
    sink: SinkKind,
    crash_after: u64,
) -> Result<Script, ScenarioError> {
    let variant = with_settings(script, target, strategy, sink);
    let mut runner = Runner::new(Lab::default());
    let mut kept = Vec::new();
    for line in variant.lines.iter().filter(|l| !l.command.is_claim()) {
        match runner.apply(line) {
            Err(ScenarioError::Rejected {
                error: LabError::NothingInFlight(_) | LabError::NoOpenTransaction(_),
                ..
            }) => continue,
            other => {
                other?;
            }
        }
        kept.push(line.clone());
        if matches!(&line.command, Command::Consumer(c) if c.config.name == target) {
            let armed = armed_crash(target, crash_after, line.number);
            runner.apply(&armed)?;
            kept.push(armed);
        }
        if runner.lab.consumer(target).is_ok_and(|c| !c.is_running()) {
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

/// The line that arms the explorer's crash of `target` right after it starts: `crash` for
/// crash point 0, else `fault TARGET after=N`.
pub(crate) fn armed_crash(target: &str, crash_after: u64, number: usize) -> crate::script::Line {
    let command = if crash_after == 0 {
        Command::Crash(crate::command::Crash {
            consumer: target.to_string(),
        })
    } else {
        Command::Fault(crate::command::Fault {
            consumer: target.to_string(),
            after: crash_after,
        })
    };
    crate::script::Line {
        number,
        text: command.to_string(),
        command,
    }
}

/// Consumes to the end of the log with every running member of the target's group — they
/// all take part in the rebalances a restart causes — then lets timers and async commits
/// settle. A restarted consumer first waits for its dead incarnation's session to expire.
fn drain(lab: &mut Lab, target: &str) -> Result<(), LabError> {
    let group = lab.consumer(target)?.config.group.clone();
    let session = lab.consumer(target)?.config.session_timeout_ms;
    let members = |lab: &Lab| -> Vec<String> {
        lab.consumers()
            .values()
            .filter(|c| c.config.group == group && c.is_running())
            .map(|c| c.name().to_string())
            .collect()
    };
    if lab.group(&group)?.rebalance.is_some() {
        lab.tick(session)?;
    }
    for _ in 0..MAX_DRAIN_ROUNDS {
        let mut progressed = false;
        for name in members(lab) {
            if !lab.consumer(&name)?.is_running() {
                continue;
            }
            if lab.consumer(&name)?.in_flight.is_empty() && lab.poll(&name)? > 0 {
                progressed = true;
            }
            if lab
                .consumer(&name)
                .is_ok_and(|c| c.is_running() && !c.in_flight.is_empty())
            {
                lab.process(&name, None)?;
                progressed = true;
            }
        }
        if !progressed {
            if lab.group(&group)?.rebalance.is_some() {
                lab.tick(session)?; // a dead member still holds up the rebalance
            } else {
                break;
            }
        }
    }
    let c = lab.consumer(target)?;
    let settle = c
        .config
        .auto_commit_interval_ms
        .max(c.config.async_commit_latency_ms)
        + 1;
    lab.tick(settle)?;
    for name in members(lab) {
        lab.poll(&name)?;
        if lab
            .consumer(&name)
            .is_ok_and(|c| c.is_running() && !c.in_flight.is_empty())
        {
            lab.process(&name, None)?;
        }
    }
    Ok(())
}

fn rejected(line: usize, error: LabError) -> ScenarioError {
    ScenarioError::Rejected {
        line,
        text: "(explorer)".to_string(),
        error,
    }
}

/// The consumer to crash: the one named, or the first one the script starts.
pub fn target_consumer(script: &Script, consumer: Option<&str>) -> Result<String, ScenarioError> {
    let started: Vec<&str> = script
        .lines
        .iter()
        .filter_map(|l| match &l.command {
            Command::Consumer(c) => Some(c.config.name.as_str()),
            _ => None,
        })
        .collect();
    match consumer {
        Some(c) if started.contains(&c) => Ok(c.to_string()),
        Some(c) => Err(rejected(0, LabError::UnknownConsumer(c.to_string()))),
        None => started.first().map(|c| c.to_string()).ok_or_else(|| {
            rejected(
                0,
                LabError::InvalidArgument("the scenario starts no consumer to crash".into()),
            )
        }),
    }
}

/// Gives `target` an output topic for Kafka transactions: `<input>-txn-out`, created (one
/// partition) just before `target` starts unless the script creates it. Returns its name.
fn add_output_topic(s: &mut Script, target: &str) -> String {
    let Some(at) = s
        .lines
        .iter()
        .position(|l| matches!(&l.command, Command::Consumer(c) if c.config.name == target))
    else {
        return String::new();
    };
    let input = match &s.lines[at].command {
        Command::Consumer(c) => c.config.topic.clone(),
        _ => String::new(),
    };
    let name = format!("{input}-txn-out");
    let exists = s
        .lines
        .iter()
        .any(|l| matches!(&l.command, Command::Topic(t) if t.name == name));
    if !exists {
        let command = Command::Topic(crate::command::CreateTopic {
            name: name.clone(),
            config: offsetlab_engine::log::TopicConfig::default(),
        });
        let line = crate::script::Line {
            number: s.lines[at].number,
            text: command.to_string(),
            command,
        };
        s.lines.insert(at, line);
    }
    name
}

/// The output topic `target` produces to with Kafka transactions, if the script gives it one.
fn output_of(script: &Script, target: &str) -> Option<String> {
    script.lines.iter().find_map(|l| match &l.command {
        Command::Consumer(c) if c.config.name == target => c.config.output.clone(),
        _ => None,
    })
}

/// The script with `target`'s commit strategy replaced, and the sink of `target`'s group (a
/// group shares one sink, so every consumer of that group gets it). With a database sink the
/// group produces no transactional output; with `kafka-tx` it produces to `target`'s output
/// topic.
pub fn with_settings(script: &Script, target: &str, strategy: CommitStrategy, sink: SinkKind) -> Script {
    let mut s = script.clone();
    let group = s.lines.iter().find_map(|l| match &l.command {
        Command::Consumer(c) if c.config.name == target => Some(c.config.group.clone()),
        _ => None,
    });
    let mut output = output_of(script, target).filter(|_| sink == SinkKind::KafkaTx);
    if sink == SinkKind::KafkaTx && output.is_none() {
        output = Some(add_output_topic(&mut s, target));
    }
    if sink != SinkKind::KafkaTx {
        // Without Kafka transactions there is no transaction to abort.
        s.lines.retain(|l| !matches!(l.command, Command::Abort(_)));
    }
    for line in &mut s.lines {
        if let Command::Consumer(c) = &mut line.command {
            if c.config.name == target {
                c.config.strategy = strategy;
            }
            if Some(&c.config.group) == group.as_ref() {
                c.config.sink = sink;
                c.config.output = output.clone();
                if sink == SinkKind::KafkaTx {
                    c.config.isolation = offsetlab_engine::txn::IsolationLevel::ReadCommitted;
                }
            }
            line.text = line.command.to_string();
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seed_matrix() -> Vec<Cell> {
        let script = Script::parse(crate::SEED_SCENARIO).expect("seed");
        explore(&script, None).expect("explores")
    }

    fn cell(m: &[Cell], strategy: CommitStrategy, sink: SinkKind) -> &Cell {
        m.iter()
            .find(|c| c.strategy == strategy && c.sink == sink)
            .expect("cell")
    }

    /// A read-process-write application explored with Kafka transactions: crashing it at every
    /// instant — including mid-transaction — never loses or duplicates committed output, while
    /// the same application writing to an append-only database duplicates.
    #[test]
    fn kafka_transactions_are_exactly_once_at_every_crash_point() {
        let script = Script::parse(
            "topic orders partitions=2\n\
             topic orders-copy partitions=2\n\
             produce orders count=10\n\
             consumer copier group=copy topic=orders commit=manual-batch max-poll=3 sink=kafka-tx output=orders-copy reset=earliest\n\
             poll copier\nprocess copier count=all\npoll copier\nprocess copier count=2\n\
             abort copier\npoll copier\nprocess copier count=all\npoll copier\nprocess copier count=all\n",
        )
        .expect("script");
        let m = explore(&script, Some("copier")).expect("explores");
        assert_eq!(m.len(), 20, "18 database cells and 2 with Kafka transactions");
        for strategy in [CommitStrategy::ManualBatch, CommitStrategy::ManualRecord] {
            let c = cell(&m, strategy, SinkKind::KafkaTx);
            assert!(c.crash_points > 10, "{c:?}");
            assert_eq!(
                (c.max_lost, c.max_duplicates, c.max_duplicate_rows),
                (0, 0, 0),
                "{c:?}"
            );
        }
        let append = cell(&m, CommitStrategy::ManualBatch, SinkKind::Append);
        assert!(append.max_duplicate_rows > 0, "{append:?}");
    }

    /// The lab's central claim, on the seed scenario.
    #[test]
    fn the_matrix_makes_the_labs_claim() {
        let m = seed_matrix();
        assert_eq!(
            m.len(),
            20,
            "6 strategies × 3 database sinks, and Kafka transactions twice"
        );
        for c in &m {
            assert!(c.crash_points > 12, "{c:?}");
            match c.sink {
                SinkKind::Transactional | SinkKind::KafkaTx => {
                    assert_eq!(
                        (c.max_lost, c.max_duplicates, c.max_duplicate_rows),
                        (0, 0, 0),
                        "{c:?}"
                    )
                }
                SinkKind::Upsert => assert_eq!(
                    c.max_duplicate_rows, 0,
                    "an upsert never grows duplicate rows: {c:?}"
                ),
                SinkKind::Append => {}
            }
            if !matches!(c.sink, SinkKind::Transactional | SinkKind::KafkaTx) {
                if matches!(
                    c.strategy,
                    CommitStrategy::BeforeProcess | CommitStrategy::AutoTimer
                ) {
                    assert!(c.max_lost > 0, "commit-before and timer auto-commit lose: {c:?}");
                }
                if c.strategy.commits_after_processing() {
                    assert_eq!(c.max_lost, 0, "commit-after never loses: {c:?}");
                    assert!(c.max_duplicates > 0, "but it redelivers: {c:?}");
                }
                if c.strategy == CommitStrategy::BeforeProcess {
                    assert_eq!(c.max_duplicates, 0, "at-most-once never duplicates: {c:?}");
                }
            }
        }
        let append = cell(&m, CommitStrategy::ManualBatch, SinkKind::Append);
        assert!(
            append.max_duplicate_rows > 0,
            "commit-after duplicates into an append sink"
        );
        let record = cell(&m, CommitStrategy::ManualRecord, SinkKind::Append);
        assert_eq!(
            record.max_duplicates, 1,
            "per-record commits shrink the window to one record"
        );
        assert!(
            append.max_duplicates > record.max_duplicates,
            "batch commits widen it"
        );
        let timer = cell(&m, CommitStrategy::AutoTimer, SinkKind::Append);
        assert_eq!(
            timer.max_lost, 3,
            "the timer fires after record 4 of 4..7: 5, 6, 7 are lost"
        );
    }

    /// The explorer crashes one member of a two-member group; the other takes part in the
    /// rebalances and both drain the log.
    #[test]
    fn crashing_one_member_of_two_keeps_the_claim() {
        let script = Script::parse(
            "topic orders partitions=2\nproduce orders count=16\n\
             consumer c1 group=g topic=orders commit=auto-timer interval=5s max-poll=4 sink=append reset=earliest\n\
             consumer c2 group=g topic=orders commit=manual-batch max-poll=4 sink=append reset=earliest\n\
             poll c1\npoll c2\nprocess c1\nprocess c2\ntick 1s\nprocess c1\nprocess c2\ntick 1s\n\
             process c1 count=all\nprocess c2 count=all\npoll c1\npoll c2\nprocess c1 count=all\nprocess c2 count=all\n",
        )
        .expect("script");
        for strategy in [
            CommitStrategy::ManualBatch,
            CommitStrategy::ManualRecord,
            CommitStrategy::ManualAsync,
        ] {
            let c = explore_cell(&script, "c2", strategy, SinkKind::Append).expect("cell");
            assert!(c.crash_points > 4, "{c:?}");
            assert_eq!(
                c.max_lost, 0,
                "commit-after never loses, even mid-rebalance: {c:?}"
            );
        }
        let c = explore_cell(
            &script,
            "c2",
            CommitStrategy::ManualBatch,
            SinkKind::Transactional,
        )
        .expect("cell");
        assert_eq!((c.max_lost, c.max_duplicates), (0, 0), "{c:?}");
    }

    #[test]
    fn a_crash_replay_stops_at_the_crash_and_round_trips_as_text() {
        let script = Script::parse(crate::SEED_SCENARIO).expect("seed");
        let c = explore_cell(&script, "c1", CommitStrategy::AutoTimer, SinkKind::Append).expect("cell");
        let replay = crash_replay(&script, "c1", c.strategy, c.sink, c.worst_crash_point).expect("replay");
        let text = replay.to_text();
        assert!(text.contains("fault c1 after="), "{text}");
        let runner = crate::runner::run_source(&text).expect("replays");
        let c1 = runner.lab.consumer("c1").expect("c1");
        assert!(!c1.is_running(), "the replay ends with c1 crashed");
        let view = runner.lab.group_view("analytics-prod").expect("group");
        assert_eq!(
            view.partitions[0].committed,
            Some(8),
            "the timer committed 8 before the crash"
        );
    }

    #[test]
    fn the_worst_crash_point_replays_to_the_same_figures() {
        let script = Script::parse(crate::SEED_SCENARIO).expect("seed");
        let c = explore_cell(&script, "c1", CommitStrategy::AutoTimer, SinkKind::Append).expect("cell");
        let variant = with_settings(&script, "c1", c.strategy, c.sink);
        let (_, r) = run_with_crash(&variant, "c1", Some(c.worst_crash_point)).expect("replay");
        assert_eq!(r.lost, c.max_lost);
    }
}
