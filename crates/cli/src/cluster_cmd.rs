//! `offsetlab run FILE --bootstrap-server …`: a scenario on a real Kafka cluster, its real
//! consumers in processes of their own, the model's figures beside the cluster's with
//! `--compare`.

use crate::exit;
use crate::run_cmd::Input;
use offsetlab_cluster::names::Prefix;
use offsetlab_cluster::run::figures::{self, GroupFigures};
use offsetlab_cluster::run::{self as cluster_run, ClusterRun, RunError, RunOptions};
use offsetlab_scenario::Script;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How a command reaches a real cluster: `--bootstrap-server`, `-X`, `--command-config`.
#[derive(clap::Args, Clone, Default)]
pub struct ClusterArgs {
    /// Run against a real Kafka cluster (or any Kafka-compatible broker) instead of the model,
    /// e.g. 127.0.0.1:9092. Every consumer is a real librdkafka client in its own process;
    /// `crash` is SIGKILL, `tick D` waits D. See docs/CLUSTER.md
    #[arg(long, value_name = "HOST:PORT")]
    pub bootstrap_server: Option<String>,
    /// A librdkafka property for every client of the run (SASL, TLS, …), as kcat takes it;
    /// repeatable: -X security.protocol=SASL_SSL -X sasl.mechanism=PLAIN
    #[arg(short = 'X', value_name = "KEY=VALUE", requires = "bootstrap_server")]
    pub property: Vec<String>,
    /// A file of librdkafka properties, one `key=value` per line (`#` comments), as Kafka's
    /// tools take --command-config; -X properties are applied after it
    #[arg(long, value_name = "FILE", requires = "bootstrap_server")]
    pub command_config: Option<PathBuf>,
    /// The prefix of every topic and group the run creates (default: offsetlab-<run id>-)
    #[arg(long, requires = "bootstrap_server")]
    pub prefix: Option<String>,
    /// Leave the run's topics and groups on the cluster when it ends
    #[arg(long, requires = "bootstrap_server")]
    pub keep: bool,
    /// Take the scenario's topic TOPIC as it is on the cluster (<prefix>TOPIC: one an earlier
    /// run kept with --keep and the same --prefix) instead of creating it. Its records are
    /// read into the model first; the run never writes to it and never deletes it.
    /// Repeatable
    #[arg(long, value_name = "TOPIC", requires = "bootstrap_server")]
    pub reuse_topic: Vec<String>,
}

impl std::fmt::Debug for ClusterArgs {
    /// Every field, a secret `-X` property's value masked.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClusterArgs")
            .field("bootstrap_server", &self.bootstrap_server)
            .field("property", &masked(&self.property))
            .field("command_config", &self.command_config)
            .field("prefix", &self.prefix)
            .field("keep", &self.keep)
            .field("reuse_topic", &self.reuse_topic)
            .finish()
    }
}

/// `key=value` properties for display: the value of any key naming a password or a secret
/// (`sasl.password`, `ssl.key.password`, `sasl.oauthbearer.client.secret`, …) masked.
pub fn masked(properties: &[String]) -> Vec<String> {
    properties
        .iter()
        .map(|p| match p.split_once('=') {
            Some((k, _)) if is_secret(k) => format!("{k}=***"),
            _ => p.clone(),
        })
        .collect()
}

fn is_secret(key: &str) -> bool {
    let key = key.trim().to_ascii_lowercase();
    key.contains("password") || key.contains("secret") || key.ends_with("sasl.jaas.config")
}

impl ClusterArgs {
    /// The client properties: the command-config file's, then -X's. An error names the line
    /// (exit code 2), or the file that cannot be read (3).
    pub fn properties(&self) -> Result<Vec<(String, String)>, (String, u8)> {
        read_properties(self.command_config.as_deref(), &self.property)
    }

    pub fn prefix(&self) -> Result<Prefix, (String, u8)> {
        match &self.prefix {
            Some(p) => Prefix::new(p).map_err(|e| (e.to_string(), exit::INVALID_SCENARIO)),
            None => Ok(Prefix::for_run(run_id())),
        }
    }
}

