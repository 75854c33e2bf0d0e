//! A scenario run on a real Kafka cluster, with the model beside it.
//!
//! The model ([`offsetlab_scenario::Runner`] on an in-memory lab) applies every line first:
//! it refuses what the lab would refuse, gives the records to produce (so the cluster's log
//! holds the model's records at the model's offsets — checked on every delivery), and its log
//! stands in for the cluster's in the audit. Then the line runs for real:
//!
//! | line | on the cluster |
//! |---|---|
//! | `topic` | created with the run's prefix; one that exists is refused before anything runs |
//! | `produce` | the model's new records, sent by an idempotent producer |
//! | `consumer`, `restart` | a new `offsetlab agent` process: a real librdkafka consumer |
//! | `poll`, `process`, `commit` | the agent polls and commits; the runner's [`app`] processes into the group's SQLite sink and audits |
//! | `crash` | `SIGKILL` of the agent |
//! | `close` | the client's `close()` |
//! | `tick D` | D of wall time passes before the next line ([`clock`]) |
//! | `reset-offsets … execute` | the group's offsets committed from outside the group |
//! | `fault NAME after=N` | the agent is killed right after its N-th effect |
//! | `expect` | checked against the cluster's figures ([`figures`]) |
//!
//! Nothing it did not create is touched: topics and groups carry the run's prefix, produce
//! only goes to topics the run created, and [`ClusterRun::finish`] deletes what it created.

pub mod agent_process;
pub mod app;
mod check;
pub mod clock;
mod consumers;
pub mod days;
mod epochs;
mod error;
pub mod explore;
pub mod figures;
pub mod inspect;
mod lines;
mod moves;
pub mod share;
mod topics;
mod waits;

pub use check::{check, ticks};
use check::{not_yet, rebalance_not_mirrored, refuse_existing_group, script_groups};
pub(crate) use error::LineFailure;
pub use error::RunError;

use crate::admin::{Cluster, ClusterError};
use crate::names::Prefix;
use crate::preflight::{self, Unrunnable};
use crate::produce::Sender;
use app::Application;
use clock::WallClock;
use figures::GroupFigures;
use inspect::Inspector;
use offsetlab_engine::Lab;
use offsetlab_scenario::command::Command;
use offsetlab_scenario::script::Line;
use offsetlab_scenario::{Runner, Script};
use offsetlab_sqlite::SqliteSinks;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Set by [`interrupt`] (the CLI's Ctrl-C): a run stops at its next wait or line, and its
/// caller cleans up what it created.
static INTERRUPTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Asks every run of this process to stop.
pub fn interrupt() {
    INTERRUPTED.store(true, std::sync::atomic::Ordering::SeqCst);
}

/// The exit code of a run stopped by Ctrl-C or SIGTERM: 128 + SIGINT, as shells report it.
pub const INTERRUPTED_EXIT: u8 = 130;

/// Whether this process was asked to stop (Ctrl-C, SIGTERM).
pub fn interrupted() -> bool {
    INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst)
}

/// How a run reaches its cluster and what it names things there.
#[derive(Debug, Clone)]
pub struct RunOptions {
    pub bootstrap: String,
    /// librdkafka properties for every client of the run (`-X`, `--command-config`).
    pub extra: Vec<(String, String)>,
    pub prefix: Prefix,
    /// Leave the run's topics and groups on the cluster.
    pub keep: bool,
    /// The `offsetlab` binary, started as `offsetlab agent` for each consumer incarnation.
    pub agent_program: PathBuf,
    /// Where the groups' SQLite sinks are written.
    pub sink_dir: PathBuf,
    /// How long one request to the cluster may take.
    pub timeout: Duration,
    /// Told how long the run is about to wait for wall time (once a wait, and only for a
    /// second or more): the caller says so where its user looks; `None` says nothing.
    pub progress: Option<fn(Duration)>,
    /// Scenario topics the run takes as they are on the cluster (`--reuse-topic`, under the
    /// run's prefix) instead of creating them: their records are read into the model first,
    /// and the run never writes to them nor deletes them.
    pub reuse: BTreeSet<String>,
    /// How a consumer-protocol group's epochs are asked of the cluster (ConsumerGroupDescribe):
    /// `None` refuses `expect` lines of them when they run.
    pub describe_group: Option<crate::consumer_group::DescribeConsumerGroup>,
    /// How a classic group's generations are read off the cluster (`__consumer_offsets`):
    /// `None` refuses `expect generation=` when it runs.
    pub stored_generations: Option<crate::consumer_group::StoredGenerations>,
}

