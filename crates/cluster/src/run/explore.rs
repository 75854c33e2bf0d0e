//! One cell of the explorer's matrix on a real cluster: the scenario under one strategy × sink,
//! the consumer killed (`SIGKILL`) right after its k-th effect, restarted, drained — for every
//! crash point, or a sample — and each run's lost / duplicated figures beside the explorer's
//! prediction for the same crash point.
//!
//! Each crash point is a run of its own, with topics and groups of its own (the run's prefix
//! and the point's number), so the points run side by side: most of a point's time is waiting
//! (the scenario's ticks, the dead incarnation's session).

use super::{ClusterRun, RunError, RunOptions};
use crate::names::Prefix;
use offsetlab_engine::sink::SinkKind;
use offsetlab_engine::strategy::CommitStrategy;
use offsetlab_scenario::explore::{crash_replay, explore_cell, run_with_crash, with_settings, Cell};
use offsetlab_scenario::Script;
use serde::Serialize;
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// What one crash left behind: lost records, redeliveries, duplicate sink rows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Outcome {
    pub lost: u64,
    pub redeliveries: u64,
    pub duplicate_rows: u64,
}

/// One crash point, predicted and measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Point {
    pub crash_point: u64,
    pub model: Outcome,
    /// `None` when the run on the cluster failed (`error` says why).
    pub cluster: Option<Outcome>,
    pub error: Option<String>,
    pub wall_ms: u64,
    /// Lines that ran late for a timer where that changed no figure (see `ClusterRun::warnings`).
    pub warnings: Vec<String>,
}

impl Point {
    pub fn agrees(&self) -> bool {
        self.cluster == Some(self.model)
    }
}

/// The crash points a cluster can run: those whose crash the scenario's own lines reach. (The
/// explorer also crashes the consumer during the drain after the scenario — its last few
/// points —, which [`crash_replay`] cannot replay as lines.)
pub fn replayable(
    script: &Script,
    target: &str,
    strategy: CommitStrategy,
    sink: SinkKind,
    cell: &Cell,
) -> Vec<u64> {
    (0..cell.crash_points)
        .filter(|&k| crash_replay(script, target, strategy, sink, k).is_ok())
        .collect()
}

/// The crash points to run, of the `replayable` ones: all of them, or `sample` of them — the
/// model's worst first (when it is replayable), then spread evenly from the first to the last.
pub fn chosen_points(cell: &Cell, replayable: &[u64], sample: Option<usize>) -> Vec<u64> {
    let Some(n) = sample.filter(|&n| n < replayable.len()) else {
        return replayable.to_vec();
    };
    let mut points = Vec::new();
    if replayable.contains(&cell.worst_crash_point) {
        points.push(cell.worst_crash_point);
    }
    let last = replayable.len().saturating_sub(1);
    let spread = n.saturating_sub(1).max(1);
    for i in 0..=spread {
        if points.len() >= n {
            break;
        }
        let k = replayable[last * i / spread];
        if !points.contains(&k) {
            points.push(k);
        }
    }
    points.truncate(n.max(1));
    points.sort_unstable();
    points
}

/// The explorer's model cell for `strategy` × `sink`.
pub fn model_cell(
    script: &Script,
    target: &str,
    strategy: CommitStrategy,
    sink: SinkKind,
) -> Result<Cell, RunError> {
    explore_cell(script, target, strategy, sink).map_err(RunError::Model)
}