impl ClusterArgs {
    /// A run's options: its client properties and prefix, its sinks in `sink_dir` — or in a
    /// temporary directory, which lives as long as the returned guard.
    pub fn options(
        &self,
        bootstrap: &str,
        sink_dir: Option<&Path>,
        progress: bool,
    ) -> Result<(RunOptions, Option<tempfile::TempDir>), (String, u8)> {
        let extra = self.properties()?;
        let prefix = self.prefix()?;
        let scratch = match sink_dir {
            Some(_) => None,
            None => Some(
                tempfile::tempdir()
                    .map_err(|e| (format!("no directory for the sinks: {e}"), exit::IO_ERROR))?,
            ),
        };
        let sink_dir = match (sink_dir, &scratch) {
            (Some(d), _) => d.to_path_buf(),
            (None, Some(t)) => t.path().to_path_buf(),
            (None, None) => return Err(("no directory for the sinks".into(), exit::IO_ERROR)),
        };
        let agent_program = std::env::current_exe().map_err(|e| {
            (
                format!("cannot find the offsetlab binary to start consumer agents: {e}"),
                exit::IO_ERROR,
            )
        })?;
        let opts = RunOptions {
            bootstrap: bootstrap.to_string(),
            extra,
            prefix,
            keep: self.keep,
            agent_program,
            sink_dir,
            timeout: Duration::from_secs(10),
            progress: progress.then_some(say_wall_time as fn(Duration)),
            reuse: self.reuse_topic.iter().cloned().collect(),
            describe_group: Some(
                crate::consumer_group_describe::for_run
                    as offsetlab_cluster::consumer_group::DescribeConsumerGroup,
            ),
            stored_generations: Some(
                crate::offsets_cmd::generations_for_run
                    as offsetlab_cluster::consumer_group::StoredGenerations,
            ),
        };
        Ok((opts, scratch))
    }
}

/// What a run on a cluster prints before it waits for wall time: a `tick` there lasts as long
/// as it says.
fn say_wall_time(wait: Duration) {
    eprintln!(
        "  … {:.1} s of wall time (the scenario's clock is the cluster's)",
        wait.as_secs_f64()
    );
}

/// Client properties as Kafka's tools take them: a `--command-config` file's `key=value` lines
/// (`#` comments), then each `-X key=value`, in that order (a later one overrides). An error
/// names the line (exit code 2), or the file that cannot be read (3).
pub fn read_properties(
    command_config: Option<&Path>,
    xs: &[String],
) -> Result<Vec<(String, String)>, (String, u8)> {
    let mut out = Vec::new();
    if let Some(file) = command_config {
        let text = std::fs::read_to_string(file)
            .map_err(|e| (format!("cannot read {}: {e}", file.display()), exit::IO_ERROR))?;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            out.push(property(line).map_err(|e| {
                (
                    format!("{}:{}: {e}", file.display(), i + 1),
                    exit::INVALID_SCENARIO,
                )
            })?);
        }
    }
    for p in xs {
        out.push(property(p).map_err(|e| (format!("-X {p}: {e}"), exit::INVALID_SCENARIO))?);
    }
    Ok(out)
}

/// A scenario file (the seed without one), parsed: its name for messages and its lines.
fn read_script(input: Option<&Input>) -> Result<(String, Script), (String, u8)> {
    let (origin, source) = match input {
        None => ("seed".to_string(), offsetlab_scenario::SEED_SCENARIO.to_string()),
        Some(input) => (input.origin(), input.source()?),
    };
    match Script::parse(&source) {
        Ok(script) => Ok((origin, script)),
        Err(e) => Err((
            format!("{origin}:{}: {}", e.line(), e.reason()),
            exit::INVALID_SCENARIO,
        )),
    }
}

fn property(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_string(), v.trim().to_string())),
        _ => Err("expected key=value".to_string()),
    }
}

/// A run id that two runs started a moment apart do not share.
fn run_id() -> u32 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.subsec_nanos() ^ (d.as_secs() as u32));
    nanos ^ std::process::id().rotate_left(16)
}