/// A window of a partition's log on the cluster ([`ClusterRun::log_window`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogWindow {
    pub log_start: i64,
    pub log_end: i64,
    pub records: Vec<inspect::ReadRecord>,
}

/// What one line did on the cluster, for the caller to print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub did: String,
    /// The line ran later than the scenario's clock allows for a running auto-commit timer,
    /// which changes no figure here: what happened and why it does not matter.
    pub warning: Option<String>,
}

pub struct ClusterRun {
    opts: RunOptions,
    cluster: Cluster,
    sender: Option<Sender>,
    inspector: Inspector,
    sinks: SqliteSinks,
    /// The model, a line ahead of the cluster.
    pub model: Runner,
    pub app: Application,
    /// The run's share consumers, and each share group's window as the cluster showed it.
    pub shares: share::ShareApp,
    clock: WallClock,
    /// Topics the run created (cluster names), and every group it used.
    created: Vec<String>,
    groups: BTreeSet<String>,
    /// The model's time when the run's first line ran, and the whole days from it to the wall
    /// clock then: what the run adds to the model's timestamps on the cluster ([`days`]). A
    /// run's model starts at the lab's epoch (months of days); the page of `serve
    /// --bootstrap-server` follows the wall clock (none).
    origin: Option<(i64, i64)>,
    /// A reused topic's own shift (scenario name): the days its first record was moved by.
    reused_shift: BTreeMap<String, i64>,
    /// Every line that ran late for a timer where that changed no figure, as said.
    pub warnings: Vec<String>,
}

impl ClusterRun {
    /// Checks the script, reaches the cluster, and refuses a run whose topics or groups exist
    /// there already — all before anything is created.
    pub fn prepare(script: &Script, opts: RunOptions) -> Result<Self, RunError> {
        check(script, &opts.prefix, &opts.reuse)?;
        let cluster = Cluster::connect(&opts.bootstrap, &opts.extra, opts.timeout)?;
        for line in &script.lines {
            if let Command::Topic(t) = &line.command {
                let name = opts.prefix.on_cluster(&t.name);
                let reused = opts.reuse.contains(&t.name);
                match cluster.topic_partitions(&name)? {
                    Some(_) if !reused => return Err(ClusterError::TopicExists(name).into()),
                    Some(n) if n != t.config.partitions => {
                        return Err(RunError::Reuse {
                            topic: t.name.clone(),
                            why: format!(
                                "{name} has {n} partition(s) on the cluster, the scenario's line {} says {}",
                                line.number, t.config.partitions
                            ),
                        })
                    }
                    None if reused => {
                        return Err(RunError::Reuse {
                            topic: t.name.clone(),
                            why: format!("the cluster has no topic {name} to reuse"),
                        })
                    }
                    _ => {}
                }
            }
        }
        for group in script_groups(script) {
            refuse_existing_group(&cluster, &opts.prefix.on_cluster(&group))?;
        }
        // Share consumers (and a share group's configs) go through confluent-kafka: said before anything is created.
        if let Some(line) = script
            .lines
            .iter()
            .find(|l| matches!(l.command, Command::ShareConsumer(_) | Command::AlterShareGroup(_)))
        {
            if let Some(why) = share::python_cannot_run_share_agents(&share::python()) {
                return Err(RunError::Unrunnable(vec![Unrunnable {
                    line: line.number,
                    text: line.text.clone(),
                    why,
                }]));
            }
        }
        let sinks = SqliteSinks::new(&opts.sink_dir).map_err(|e| RunError::Line {
            line: 0,
            text: String::new(),
            why: format!("the sinks' directory {}: {e}", opts.sink_dir.display()),
        })?;
        let model = Runner::new(Lab::default());
        Ok(Self {
            inspector: Inspector::new(&opts.bootstrap, &opts.extra, opts.timeout),
            cluster,
            sender: None,
            sinks,
            model,
            app: Application::new(),
            shares: share::ShareApp::default(),
            clock: WallClock::starting_now(0),
            created: Vec::new(),
            groups: BTreeSet::new(),
            origin: None,
            reused_shift: BTreeMap::new(),
            warnings: Vec::new(),
            opts,
        })
    }

