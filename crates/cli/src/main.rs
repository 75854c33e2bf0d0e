//! `offsetlab`: the Kafka Offset & Event Replay Lab.
//!
//! A thin shell around the pure engine: it reads files, picks the sink backend, prints the
//! narrative and the figures, and turns outcomes into exit codes.

/// One request to a broker on a `topics_cmd::Conn`, and its response: `call!(conn, Metadata,
/// version, request)` sends a `MetadataRequest` and gives back the `MetadataResponse` (any other
/// answer is an error).
macro_rules! call {
    ($conn:expr, $api:ident, $version:expr, $request:expr $(,)?) => {
        match $conn.call(
            offsetlab_wire::kafka_protocol::messages::ApiKey::$api,
            $version,
            &offsetlab_wire::kafka_protocol::messages::RequestKind::$api($request),
        )? {
            offsetlab_wire::kafka_protocol::messages::ResponseKind::$api(r) => r,
            _ => anyhow::bail!(concat!(
                "the broker answered ",
                stringify!($api),
                " with something else"
            )),
        }
    };
}

mod args;
mod bench_cmd;
mod bench_lab;
mod bench_workshop;
mod cluster_cmd;
mod conn;
mod consumer_group_describe;
mod exit;
mod explore_cmd;
mod groups_cmd;
mod lesson_lookup;
mod lessons_cmd;
mod logging;
mod offsets_cmd;
mod output;
mod reset_plan;
mod run_cmd;
mod serve_cmd;
mod serve_setup;
mod share_groups_cmd;
mod shutdown;
mod style;
mod topics_cmd;
mod tour_cmd;

use args::{BenchCmd, Cli, Cmd, ServeArgs};
use clap::Parser;
use serve_setup::serve;
use std::process::ExitCode;

/// `offsetlab agent`: its settings (offsetlab-cluster's `ConsumerSettings`, one JSON line) are
/// the first line of its stdin — not an argument, since any user of the machine can read a
/// process's arguments and the settings hold the client's credentials — and its requests the
/// lines after. Exit 0 once closed, 2 for settings that do not read, 3 when the client or the
/// pipe fails.
fn agent() -> u8 {
    use std::io::BufRead as _;
    let stdin = std::io::stdin();
    let mut input = stdin.lock();
    let mut first = String::new();
    if let Err(e) = input.read_line(&mut first) {
        eprintln!("error: cannot read the settings line: {e}");
        return exit::IO_ERROR;
    }
    let settings: offsetlab_cluster::ConsumerSettings = match serde_json::from_str(first.trim_end()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("error: the settings line: {e}");
            return exit::INVALID_SCENARIO;
        }
    };
    match offsetlab_cluster::agent::run(&settings, input, std::io::stdout()) {
        Ok(()) => exit::OK,
        Err(e) => {
            eprintln!("error: {e}");
            exit::IO_ERROR
        }
    }
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Usage errors and --help are printed by clap, coloured as --color asks.
            style::ColorWhen::from_raw_args(std::env::args_os())
                .unwrap_or_default()
                .install();
            e.exit()
        }
    };
    cli.color.install();
    logging::install();
    // As many file descriptors as the system allows this process: the segment file pool and
    // the listeners' connection caps are sized from it (a failure leaves the limit as it was).
    let _ = offsetlab_storage::raise_descriptor_limit();
    ExitCode::from(run(cli.command))
}