/// Runs `input` (a file or a lesson) on the cluster `args` names.
pub fn run(
    input: &Input,
    args: &ClusterArgs,
    bootstrap: &str,
    compare: bool,
    json: bool,
    quiet: bool,
    sqlite: Option<&Path>,
) -> u8 {
    let (origin, script) = match read_script(Some(input)) {
        Ok(s) => s,
        Err(e) => return exit::said(e),
    };
    let (opts, _scratch) = match args.options(bootstrap, sqlite, !json && !quiet) {
        Ok(o) => o,
        Err(e) => return exit::said(e),
    };
    let verbose = !json && !quiet;
    stop_on_signal();
    let mut run = match ClusterRun::prepare(&script, opts) {
        Ok(r) => r,
        Err(e) => return failed(&origin, &e, json),
    };
    if verbose {
        println!(
            "{origin} on the cluster at {bootstrap}, every topic and group prefixed {}: the scenario's ticks take {:.1} s of wall time, plus the cluster's own pace.",
            run.prefix().as_str(),
            cluster_run::ticks(&script).as_secs_f64()
        );
    }
    let result = run.run(&script, &mut |line, step| {
        if verbose {
            println!("$ {}", line.text);
            if let Some(w) = &step.warning {
                println!("  warning: {w}");
            }
            println!("  cluster: {}", step.did);
        }
    });
    let figures = result.and_then(|()| run.figures());
    let model = figures::model(&run);
    let (share_model, share_real) = run.share_figures();
    // A line that ran late for a timer where that changed no figure: said on stderr whatever
    // the output, never a failure.
    for w in &run.warnings {
        crate::style::say_warning!("{origin}: {w}");
    }
    let cleanup = run.finish();
    for c in &cleanup {
        crate::style::say_warning!("cleaning up: {c}");
    }
    let real = match figures {
        Ok(f) => f,
        Err(e) => return failed(&origin, &e, json),
    };
    let differences = if compare {
        let mut d = figures::differences(&model, &real);
        d.extend(cluster_run::share::share_differences(&share_model, &share_real));
        d
    } else {
        Vec::new()
    };
    if json {
        let out = serde_json::json!({
            "file": origin,
            "cluster": real,
            "model": if compare { serde_json::to_value(&model).unwrap_or_default() } else { serde_json::Value::Null },
            "share_groups": {
                "cluster": share_real,
                "model": if compare { serde_json::to_value(&share_model).unwrap_or_default() } else { serde_json::Value::Null },
            },
            "differences": differences,
        });
        println!("{out:#}");
    } else {
        println!();
        print_figures(&real, compare.then_some(model.as_slice()));
        print_share_figures(&share_real, compare.then_some(share_model.as_slice()));
        for d in &differences {
            println!("DIFFERS  {d}");
        }
        if compare && differences.is_empty() {
            println!("\nThe cluster's figures equal the model's.");
        }
    }
    if differences.is_empty() {
        exit::OK
    } else {
        exit::EXPECTATION_FAILED
    }
}

fn failed(origin: &str, e: &RunError, json: bool) -> u8 {
    for line in e.to_string().lines() {
        crate::style::say_error!("{origin}: {line}");
    }
    if json {
        println!(
            "{}",
            serde_json::json!({ "error": e.to_string(), "file": origin })
        );
    }
    e.exit_code()
}

fn print_figures(real: &[GroupFigures], model: Option<&[GroupFigures]>) {
    let mut rows = Vec::new();
    for g in real {
        let m = model
            .and_then(|m| m.iter().find(|x| x.group == g.group))
            .map(GroupFigures::named);
        for (i, (name, value)) in g.named().into_iter().enumerate() {
            let mut row = vec![g.group.clone(), name, value];
            if let Some(m) = &m {
                row.push(m.get(i).map_or("-".to_string(), |(_, v)| v.clone()));
            }
            rows.push(row);
        }
    }
    let header: &[&str] = if model.is_some() {
        &["GROUP", "FIGURE", "CLUSTER", "MODEL"]
    } else {
        &["GROUP", "FIGURE", "CLUSTER"]
    };
    crate::output::figures_table(header, &rows, &crate::output::unstyled);
}