    pub fn prefix(&self) -> &Prefix {
        &self.opts.prefix
    }

    /// What is added to the model's timestamps of `topic` (the scenario's name) on the cluster
    /// ([`days`]): a reused topic's own days, the run's for a topic it created.
    pub fn shift_of(&self, topic: &str) -> i64 {
        self.reused_shift.get(topic).copied().unwrap_or(self.shift())
    }

    /// The days the run adds to the model's timestamps ([`days`]), once its first line ran.
    fn shift(&self) -> i64 {
        self.origin.map_or(0, |(_, shift)| shift)
    }

    /// Runs every line: the model first, then the cluster. Stops at the first error.
    pub fn run(&mut self, script: &Script, on_line: &mut dyn FnMut(&Line, &Step)) -> Result<(), RunError> {
        self.clock = WallClock::starting_now(self.model.lab.now());
        for i in 0..script.lines.len() {
            self.step(&script.lines[i..], on_line)?;
        }
        // The script's last ticks pass too.
        let end = self.model.lab.now();
        self.wait_until(end, &[]).map(|_| ())
    }

    /// Runs the first of `lines` (the model first, then the cluster); the lines after it are
    /// what a late timer's fire would come before.
    fn step(&mut self, lines: &[Line], on_line: &mut dyn FnMut(&Line, &Step)) -> Result<(), RunError> {
        let Some(line) = lines.first() else {
            return Ok(());
        };
        let t = self.model.lab.now();
        let warning = self.wait_until(t, lines)?;
        self.wait_for_share_locks()
            .map_err(|e| self.line_error(line, e))?;
        // What the model's clock landed by now (async commits) lands for real too.
        self.app.land_all_async(t).map_err(|e| RunError::Line {
            line: line.number,
            text: line.text.clone(),
            why: e.to_string(),
        })?;
        let mut step = self.run_line(line, t)?;
        step.warning = warning;
        on_line(line, &step);
        Ok(())
    }

    /// One line at model time `t`: refused if it would join a rebalance, then on the model,
    /// then on the cluster.
    fn run_line(&mut self, line: &Line, t: i64) -> Result<Step, RunError> {
        if self.origin.is_none() {
            let start = self.model.lab.now();
            self.origin = Some((start, days::shift(start, days::wall_now())));
        }
        let before = self.before(line);
        self.joins_as_mirrored(line)?;
        self.model.apply(line).map_err(RunError::Model)?;
        let did = self
            .real(line, t, &before)
            .map_err(|e| self.line_error(line, e))
            .map_err(|e| self.with_lost_leaders(e, Some(line)))?;
        Ok(Step { did, warning: None })
    }

    /// A line that failed (but for an expectation) while a partition of the run's topics had
    /// lost its leader failed for that: said first, with what the line met.
    fn with_lost_leaders(&self, e: RunError, at: Option<&Line>) -> RunError {
        if !matches!(e, RunError::Line { .. } | RunError::Cluster(_)) {
            return e;
        }
        let (line, text) = at.map_or((0, String::new()), |l| (l.number, l.text.clone()));
        let mut topics = self.created.clone();
        topics.extend(self.opts.reuse.iter().map(|t| self.opts.prefix.on_cluster(t)));
        let lost = self.cluster.lost_leaders(&topics);
        if lost.is_empty() {
            return e;
        }
        let why = match e {
            RunError::Line { why, .. } => why,
            other => other.to_string(),
        };
        RunError::LeaderLost {
            line,
            text,
            lost: lost.join("; "),
            why,
        }
    }

