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
pub mod clock;
pub mod days;
pub mod explore;
pub mod figures;
pub mod inspect;

use crate::admin::{Cluster, ClusterError};
use crate::names::{NameError, Prefix};
use crate::preflight::{self, Unrunnable};
use crate::produce::{model_records, Sender};
use crate::settings::ConsumerSettings;
use app::{AppError, Application};
use clock::{Misaligned, WallClock};
use figures::GroupFigures;
use inspect::Inspector;
use offsetlab_engine::lab::ResetSpec;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::sink::SinkFactory;
use offsetlab_engine::Lab;
use offsetlab_scenario::command::{Command, ResetOffsets, Seek, SeekTo};
use offsetlab_scenario::script::Line;
use offsetlab_scenario::{Runner, ScenarioError, Script};
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
}

#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error("{}", .0.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n"))]
    Unrunnable(Vec<Unrunnable>),
    #[error(transparent)]
    Names(#[from] NameError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    /// The model refused the line (or its expect failed): the scenario itself is wrong.
    #[error("{0}")]
    Model(ScenarioError),
    #[error("line {line}: `{text}`: on the cluster: {why}")]
    Line { line: usize, text: String, why: String },
    /// Ctrl-C or SIGTERM: the run stopped before line `line` (0: in the wait after the last).
    #[error("{}", match line {
        0 => "interrupted (Ctrl-C or SIGTERM) after the last line".to_string(),
        n => format!("line {n}: `{text}`: interrupted (Ctrl-C or SIGTERM) before it ran"),
    })]
    Interrupted { line: usize, text: String },
    /// `--reuse-topic` names what the scenario has no `topic` line for, or what the cluster
    /// does not have.
    #[error("--reuse-topic {topic}: {why}")]
    Reuse { topic: String, why: String },
    #[error("line {line}: expectation failed on the cluster: {failures}\n    {text}")]
    Expectation {
        line: usize,
        text: String,
        failures: String,
    },
    /// A partition of the run's topics lost its leader (its broker died) and the line (0: the
    /// figures after the last line) failed: the cluster cannot serve what the run asks.
    #[error("{}the cluster lost the leader of a partition of this run: {lost}; so: {why}", match line {
        0 => String::new(),
        n => format!("line {n}: `{text}`: "),
    })]
    LeaderLost {
        line: usize,
        text: String,
        lost: String,
        why: String,
    },
}

impl RunError {
    /// 1: an expect line did not hold; 2: the scenario cannot run (or the cluster refused what
    /// it asked); 3: the cluster, an agent or a file could not be reached — or a partition of
    /// the run lost its leader; 130: interrupted (128 + SIGINT, as shells report it).
    pub fn exit_code(&self) -> u8 {
        match self {
            RunError::Interrupted { .. } => INTERRUPTED_EXIT,
            RunError::Expectation { .. } | RunError::Model(ScenarioError::Expectation { .. }) => 1,
            RunError::Unrunnable(_) | RunError::Names(_) | RunError::Model(_) | RunError::Reuse { .. } => 2,
            RunError::Cluster(e) => e.exit_code(),
            RunError::Line { .. } | RunError::LeaderLost { .. } => 3,
        }
    }
}