/// Runs `command` (`serve` when none is given); its exit code.
fn run(command: Option<Cmd>) -> u8 {
    match command.unwrap_or_else(|| Cmd::Serve(ServeArgs::default())) {
        Cmd::Serve(args) => serve(args),
        Cmd::Agent => agent(),
        Cmd::Bench { what } => bench(what),
        Cmd::Groups {
            connect,
            list: _,
            describe: _,
            reset_offsets,
            group,
            topics,
            all_topics,
            to,
            execute,
            json,
        } if reset_offsets => reset_group_offsets(
            &connect,
            group.as_deref(),
            &topics,
            all_topics,
            &to,
            execute,
            json,
        ),
        Cmd::Groups {
            connect,
            list,
            group,
            json,
            ..
        } => match connect.endpoint() {
            Ok(endpoint) => groups_cmd::run(&endpoint, list, group, json),
            Err(e) => exit::said(e),
        },
        Cmd::Topics {
            connect,
            list,
            describe: _,
            topic,
            json,
        } => match connect.endpoint() {
            Ok(endpoint) => topics_cmd::run(&endpoint, list, topic, json),
            Err(e) => exit::said(e),
        },
        Cmd::Offsets { connect, group, json } => match connect.endpoint() {
            Ok(endpoint) => offsets_cmd::run(&endpoint, group.as_deref(), json),
            Err(e) => exit::said(e),
        },
        Cmd::Tour => tour_cmd::tour(),
        Cmd::Run {
            file,
            lesson,
            json,
            sqlite,
            quiet,
            cluster,
            compare,
        } => run_scenario(
            run_cmd::Input::new(file.as_deref(), lesson.as_deref()),
            &cluster,
            compare,
            json,
            quiet,
            sqlite.as_deref(),
        ),
        Cmd::Lessons {
            lesson: None, json, ..
        } => lessons_cmd::list(json),
        Cmd::Lessons {
            lesson: Some(l),
            source,
            json,
        } => lessons_cmd::run(&l, source, json),
        Cmd::Explore {
            file,
            consumer,
            json,
            strategy,
            sink,
            sample,
            compare: _,
            cluster,
        } => explore(
            file.as_deref(),
            consumer.as_deref(),
            cluster_cmd::CellArgs {
                strategy,
                sink,
                sample,
            },
            &cluster,
            json,
        ),
        Cmd::Seed => {
            print!("{}", offsetlab_scenario::SEED_SCENARIO);
            exit::OK
        }
    }
}

/// `offsetlab bench …`: the storage, the lab or a workshop, timed.
fn bench(what: BenchCmd) -> u8 {
    match what {
        BenchCmd::Storage { records, dir, json } => bench_cmd::storage(records, dir, json),
        BenchCmd::Lab { json } => bench_lab::run(json),
        BenchCmd::Workshop {
            learners,
            idle,
            pace,
            json,
        } => bench_workshop::run(learners, idle, pace, json),
    }
}

/// `offsetlab run`: a scenario on the model, or with `--bootstrap-server` on a real cluster.
fn run_scenario(
    input: Result<run_cmd::Input<'_>, (String, u8)>,
    cluster: &cluster_cmd::ClusterArgs,
    compare: bool,
    json: bool,
    quiet: bool,
    sqlite: Option<&std::path::Path>,
) -> u8 {
    match (input, cluster.bootstrap_server.clone()) {
        (Err(e), _) => exit::said(e),
        (Ok(input), Some(bootstrap)) => {
            cluster_cmd::run(&input, cluster, &bootstrap, compare, json, quiet, sqlite)
        }
        (Ok(input), None) => run_cmd::run_input(&input, json, sqlite, quiet),
    }
}

/// `offsetlab explore`: every crash point on the model, or with `--bootstrap-server` the cells
/// asked for run on a real cluster beside the model's prediction.
fn explore(
    file: Option<&std::path::Path>,
    consumer: Option<&str>,
    cells: cluster_cmd::CellArgs,
    cluster: &cluster_cmd::ClusterArgs,
    json: bool,
) -> u8 {
    match cluster.bootstrap_server.clone() {
        Some(bootstrap) => cluster_cmd::explore(file, consumer, cells, cluster, &bootstrap, json),
        None => explore_cmd::explore(file, consumer, json),
    }
}

/// `offsetlab groups --reset-offsets`: a dry run unless `--execute`.
fn reset_group_offsets(
    connect: &conn::ConnectArgs,
    group: Option<&str>,
    topics: &[String],
    all_topics: bool,
    to: &args::ResetTo,
    execute: bool,
    json: bool,
) -> u8 {
    match (connect.endpoint(), to.spec()) {
        (Ok(endpoint), Ok(spec)) => groups_cmd::reset(
            &endpoint,
            group.unwrap_or_default(),
            topics,
            all_topics,
            spec,
            execute,
            json,
        ),
        (Err(e), _) => exit::said(e),
        (_, Err(e)) => exit::said((e, exit::INVALID_SCENARIO)),
    }
}