    fn line_error(&self, line: &Line, e: LineFailure) -> RunError {
        match e {
            LineFailure::Cluster(c) => RunError::Cluster(c),
            LineFailure::Expectation(failures) => RunError::Expectation {
                line: line.number,
                text: line.text.clone(),
                failures,
            },
            LineFailure::Other(why) => RunError::Line {
                line: line.number,
                text: line.text.clone(),
                why,
            },
        }
    }

    /// Whether the page of `serve --bootstrap-server` may run `line`: what a run refuses, and
    /// `tick` and `fault` — the page's lab follows wall time, and the runner does not watch a
    /// real timer between the page's requests.
    pub fn check_line(&self, line: &Line) -> Result<(), RunError> {
        let refused = |why: String| {
            RunError::Unrunnable(vec![Unrunnable {
                line: line.number,
                text: line.text.clone(),
                why,
            }])
        };
        if let Some(why) = preflight::why_not(&line.command).or_else(|| not_yet(&line.command)) {
            return Err(refused(why));
        }
        if matches!(
            line.command,
            Command::ShareConsumer(_) | Command::AlterShareGroup(_)
        ) {
            if let Some(why) = share::python_cannot_run_share_agents(&share::python()) {
                return Err(refused(why));
            }
        }
        match &line.command {
            Command::Commit(c) if self.model.lab.is_share_consumer(&c.consumer) => Err(refused(
                "commit on a share consumer is not run on a cluster yet (it runs on the model)".into(),
            )),
            Command::Tick(_) => Err(refused("time is the cluster's: the page's clock follows wall time, so wait instead".into())),
            Command::Fault(_) => Err(refused("a fault plan counts the client's timer commits, which the page does not watch: use `offsetlab run` or `explore`".into())),
            _ => {
                self.opts.prefix.check(&Script { lines: vec![line.clone()] })?;
                Ok(())
            }
        }
    }

    /// Runs one of the page's lines now: the model brought to `now` (the page's lab follows
    /// wall time), then the line on the model and on the cluster. Nothing waits.
    pub fn apply_now(&mut self, line: &Line, now: i64) -> Result<Step, RunError> {
        self.check_line(line)?;
        let behind = now - self.model.lab.now();
        if behind > 0 {
            self.model.lab.tick(behind).map_err(|e| RunError::Line {
                line: line.number,
                text: line.text.clone(),
                why: format!("the model could not follow the clock: {e}"),
            })?;
        }
        match &line.command {
            Command::Consumer(c) => self.group_is_ours(&c.config.group)?,
            Command::ResetOffsets(r) => self.group_is_ours(&r.group)?,
            _ => {}
        }
        let t = self.model.lab.now();
        self.run_line(line, t)
    }

    /// The model's assignment of running consumer `name` (partitions of its topic), which a
    /// real poll waits for; `None` when the model's consumer is not running after the line (a
    /// fault killed it inside the poll), and the real poll takes what the group gives.
    fn model_assignment(&self, name: &str) -> Option<Vec<i32>> {
        let c = self.model.lab.consumer(name).ok().filter(|c| c.is_running())?;
        Some(
            c.assignment
                .keys()
                .filter(|tp| tp.topic == c.config.topic)
                .map(|tp| tp.partition)
                .collect(),
        )
    }