/// The share groups' figures, as [`print_figures`] prints a group's (nothing without any).
fn print_share_figures(
    real: &[cluster_run::share::ShareGroupFigures],
    model: Option<&[cluster_run::share::ShareGroupFigures]>,
) {
    let mut rows = Vec::new();
    for g in real {
        let m = model.and_then(|m| m.iter().find(|x| x.group == g.group));
        for (i, (name, value)) in g.figures.iter().enumerate() {
            let mut row = vec![g.group.clone(), name.clone(), value.clone()];
            if let Some(m) = m {
                row.push(m.figures.get(i).map_or("-".to_string(), |(_, v)| v.clone()));
            }
            rows.push(row);
        }
    }
    if rows.is_empty() {
        return;
    }
    println!();
    let header: &[&str] = if model.is_some() {
        &["SHARE GROUP", "FIGURE", "CLUSTER", "MODEL"]
    } else {
        &["SHARE GROUP", "FIGURE", "CLUSTER"]
    };
    crate::output::figures_table(header, &rows, &crate::output::unstyled);
}

/// The one cell `explore --bootstrap-server` runs.
pub struct CellArgs {
    pub strategy: Option<offsetlab_engine::strategy::CommitStrategy>,
    pub sink: Option<offsetlab_engine::sink::SinkKind>,
    pub sample: Option<usize>,
}

/// `offsetlab explore [FILE] --bootstrap-server … --strategy S --sink K [--sample N]`.
pub fn explore(
    file: Option<&Path>,
    consumer: Option<&str>,
    cell: CellArgs,
    args: &ClusterArgs,
    bootstrap: &str,
    json: bool,
) -> u8 {
    use offsetlab_cluster::run::explore as cluster_explore;
    if !args.reuse_topic.is_empty() {
        crate::style::say_error!("--reuse-topic: the explorer replays every crash point on topics of its own; reuse a topic with `offsetlab run`");
        return exit::INVALID_SCENARIO;
    }
    let (Some(strategy), Some(sink)) = (cell.strategy, cell.sink) else {
        crate::style::say_error!("on a cluster the explorer runs one cell: give --strategy and --sink (each crash point takes wall time)");
        return exit::INVALID_SCENARIO;
    };
    let (origin, script) = match read_script(file.map(Input::File).as_ref()) {
        Ok(s) => s,
        Err(e) => return exit::said(e),
    };
    let target = match offsetlab_scenario::explore::target_consumer(&script, consumer) {
        Ok(t) => t,
        Err(e) => {
            crate::style::say_error!("{origin}: {}", e.reason());
            return exit::INVALID_SCENARIO;
        }
    };
    let (opts, _scratch) = match args.options(bootstrap, None, false) {
        Ok(o) => o,
        Err(e) => return exit::said(e),
    };
    let model = match cluster_explore::model_cell(&script, &target, strategy, sink) {
        Ok(c) => c,
        Err(e) => return failed(&origin, &e, json),
    };
    let replayable = cluster_explore::replayable(&script, &target, strategy, sink, &model);
    let points = cluster_explore::chosen_points(&model, &replayable, cell.sample);
    if !json {
        println!(
            "{strategy} × {sink} on the cluster at {bootstrap}: {} of {} crash points of {target}, side by side, each up to {:.1} s of wall time.",
            points.len(),
            model.crash_points,
            cluster_explore::least_wall_time(&script, &target).as_secs_f64()
        );
        let after = model.crash_points - replayable.len() as u64;
        if after > 0 {
            println!(
                "({after} crash point(s) fall in the explorer's drain after the scenario's last line: not replayed on the cluster.)"
            );
        }
    }
    stop_on_signal();
    let measured = match cluster_explore::run_points(&script, &target, strategy, sink, &points, &opts) {
        Ok(m) => m,
        Err(e) => return failed(&origin, &e, json),
    };
    let agree = measured.iter().all(cluster_explore::Point::agrees);
    if json {
        let out = serde_json::json!({
            "file": origin,
            "strategy": strategy,
            "sink": sink,
            "crash_points": model.crash_points,
            "points": measured,
            "agree": agree,
        });
        println!("{out:#}");
    } else {
        print_points(&measured, agree);
    }
    if offsetlab_cluster::run::interrupted() {
        exit::INTERRUPTED
    } else if measured.iter().any(|p| p.error.is_some()) {
        exit::IO_ERROR
    } else if agree {
        exit::OK
    } else {
        exit::EXPECTATION_FAILED
    }
}