/// Runs the chosen crash points on the cluster, side by side.
pub fn run_points(
    script: &Script,
    target: &str,
    strategy: CommitStrategy,
    sink: SinkKind,
    points: &[u64],
    opts: &RunOptions,
) -> Result<Vec<Point>, RunError> {
    let variant = with_settings(script, target, strategy, sink);
    // Every point's lines and names checked before any point touches the cluster.
    let mut planned = Vec::new();
    for &k in points {
        let (_, r) = run_with_crash(&variant, target, Some(k)).map_err(RunError::Model)?;
        let model = Outcome {
            lost: r.lost,
            redeliveries: r.redeliveries,
            duplicate_rows: r.duplicate_rows,
        };
        let replay = crash_replay(script, target, strategy, sink, k).map_err(RunError::Model)?;
        let prefix = Prefix::new(&format!("{}{k}-", opts.prefix.as_str()))?;
        super::check(&replay, &prefix, &BTreeSet::new())?;
        planned.push((k, model, replay, prefix));
    }
    let mut measured = Vec::new();
    for chunk in planned.chunks(SIDE_BY_SIDE) {
        let mut prepared = Vec::new();
        for (k, model, replay, prefix) in chunk {
            let mut point_opts = opts.clone();
            point_opts.prefix = prefix.clone();
            point_opts.sink_dir = opts.sink_dir.join(format!("point-{k}"));
            point_opts.progress = None;
            std::fs::create_dir_all(&point_opts.sink_dir).map_err(|e| RunError::Line {
                line: 0,
                text: String::new(),
                why: format!("{}: {e}", point_opts.sink_dir.display()),
            })?;
            let run = ClusterRun::prepare(replay, point_opts)?;
            prepared.push((*k, *model, replay, run));
        }
        let points: Vec<Point> = std::thread::scope(|s| {
            let handles: Vec<_> = prepared
                .into_iter()
                .map(|(k, model, replay, mut run)| {
                    s.spawn(move || {
                        let started = Instant::now();
                        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                            one_point(&mut run, replay, target)
                        }));
                        // Whatever happened, what the point created goes.
                        let warnings = std::mem::take(&mut run.warnings);
                        let left = run.finish();
                        let wall_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                        let (cluster, mut error) = match outcome {
                            Ok(Ok(o)) => (Some(o), None),
                            Ok(Err(e)) => (None, Some(e.to_string())),
                            Err(_) => (None, Some("the point's run panicked".to_string())),
                        };
                        if !left.is_empty() {
                            error = Some(format!(
                                "{}cleaning up: {}",
                                error.map_or(String::new(), |e| e + "; "),
                                left.join("; ")
                            ));
                        }
                        Point {
                            crash_point: k,
                            model,
                            cluster,
                            error,
                            wall_ms,
                            warnings,
                        }
                    })
                })
                .collect();
            handles.into_iter().filter_map(|h| h.join().ok()).collect()
        });
        measured.extend(points);
    }
    Ok(measured)
}

/// At most this many crash points run at once (each is a few processes, mostly waiting).
pub const SIDE_BY_SIDE: usize = 4;

fn one_point(run: &mut ClusterRun, replay: &Script, target: &str) -> Result<Outcome, RunError> {
    run.run(replay, &mut |_, _| {})?;
    if run.app.consumers.get(target).is_some_and(|c| c.is_running()) {
        return Err(RunError::Line {
            line: 0,
            text: "(explorer)".into(),
            why: format!(
                "the model's {target} died at this crash point, the cluster's was still running after {} effect(s): the cluster did something else",
                run.app.effects_of(target)
            ),
        });
    }
    run.drain(target)?;
    let group = run
        .app
        .consumers
        .get(target)
        .map(|c| c.config.group.clone())
        .unwrap_or_default();
    let figures = run.figures()?;
    let g = figures
        .iter()
        .find(|g| g.group == group)
        .ok_or_else(|| RunError::Line {
            line: 0,
            text: String::new(),
            why: format!("no figures for group {group}"),
        })?;
    Ok(Outcome {
        lost: g.partitions.iter().map(|p| p.audit.lost).sum(),
        redeliveries: g.partitions.iter().map(|p| p.audit.redeliveries).sum(),
        duplicate_rows: g.duplicate_rows,
    })
}

/// How long a point waits at most, about: the scenario's ticks, the session of the dead incarnation
/// and the settling interval after the drain.
pub fn least_wall_time(script: &Script, target: &str) -> Duration {
    let consumer = script.lines.iter().find_map(|l| match &l.command {
        offsetlab_scenario::Command::Consumer(c) if c.config.name == target => Some(c.config.clone()),
        _ => None,
    });
    let extra = consumer.map_or(0, |c| {
        c.session_timeout_ms + c.auto_commit_interval_ms.max(c.async_commit_latency_ms)
    });
    super::ticks(script) + Duration::from_millis(u64::try_from(extra).unwrap_or(0))
}