    /// A consumer that starts while its group has members joins a rebalance, as on Kafka: its
    /// polls get nothing until the coordinator has every member's rejoin — a running member
    /// rejoins inside its next poll (its revoke hook first), a dead one is dropped when its
    /// session runs out — and the model's [`Self::model_assignment`] is what each real poll
    /// waits for. Refused (asked of the model before the line runs) when a running member or
    /// the newcomer rebalances in a way the runner does not mirror yet
    /// ([`rebalance_not_mirrored`]): the page's lines are checked here, a run's before it
    /// starts too.
    fn joins_as_mirrored(&self, line: &Line) -> Result<(), RunError> {
        let lab = &self.model.lab;
        let (name, config) = match &line.command {
            Command::Consumer(c) => (c.config.name.clone(), c.config.clone()),
            Command::Restart(r) => match lab.consumer(&r.consumer) {
                Ok(c) => (r.consumer.clone(), c.config.clone()),
                Err(_) => return Ok(()),
            },
            _ => return Ok(()),
        };
        let members = lab
            .group_view(&config.group)
            .map(|g| g.members)
            .unwrap_or_default();
        let live: Vec<&offsetlab_engine::consumer::Consumer> = lab
            .consumers()
            .values()
            .filter(|c| c.is_running() && c.config.name != name && members.contains(&c.member_id()))
            .collect();
        let why = live
            .iter()
            .map(|c| &c.config)
            .chain(std::iter::once(&config))
            .find_map(rebalance_not_mirrored);
        match (live.first(), why) {
            (Some(running), Some(why)) => Err(RunError::Unrunnable(vec![Unrunnable {
                line: line.number,
                text: line.text.clone(),
                why: format!(
                    "{name} would join group {} while {} is running in it: {why}",
                    config.group,
                    running.member_id()
                ),
            }])),
            _ => Ok(()),
        }
    }

    /// A group the page names for the first time must not exist on the cluster yet: the run
    /// uses (and at its end deletes) only groups of its own.
    fn group_is_ours(&self, group: &str) -> Result<(), RunError> {
        let name = self.opts.prefix.on_cluster(group);
        if self.groups.contains(&name) {
            return Ok(());
        }
        refuse_existing_group(&self.cluster, &name)
    }

    /// The members the cluster's coordinator lists for `group` (the scenario's name): each
    /// member's client id (the scenario consumer's name) and member id. A consumer-protocol
    /// group is not one DescribeGroups answers for: ConsumerGroupDescribe is asked first.
    pub fn members(&mut self, group: &str) -> Result<Vec<(String, String)>, RunError> {
        let name = self.opts.prefix.on_cluster(group);
        let consumer_protocol = self
            .model
            .lab
            .groups()
            .get(group)
            .is_some_and(|g| g.consumer.is_some());
        if let Some(describe) = self.opts.describe_group.filter(|_| consumer_protocol) {
            if let Ok(Some(d)) = describe(&self.opts.bootstrap, &self.opts.extra, &name) {
                return Ok(d
                    .members
                    .into_iter()
                    .map(|m| (m.client_id, m.member_id))
                    .collect());
            }
        }
        Ok(self.cluster.members(&name)?)
    }

    pub fn bootstrap(&self) -> &str {
        &self.opts.bootstrap
    }

    /// A window of one of the run's topics as the cluster holds it: its log start and end
    /// (ListOffsets) and up to `max` records from `from` (Fetch; from the log start when
    /// `None`). A topic the run did not create or reuse is not read.
    pub fn log_window(
        &mut self,
        topic: &str,
        partition: i32,
        from: Option<i64>,
        max: usize,
    ) -> Result<LogWindow, RunError> {
        let name = self.opts.prefix.on_cluster(topic);
        if !self.created.contains(&name) && !self.opts.reuse.contains(topic) {
            return Err(RunError::Line {
                line: 0,
                text: String::new(),
                why: format!("topic {topic} is not one of this run's"),
            });
        }
        let asker = self.opts.prefix.on_cluster("runner");
        let (log_start, log_end) = self.inspector.watermarks(&asker, &name, partition)?;
        // A window is a view: what a reader gets within a moment is enough.
        let shift = self.shift_of(topic);
        let mut records = self.inspector.read(
            &asker,
            &name,
            partition,
            from.unwrap_or(log_start).max(log_start),
            max,
            log_end,
            Duration::from_secs(2),
        )?;
        // On the model's clock, as the page shows every instant.
        for r in &mut records {
            r.timestamp = r.timestamp.map(|t| t.saturating_sub(shift));
        }
        Ok(LogWindow {
            log_start,
            log_end,
            records,
        })
    }

    pub(crate) fn partitions(&self, topic: &str) -> i32 {
        self.model
            .lab
            .topic(topic)
            .map_or(0, |t| t.partitions.len() as i32)
    }