/// What the model held before a line, that the line's real run needs.
#[derive(Debug, Default)]
struct Before {
    /// Per partition: a `produce` line's log ends (what it sends is the model's records from
    /// there), a `seek` line's positions (what it jumps over forward is skipped on purpose), a
    /// `poll` line's positions of the partitions its consumer held.
    offsets: BTreeMap<i32, i64>,
    /// A `poll` line rejoins a rebalance (eager) with partitions held: its revoke hook's
    /// commit comes first, and every partition and polled record is given up.
    rejoins: bool,
    /// A `poll` line's consumer was removed from its group while it was away (it did not
    /// poll within `max.poll.interval.ms`): its partitions are lost and its polled records
    /// dropped, nothing committed, and it joins again inside this poll.
    lost: bool,
    /// A `poll` line's consumer's records in flight (partition, offset), in order.
    in_flight: Vec<(i32, i64)>,
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
    // protocol and a sink whose offsets are Kafka's or the sink's own.
    let mut consumers_of: BTreeMap<String, Vec<&offsetlab_engine::consumer::ConsumerConfig>> =
        BTreeMap::new();
    for l in &script.lines {
        if let Command::Consumer(c) = &l.command {
            let group = consumers_of.entry(c.config.group.clone()).or_default();
            if !group.iter().any(|other| other.name == c.config.name) {
                group.push(&c.config);
            }
            if group.len() > 1 {
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
fn rebalance_not_mirrored(c: &offsetlab_engine::consumer::ConsumerConfig) -> Option<String> {
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
fn writes_to_reused(command: &Command, reuse: &BTreeSet<String>) -> Option<String> {
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
fn not_yet(command: &Command) -> Option<String> {
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
        Command::ShareConsumer(_)
        | Command::SharePoll(_)
        | Command::ShareAck(_)
        | Command::AlterShareGroup(_) => later("a share group (KIP-932)"),
        Command::Expect(e) if e.share_group.is_some() => later("expect share-group"),
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
        match &line.command {
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
    /// member's client id (the scenario consumer's name) and member id.
    pub fn members(&mut self, group: &str) -> Result<Vec<(String, String)>, RunError> {
        let name = self.opts.prefix.on_cluster(group);
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

    /// Waits until the first of `lines` (at model time `t`; none: the end of the script) may
    /// run, counting the real auto-commit timers' fires on the way (each an effect, which a
    /// fault plan may end in a crash). A line too late for a timer's next fire lets it happen
    /// first when that changes no figure ([`Self::early_fire`]), and says so: the warning.
    fn wait_until(&mut self, t: i64, lines: &[Line]) -> Result<Option<String>, RunError> {
        let line = lines.first();
        let mut said = false;
        let mut warnings: Vec<String> = Vec::new();
        let fail = |why: String| RunError::Line {
            line: line.map_or(0, |l| l.number),
            text: line.map_or(String::new(), |l| l.text.clone()),
            why,
        };
        let stop = || RunError::Interrupted {
            line: line.map_or(0, |l| l.number),
            text: line.map_or(String::new(), |l| l.text.clone()),
        };
        loop {
            // Before every line, not only inside a wait: a script without ticks stops too.
            if interrupted() {
                return Err(stop());
            }
            let now = Instant::now();
            let timers: Vec<(String, clock::TimerPhase)> = self
                .app
                .consumers
                .iter()
                .filter_map(|(n, c)| c.timer.map(|t| (n.clone(), t)))
                .collect();
            let at = match self
                .clock
                .schedule(t, now, timers.iter().map(|(n, t)| (n.as_str(), t)))
            {
                Ok(at) => at,
                Err(Misaligned { consumer, late_by }) => {
                    let why_not = |why: String| {
                        fail(format!(
                            "this line runs {late_by:.1?} too late for {consumer}'s auto-commit timer: its next fire comes before the line, where the model's comes after, and {why} (the cluster took longer than the scenario's clock allows; give the consumer a longer interval)"
                        ))
                    };
                    let said = self.early_fire(&consumer, t, lines).map_err(why_not)?;
                    warnings.push(format!(
                        "{late_by:.1?} late for {consumer}'s auto-commit timer: {said}"
                    ));
                    continue;
                }
            };
            let next_fire = timers
                .iter()
                .map(|(n, tp)| (tp.landed(tp.fires_seen + 1), n))
                .filter(|(when, _)| *when <= at)
                .min();
            let until = next_fire.as_ref().map_or(at, |(when, _)| *when);
            if let Some(tell) = self.opts.progress.filter(|_| !said) {
                if until.saturating_duration_since(now) >= Duration::from_secs(1) {
                    tell(at.saturating_duration_since(now));
                    said = true;
                }
            }
            // In slices, so that a Ctrl-C stops the run within a moment.
            while Instant::now() < until {
                if interrupted() {
                    return Err(stop());
                }
                std::thread::sleep(
                    until
                        .saturating_duration_since(Instant::now())
                        .min(Duration::from_millis(100)),
                );
            }
            match next_fire {
                Some((_, name)) => {
                    let name = name.clone();
                    self.await_timer_commit(&name);
                    self.app.timer_fired(&name).map_err(|e| fail(e.to_string()))?;
                }
                None => {
                    self.clock.ran(t, at, timers.iter().map(|(_, t)| t));
                    if warnings.is_empty() {
                        return Ok(None);
                    }
                    let warning = warnings.join("; ");
                    self.warnings.push(match line {
                        Some(l) => format!("line {}: `{}`: {warning}", l.number, l.text),
                        None => format!("after the last line: {warning}"),
                    });
                    return Ok(Some(warning));
                }
            }
        }
    }

    /// A real auto-commit fire of `consumer` that commits something new has surely happened
    /// ([`clock::TimerPhase::landed`]): waits until the cluster holds what it commits — every
    /// offset the consumer has stored — so that the lines after it see the commit even when
    /// the machine or the broker is slow, for up to [`TIMER_COMMIT_WAIT`] (then the run goes on,
    /// and any figure that differs says so).
    fn await_timer_commit(&mut self, consumer: &str) {
        if !self.app.timer_would_commit(consumer) {
            return;
        }
        let Some((group, topic, stored)) = self.app.stored(consumer) else {
            return;
        };
        let (group, topic) = (
            self.opts.prefix.on_cluster(&group),
            self.opts.prefix.on_cluster(&topic),
        );
        let partitions: Vec<i32> = stored.keys().copied().collect();
        let deadline = Instant::now() + TIMER_COMMIT_WAIT;
        while Instant::now() < deadline && !interrupted() {
            let held = self.inspector.committed(&group, &topic, &partitions);
            if held.is_ok_and(|h| {
                stored
                    .iter()
                    .all(|(p, o)| h.get(p).copied().flatten() == Some(*o))
            }) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// The first of `lines` (at model time `t`) is too late for `consumer`'s auto-commit timer:
    /// its next real fire comes before the line, where the model's comes after it and after
    /// every line until the fire's model instant. Let it happen first — the timer counted one
    /// fire ahead of the model's until then — only when that changes no figure; say why it
    /// does not, or why it would.
    ///
    /// The real fire commits what the consumer holds stored now (the offsets after what poll
    /// handed over); the model's commits what it holds at the fire's instant. They are the
    /// same if no line before that instant moves its offsets: no `poll` or `seek` of it — nor
    /// did the last move come after the fire could have happened. If the fire commits nothing
    /// new (every stored offset committed already), that is all; if it does, nothing before the
    /// model's fire may see the commit early: no `expect` on its group, no `reset-offsets` of
    /// the group, no `crash` of the consumer (the model's fire would then never come), and no
    /// fault plan counting its effects (the fire is one, in another order).
    fn early_fire(&mut self, consumer: &str, t: i64, lines: &[Line]) -> Result<String, String> {
        let Some(c) = self.app.consumers.get(consumer) else {
            return Err(format!("{consumer} is not running"));
        };
        let Some(timer) = c.timer else {
            return Err(format!("{consumer} has no timer"));
        };
        let k = timer.fires_before(t) + 1;
        let fire_at = timer.model_fire(k);
        let group = c.config.group.clone();
        if c.positions_moved.is_some_and(|moved| moved > timer.earliest(k)) {
            return Err(format!(
                "it may have fired while {consumer}'s stored offsets were still moving (a poll or a seek that ran across it), so what it committed is not known"
            ));
        }
        let commits = self.app.timer_would_commit(consumer);
        if commits && self.app.fault_armed_on(consumer) {
            return Err(format!(
                "it commits, an effect of {consumer} that the armed fault plan would count in another order"
            ));
        }
        let mut at = t;
        for l in lines {
            if at >= fire_at {
                break;
            }
            let seen = |why: &str| Err(format!("line {} (`{}`) {why}", l.number, l.text));
            match &l.command {
                Command::Tick(tick) => at = at.saturating_add(tick.duration_ms.max(0)),
                Command::Poll(p) if p.consumer == consumer => {
                    return seen("moves its stored offsets before the model's fire")
                }
                Command::Seek(s) if s.consumer == consumer => {
                    return seen("moves its stored offsets before the model's fire")
                }
                Command::Crash(x) if commits && x.consumer == consumer => {
                    return seen("crashes it before the model's fire, which then never commits")
                }
                Command::Fault(f) if commits && f.consumer == consumer => {
                    return seen("arms a fault plan that counts its commit in another order")
                }
                Command::Expect(e) if commits && e.group.as_ref().is_none_or(|g| *g == group) => {
                    return seen("reads the group's figures before the model's fire commits")
                }
                Command::ResetOffsets(r) if commits && r.group == group => {
                    return seen("reads the group's offsets before the model's fire commits")
                }
                _ => {}
            }
        }
        if let Some(c) = self.app.consumers.get_mut(consumer) {
            if let Some(timer) = c.timer.as_mut() {
                timer.ahead = k;
            }
        }
        let instant = offsetlab_engine::clock::format_instant(fire_at);
        Ok(if commits {
            format!(
                "its fire at {instant} commits before this line, as the model's will at {instant}: the same offsets ({consumer} moves none of them before then), and no line until then reads them"
            )
        } else {
            format!(
                "its fire at {instant} comes before this line and commits nothing, as the model's will at {instant} (every offset {consumer} holds is committed, and it moves none before then)"
            )
        })
    }

    /// What the model held before the line, that the line's real run needs.
    fn before(&self, line: &Line) -> Before {
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
    fn model_batch(&self, name: &str, before: &Before) -> Vec<(i32, i64)> {
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
    fn taken_over(
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

    pub(crate) fn partitions(&self, topic: &str) -> i32 {
        self.model
            .lab
            .topic(topic)
            .map_or(0, |t| t.partitions.len() as i32)
    }

    /// The line, for real.
    fn real(&mut self, line: &Line, t: i64, before: &Before) -> Result<String, LineFailure> {
        let prefix = self.opts.prefix.clone();
        Ok(match &line.command {
            Command::Topic(topic) if self.opts.reuse.contains(&topic.name) => {
                self.reuse_topic(&topic.name)?
            }
            Command::Topic(topic) => {
                let name = prefix.on_cluster(&topic.name);
                let partitions = self.partitions(&topic.name);
                // Its settings as Kafka's topic configs; what they do (retention, cleaning) the
                // cluster does on its own schedule.
                let configs: Vec<(String, String)> = topic
                    .config
                    .kafka_overrides()
                    .into_iter()
                    .map(|(k, v)| (k.to_string(), v))
                    .collect();
                self.cluster.create_topic(&name, partitions, &configs)?;
                self.created.push(name.clone());
                let set: Vec<String> = configs.iter().map(|(k, v)| format!("{k}={v}")).collect();
                if set.is_empty() {
                    format!("created topic {name} ({partitions} partition(s))")
                } else {
                    format!(
                        "created topic {name} ({partitions} partition(s), {})",
                        set.join(", ")
                    )
                }
            }
            Command::Produce(p) => {
                let name = prefix.on_cluster(&p.topic);
                if !self.created.contains(&name) {
                    return Err(LineFailure::Other(format!(
                        "topic {} was not created by this run: a run writes only to topics it created",
                        p.topic
                    )));
                }
                if self.sender.is_none() {
                    self.sender = Some(Sender::new(
                        &self.opts.bootstrap,
                        &self.opts.extra,
                        self.opts.timeout,
                    )?);
                }
                let mut sent = 0;
                for (&partition, &from) in &before.offsets {
                    let tp = TopicPartition::new(p.topic.clone(), partition);
                    let shift = self.shift_of(&p.topic);
                    let records: Vec<_> = model_records(&self.model.lab, &tp, from)
                        .map_err(|e| LineFailure::Other(e.to_string()))?
                        .into_iter()
                        .map(|mut r| {
                            r.timestamp = r.timestamp.saturating_add(shift);
                            r
                        })
                        .collect();
                    if let Some(sender) = &self.sender {
                        sender.send(&name, partition, &records)?;
                    }
                    sent += records.len();
                }
                format!("{sent} record(s) on {name}, at the model's offsets")
            }
            Command::Consumer(c) => self.start(&c.config.name, t, Some(&c.config))?,
            Command::Restart(r) => self.start(&r.consumer, t, None)?,
            Command::Poll(p) => {
                let assigned = self.model_assignment(&p.consumer);
                let plan = app::PollPlan {
                    batch: assigned.as_ref().map(|_| self.model_batch(&p.consumer, before)),
                    assigned,
                    rejoins: before.rejoins,
                    lost: before.lost,
                };
                let wanted = plan.batch.clone();
                let (n, crashed) = self.app.poll(&p.consumer, t, plan)?;
                if !crashed {
                    self.app
                        .took_over(&p.consumer, &self.taken_over(&p.consumer, before))?;
                }
                self.check_handed_out(&p.consumer)?;
                if let Some(wanted) = wanted.filter(|w| !crashed && n < w.len()) {
                    return Err(LineFailure::Other(self.short_poll(&p.consumer, n, &wanted)));
                }
                format!(
                    "the cluster handed {n} record(s) to {}{}",
                    p.consumer,
                    crash_note(crashed)
                )
            }
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

    /// Why a poll that handed out fewer records than the model's stops the run: what each
    /// partition that fell short holds on the cluster — a log that starts past the records the
    /// model handed out was cut by retention or DeleteRecords; one that ends before them never
    /// got them. Every figure after such a poll would differ, so the run says so here rather
    /// than at a later line.
    fn short_poll(&mut self, name: &str, n: usize, wanted: &[(i32, i64)]) -> String {
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
    fn check_handed_out(&self, name: &str) -> Result<(), LineFailure> {
        let Some(c) = self.app.consumers.get(name) else {
            return Ok(());
        };
        for r in c.in_flight_records() {
            let tp = TopicPartition::new(c.config.topic.clone(), r.partition);
            let log = self
                .model
                .lab
                .partition_log(&tp)
                .map_err(|e| LineFailure::Other(e.to_string()))?;
            let mut same = None;
            log.read(r.offset, 1, &mut |m| {
                if m.offset == r.offset {
                    same = Some(
                        m.key == r.key.as_ref().map(|k| k.as_bytes())
                            && m.value == r.value.as_ref().map(|v| v.as_bytes()),
                    );
                }
            });
            if same != Some(true) {
                return Err(LineFailure::Other(format!(
                    "the cluster handed out {tp}@{} that is not the model's record there: was the topic written by another client?",
                    r.offset
                )));
            }
        }
        Ok(())
    }

    fn start(
        &mut self,
        name: &str,
        t: i64,
        config: Option<&offsetlab_engine::consumer::ConsumerConfig>,
    ) -> Result<String, LineFailure> {
        let config = match config {
            Some(c) => c.clone(),
            None => self
                .app
                .consumers
                .get(name)
                .map(|c| c.config.clone())
                .ok_or_else(|| LineFailure::Other(format!("no consumer {name}")))?,
        };
        let mut settings = ConsumerSettings::for_consumer(
            &config,
            &self.opts.bootstrap,
            &self.opts.prefix,
            &self.opts.extra,
        );
        settings.joins_later = self.model_assignment(name).is_some_and(|a| a.is_empty());
        if let Some(output) = settings
            .output_topic
            .as_ref()
            .filter(|o| !self.created.contains(o))
        {
            return Err(LineFailure::Other(format!(
                "{name}'s output topic {output} was not created by this run: a run writes only to topics it created"
            )));
        }
        let partitions = self.partitions(&config.topic);
        self.groups.insert(settings.group.clone());
        // Where the model's consumer failed for want of an offset (`reset=none`): as it joined,
        // or at its first poll.
        let failed_at_start = self
            .model
            .lab
            .consumer(name)
            .is_ok_and(|c| matches!(c.state, offsetlab_engine::consumer::ConsumerState::Failed { .. }));
        let sinks = &mut self.sinks;
        let (group, kind) = (config.group.clone(), config.sink);
        self.app.start(
            &config,
            &settings,
            &self.opts.agent_program,
            partitions,
            t,
            failed_at_start,
            || sinks.open(&group, kind),
        )?;
        Ok(format!(
            "{name} started: a librdkafka consumer in its own process, in group {}",
            settings.group
        ))
    }

    /// A reused topic's `topic` line: the topic is taken as it is on the cluster — its records
    /// (offsets 0 to its end, no gaps) are read and appended to the model's new topic, so the
    /// model's log is the cluster's — and the run neither writes to it nor deletes it.
    fn reuse_topic(&mut self, topic: &str) -> Result<String, LineFailure> {
        let name = self.opts.prefix.on_cluster(topic);
        let partitions = self.partitions(topic);
        let mut logs = Vec::new();
        for p in 0..partitions {
            // Asked by a client of no group the run has: it only reads.
            let asker = self.opts.prefix.on_cluster("runner");
            let (low, high) = self.inspector.watermarks(&asker, &name, p)?;
            if low != 0 {
                return Err(LineFailure::Other(format!(
                    "{name}-{p} starts at offset {low} (retention or DeleteRecords): a reused topic's log must start at 0, as the model's does"
                )));
            }
            logs.push(self.inspector.read_log(&asker, &name, p, high)?);
        }
        // Its records were moved onto the day the earlier run wrote them ([`days`]): the day of
        // its first record, from the model's start, moves them back.
        // (On the page of `serve --bootstrap-server`, whose clock is the wall clock, the
        // records keep the cluster's timestamps.)
        let first = logs.iter().flatten().filter_map(|r| r.timestamp).min();
        let shift = match (self.origin, first) {
            (Some((start, shift)), Some(t)) if shift != 0 => days::shift(start, t),
            _ => self.shift(),
        };
        self.reused_shift.insert(topic.to_string(), shift);
        let mut read = 0;
        for (p, records) in (0..partitions).zip(logs) {
            let sent: Vec<offsetlab_engine::lab::SentRecord> = records
                .into_iter()
                .map(|r| offsetlab_engine::lab::SentRecord {
                    key: r.key,
                    value: r.value,
                    timestamp: r.timestamp.map(|t| t.saturating_sub(shift)),
                    headers: r
                        .headers
                        .into_iter()
                        .map(|(k, v)| offsetlab_engine::lab::SentHeader::from((k, v)))
                        .collect(),
                    batch_timestamp: None,
                })
                .collect();
            for chunk in sent.chunks(offsetlab_engine::lab::MAX_SEND_RECORDS) {
                self.model
                    .lab
                    .send(topic, p, chunk, "the reused topic")
                    .map_err(|e| {
                        LineFailure::Other(format!("the model could not take {name}-{p}'s records: {e}"))
                    })?;
            }
            read += sent.len();
        }
        Ok(format!(
            "reused topic {name} ({partitions} partition(s)): its {read} record(s) read into the model; the run will not write to it or delete it"
        ))
    }

    /// `seek NAME to=… [partition=P]`: each target found on the cluster (its log start or end,
    /// the offset, or the first offset at or after the instant in the records' timestamps —
    /// the model's, as a run produces them), which must be where the model's consumer went;
    /// then the real consumer seeks there.
    fn seek(&mut self, s: &Seek, before: &BTreeMap<i32, i64>) -> Result<String, LineFailure> {
        let Some(c) = self.app.consumers.get(&s.consumer) else {
            return Err(LineFailure::Other(format!(
                "no consumer {} on the cluster",
                s.consumer
            )));
        };
        let (group, topic) = (
            self.opts.prefix.on_cluster(&c.config.group),
            self.opts.prefix.on_cluster(&c.config.topic),
        );
        let model = self
            .model
            .lab
            .consumer(&s.consumer)
            .map_err(|e| LineFailure::Other(e.to_string()))?;
        let wanted: Vec<(i32, i64)> = model
            .assignment
            .iter()
            .filter(|(tp, _)| tp.topic == model.config.topic && s.partition.is_none_or(|p| p == tp.partition))
            .map(|(tp, f)| (tp.partition, f.position))
            .collect();
        let now = self.model.lab.now();
        let shift = self.shift_of(&model.config.topic);
        let mut moves = Vec::new();
        for (p, model_target) in wanted {
            let (low, high) = self.inspector.watermarks(&group, &topic, p)?;
            let target = match &s.to {
                SeekTo::Earliest => low,
                SeekTo::Latest => high,
                SeekTo::Offset(o) => *o,
                // The model's instant, moved onto the cluster's day as its records were.
                SeekTo::At(ts, _) => self
                    .inspector
                    .offset_for_time(&group, &topic, p, ts.saturating_add(shift))?
                    .unwrap_or(high),
                SeekTo::Ago(d) => self
                    .inspector
                    .offset_for_time(&group, &topic, p, now.saturating_sub(*d).saturating_add(shift))?
                    .unwrap_or(high),
            };
            if target != model_target {
                return Err(LineFailure::Other(format!(
                    "the cluster finds {}-{p} at offset {target} for this seek, the model at {model_target}",
                    s.consumer
                )));
            }
            let from = before.get(&p).copied().unwrap_or(target);
            moves.push(app::Move {
                partition: p,
                from,
                to: target,
                log: (low, high),
            });
        }
        self.app.seek(&s.consumer, &moves)?;
        let text: Vec<String> = moves
            .iter()
            .map(|m| format!("{topic}-{}: {} → {}", m.partition, m.from, m.to))
            .collect();
        Ok(format!("{} seeks {}", s.consumer, text.join(", ")))
    }

    /// `reset-offsets … [execute]`: planned against the cluster's own offsets; with `execute`,
    /// committed from outside the group (the model has checked the group has no members).
    fn reset(&mut self, r: &ResetOffsets) -> Result<String, LineFailure> {
        let group = self.opts.prefix.on_cluster(&r.group);
        let topic = self.opts.prefix.on_cluster(&r.topic);
        self.groups.insert(group.clone());
        let chosen: Vec<i32> = match &r.partitions {
            Some(ps) => ps.clone(),
            None => (0..self.partitions(&r.topic)).collect(),
        };
        let current = self.inspector.committed(&group, &topic, &chosen)?;
        let shift = self.shift_of(&r.topic);
        let mut rows = Vec::new();
        for &p in &chosen {
            let (low, high) = self.inspector.watermarks(&group, &topic, p)?;
            let now = current.get(&p).copied().flatten();
            let target = match r.spec {
                ResetSpec::ToEarliest => low,
                ResetSpec::ToLatest => high,
                ResetSpec::ToOffset(o) => o.clamp(low, high),
                ResetSpec::ShiftBy(d) => match now {
                    Some(c) => c.saturating_add(d).clamp(low, high),
                    None => {
                        return Err(LineFailure::Other(format!(
                            "--shift-by needs a committed offset; group {group} has none for {topic}-{p}"
                        )))
                    }
                },
                // Kafka's tool: a partition without a committed offset goes to its end.
                ResetSpec::ToCurrent => now.unwrap_or(high),
                // The records' timestamps are the model's moved onto the cluster's day (a run
                // produces them so): the instant asked for is moved the same way.
                ResetSpec::ToDatetime(ts) => self
                    .inspector
                    .offset_for_time(&group, &topic, p, ts.saturating_add(shift))?
                    .unwrap_or(high),
                ResetSpec::ByDuration(d) => self
                    .inspector
                    .offset_for_time(
                        &group,
                        &topic,
                        p,
                        self.model.lab.now().saturating_sub(d).saturating_add(shift),
                    )?
                    .unwrap_or(high),
            };
            rows.push(app::ResetRow {
                partition: p,
                current: now,
                target,
                log: (low, high),
            });
        }
        let text: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{topic}-{}: {} → {}",
                    r.partition,
                    r.current.map_or("-".into(), |o| o.to_string()),
                    r.target
                )
            })
            .collect();
        if !r.execute {
            return Ok(format!("dry run: {}", text.join(", ")));
        }
        let offsets: Vec<(i32, i64)> = rows.iter().map(|r| (r.partition, r.target)).collect();
        self.inspector.commit(&group, &topic, &offsets)?;
        self.app.reset_group(&r.group, &r.topic, &rows);
        Ok(format!("committed from outside the group: {}", text.join(", ")))
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

/// How long a real auto-commit fire's commit may take to appear on the cluster after the
/// instant it surely happened.
const TIMER_COMMIT_WAIT: Duration = Duration::from_secs(3);

/// A run uses only groups of its own: one that exists on the cluster (any state but Dead) is
/// refused before the run touches it.
fn refuse_existing_group(cluster: &Cluster, name: &str) -> Result<(), RunError> {
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
fn script_groups(script: &Script) -> BTreeSet<String> {
    script
        .lines
        .iter()
        .filter_map(|l| match &l.command {
            Command::Consumer(c) => Some(c.config.group.clone()),
            Command::ResetOffsets(r) => Some(r.group.clone()),
            _ => None,
        })
        .collect()
}

fn crash_note(crashed: bool) -> &'static str {
    if crashed {
        "; then its fault plan killed it (SIGKILL)"
    } else {
        ""
    }
}

/// Why one line failed on the cluster.
#[derive(Debug)]
pub(crate) enum LineFailure {
    Cluster(ClusterError),
    Expectation(String),
    Other(String),
}

impl From<ClusterError> for LineFailure {
    fn from(e: ClusterError) -> Self {
        LineFailure::Cluster(e)
    }
}

impl From<AppError> for LineFailure {
    fn from(e: AppError) -> Self {
        LineFailure::Other(e.to_string())
    }
}