/// The crash points measured on the cluster beside the model's, as a table, then their
/// warnings and errors, and whether they all agree.
fn print_points(measured: &[offsetlab_cluster::run::explore::Point], agree: bool) {
    let show = |o: Option<offsetlab_cluster::run::explore::Outcome>| {
        o.map_or_else(
            || vec!["-".to_string(); 3],
            |o| {
                vec![
                    o.lost.to_string(),
                    o.redeliveries.to_string(),
                    o.duplicate_rows.to_string(),
                ]
            },
        )
    };
    let rows: Vec<Vec<String>> = measured
        .iter()
        .map(|p| {
            let mut row = vec![p.crash_point.to_string()];
            row.extend(show(Some(p.model)));
            row.extend(show(p.cluster));
            row.push(format!("{:.1}", p.wall_ms as f64 / 1000.0));
            row.push(if p.agrees() { "yes".into() } else { "NO".into() });
            row
        })
        .collect();
    println!();
    crate::output::figures_table(
        &[
            "CRASH-POINT",
            "MODEL-LOST",
            "MODEL-DUPLICATES",
            "MODEL-DUPLICATE-ROWS",
            "CLUSTER-LOST",
            "CLUSTER-DUPLICATES",
            "CLUSTER-DUPLICATE-ROWS",
            "WALL-S",
            "SAME",
        ],
        &rows,
        &|column, cell| match column {
            1 | 4 => crate::output::count_cell(cell, crate::style::LOSS),
            2 | 3 | 5 | 6 => crate::output::count_cell(cell, crate::style::DUPLICATE),
            8 if cell == "NO" => crate::style::LOSS,
            8 => crate::style::GOOD,
            _ => anstyle::Style::new(),
        },
    );
    for p in measured {
        for w in &p.warnings {
            crate::style::say_warning!("crash point {}: {w}", p.crash_point);
        }
    }
    for p in measured.iter().filter(|p| p.error.is_some()) {
        println!(
            "crash point {}: {}",
            p.crash_point,
            p.error.as_deref().unwrap_or_default()
        );
    }
    println!(
        "\n{}",
        if agree {
            "Every crash point on the cluster left what the explorer predicts."
        } else {
            "The cluster and the explorer differ (above)."
        }
    );
}

/// What `serve --bootstrap-server` runs its page's lines on: a run with no script yet.
pub fn mirror(
    args: &ClusterArgs,
    bootstrap: &str,
) -> Result<(offsetlab_web::cluster::ClusterMirror, Option<tempfile::TempDir>), (String, u8)> {
    let (opts, scratch) = args.options(bootstrap, None, false)?;
    let run = ClusterRun::prepare(&Script { lines: Vec::new() }, opts)
        .map_err(|e| (e.to_string(), e.exit_code()))?;
    Ok((offsetlab_web::cluster::ClusterMirror::new(run), scratch))
}

/// Ctrl-C (or SIGTERM) stops a run at its next wait or line, and the run then deletes what it
/// created (rather than the process dying with its topics, groups and consumer processes left
/// behind).
fn stop_on_signal() {
    std::thread::spawn(|| {
        let Ok(rt) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        rt.block_on(crate::shutdown::requested());
        eprintln!("interrupted: stopping the run and deleting what it created");
        offsetlab_cluster::run::interrupt();
    });
}