    /// The cluster's figures of every group the run used, beside nothing: see
    /// [`figures::compare`] for the model's next to them.
    pub fn figures(&mut self) -> Result<Vec<GroupFigures>, RunError> {
        figures::real(self)
            .map_err(|e| match e {
                LineFailure::Cluster(c) => RunError::Cluster(c),
                LineFailure::Expectation(why) | LineFailure::Other(why) => RunError::Line {
                    line: 0,
                    text: String::new(),
                    why,
                },
            })
            .map_err(|e| self.with_lost_leaders(e, None))
    }

    /// Ends the run: every running consumer closed, then — unless `--keep` — the run's topics
    /// and groups deleted. Each failure is named; none stops the others.
    pub fn finish(&mut self) -> Vec<String> {
        let mut failed = Vec::new();
        let running: Vec<String> = self
            .app
            .consumers
            .iter()
            .filter(|(_, c)| c.is_running())
            .map(|(n, _)| n.clone())
            .collect();
        for name in running {
            if let Err(e) = self.app.close(&name) {
                failed.push(e.to_string());
            }
        }
        failed.extend(self.close_shares());
        // A crashed member holds its group until its session runs out: wait that out before
        // deleting (below), killing nothing more.
        if self.opts.keep {
            return failed;
        }
        let groups: Vec<String> = self.groups.iter().cloned().collect();
        failed.extend(
            self.cluster
                .delete(&self.created, &[])
                .iter()
                .map(ToString::to_string),
        );
        // A crashed member holds its group until its session times out: a group is deleted
        // once it is empty.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = self.cluster.delete(&[], &groups);
            let busy = left
                .iter()
                .any(|e| e.to_string().contains("NonEmptyGroup") || e.to_string().contains("not empty"));
            if left.is_empty() || !busy || Instant::now() >= deadline {
                failed.extend(left.iter().map(ToString::to_string));
                break;
            }
            std::thread::sleep(Duration::from_millis(500));
        }
        self.created.clear();
        self.groups.clear();
        failed
    }

    /// After an explorer crash: restarts `target` if it is down, consumes to the end of the
    /// log, lets its timers and asynchronous commits settle, and takes what came after — the
    /// explorer's drain, for real.
    pub fn drain(&mut self, target: &str) -> Result<(), RunError> {
        let fail = |why: String| RunError::Line {
            line: 0,
            text: "(explorer drain)".into(),
            why,
        };
        let t = self.model.lab.now();
        let running = self.app.consumers.get(target).is_some_and(|c| c.is_running());
        if !running {
            self.start(target, t, None).map_err(|e| fail(format!("{e:?}")))?;
        }
        for _ in 0..10_000 {
            let (n, _) = self
                .app
                .poll(target, t, app::PollPlan::default())
                .map_err(|e| fail(e.to_string()))?;
            let waiting = self.app.consumers.get(target).map_or(0, |c| c.in_flight());
            if waiting > 0 {
                self.app
                    .process(target, None, t)
                    .map_err(|e| fail(e.to_string()))?;
            }
            if n == 0 && waiting == 0 {
                break;
            }
        }
        let settle = self.app.consumers.get(target).map_or(1, |c| {
            c.config
                .auto_commit_interval_ms
                .max(c.config.async_commit_latency_ms)
                + 1
        });
        self.model.lab.tick(settle).map_err(|e| fail(e.to_string()))?;
        let end = self.model.lab.now();
        self.wait_until(end, &[])?;
        self.app.land_all_async(end).map_err(|e| fail(e.to_string()))?;
        self.app
            .poll(target, end, app::PollPlan::default())
            .map_err(|e| fail(e.to_string()))?;
        if self.app.consumers.get(target).is_some_and(|c| c.in_flight() > 0) {
            self.app
                .process(target, None, end)
                .map_err(|e| fail(e.to_string()))?;
        }
        Ok(())
    }

    pub(crate) fn inspector(&mut self) -> &mut Inspector {
        &mut self.inspector
    }
}
