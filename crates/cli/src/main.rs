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

mod bench_cmd;
mod bench_lab;
mod bench_workshop;
mod cluster_cmd;
mod conn;
mod exit;
mod explore_cmd;
mod groups_cmd;
mod lesson_lookup;
mod lessons_cmd;
mod logging;
mod offsets_cmd;
mod output;
mod run_cmd;
mod serve_cmd;
mod shutdown;
mod style;
mod topics_cmd;
mod tour_cmd;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "offsetlab",
    version,
    about = "Kafka Offset & Event Replay Lab: crash consumers at the wrong instant and watch offsets, lag, lost and duplicated records",
    long_about = "offsetlab models a Kafka partition log, consumer groups, commit strategies and sinks on a logical clock, \
so every scenario replays exactly.\n\n\
A consumer's position (where its next poll reads) lives in its memory; the group's committed offset lives in the \
compacted __consumer_offsets topic. When a commit happens relative to processing decides whether a crash loses \
records (commit before: at-most-once) or replays them (commit after: at-least-once), and the sink decides whether a \
replay duplicates rows (append) or converges (upsert, transactional).\n\n\
Run `offsetlab` (or `offsetlab serve`) for the web lab on http://127.0.0.1:7070; `offsetlab tour`, `offsetlab lessons` and `offsetlab explore` work in the terminal.",
    after_help = "Exit codes: 0 ok, 1 an expect line failed, 2 malformed or rejected scenario, 3 I/O error, 130 a cluster run interrupted (Ctrl-C, SIGTERM)."
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Cmd>,
    /// When to colour the output: auto colours a terminal unless NO_COLOR is set (to any
    /// non-empty value); CLICOLOR_FORCE=1 colours even a pipe. --json output is never coloured
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    color: style::ColorWhen,
}

// Parsed once per process: the size of the largest variant (serve's options) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Cmd {
    /// Run a scenario file (or a built-in lesson): print the narrative and the final figures,
    /// check its expect lines
    #[command(group(clap::ArgGroup::new("scenario").required(true).args(["file", "lesson"])))]
    Run {
        /// The scenario file (see docs/SCENARIOS.md; `offsetlab seed` prints one to start from)
        file: Option<PathBuf>,
        /// Run a lesson built into offsetlab instead of a file, from any directory: its number
        /// (`3`), file name (`03-upsert-converges`) or a word of its title (`upsert`).
        /// `offsetlab lessons` lists them
        #[arg(long, value_name = "LESSON")]
        lesson: Option<String>,
        /// Print the final state as one JSON object instead of text
        #[arg(long)]
        json: bool,
        /// Write the groups' sinks to SQLite files in this directory instead of memory
        #[arg(long, value_name = "DIR")]
        sqlite: Option<PathBuf>,
        /// Print only the final figures (and errors)
        #[arg(long, short)]
        quiet: bool,
        #[command(flatten)]
        cluster: cluster_cmd::ClusterArgs,
        /// With --bootstrap-server: also run the scenario on the model and print both sets of
        /// figures side by side; exit code 1 when any figure differs
        #[arg(long, requires = "bootstrap_server")]
        compare: bool,
    },
    /// List the lessons, or run one: `offsetlab lessons 3`, `offsetlab lessons upsert`
    ///
    /// The lessons are built into offsetlab, so they run from any directory. Each is a scenario
    /// whose comments explain the next action and whose expect lines prove the point.
    Lessons {
        /// The lesson to run: its number (`3` or `03`), file name (`03-upsert-converges`) or a
        /// word of its title or file name (`upsert`); a word that fits several lessons lists them
        lesson: Option<String>,
        /// Print the lesson's scenario text instead of running it (a starting point of your
        /// own: `offsetlab lessons 3 --source > my.scn`, then `offsetlab run my.scn`)
        #[arg(long, requires = "lesson", conflicts_with = "json")]
        source: bool,
        /// JSON output: the list, or the lesson's final state
        #[arg(long)]
        json: bool,
    },
    /// Crash the consumer at every instant of a scenario, for every commit strategy × sink
    Explore {
        /// The scenario to explore (default: the seed — 12 orders, batches of 4)
        file: Option<PathBuf>,
        /// The consumer to crash (default: the first the scenario starts)
        #[arg(long)]
        consumer: Option<String>,
        /// Print the matrix as a JSON array
        #[arg(long)]
        json: bool,
        /// On a cluster: the cell's commit strategy
        #[arg(long, requires = "bootstrap_server")]
        strategy: Option<offsetlab_engine::strategy::CommitStrategy>,
        /// On a cluster: the cell's sink
        #[arg(long, requires = "bootstrap_server")]
        sink: Option<offsetlab_engine::sink::SinkKind>,
        /// On a cluster: run this many crash points (the model's worst first, then spread
        /// evenly) instead of every one
        #[arg(long, value_name = "N", requires = "bootstrap_server")]
        sample: Option<usize>,
        /// On a cluster, each crash point is always printed beside the explorer's prediction
        /// (exit code 1 when one differs); --compare is taken as `run` takes it, and changes
        /// nothing
        #[arg(long, requires = "bootstrap_server")]
        compare: bool,
        #[command(flatten)]
        cluster: cluster_cmd::ClusterArgs,
    },
    /// Start the web lab (what `offsetlab` with no command does)
    Serve(ServeArgs),
    /// Consumer groups of a Kafka broker — the lab's listener or a real cluster — like
    /// kafka-consumer-groups.sh: --list, or --describe --group G (GROUP TOPIC PARTITION
    /// CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID)
    Groups {
        #[command(flatten)]
        connect: conn::ConnectArgs,
        /// List the groups
        #[arg(long, conflicts_with_all = ["describe", "reset_offsets"], required_unless_present_any = ["describe", "reset_offsets"])]
        list: bool,
        /// Describe one group (with --group)
        #[arg(long, requires = "group", conflicts_with = "reset_offsets")]
        describe: bool,
        /// Reset a group's committed offsets (with --group, a scope and one --to-…/--shift-by/
        /// --by-duration); a dry run unless --execute. Refused while the group has members
        #[arg(long, requires = "group")]
        reset_offsets: bool,
        /// The group to describe or reset
        #[arg(long)]
        group: Option<String>,
        /// Reset: these topics (`t` for all its partitions, `t:0,1`), repeatable
        #[arg(long = "topic", value_name = "TOPIC[:P,P]")]
        topics: Vec<String>,
        /// Reset: every topic the group committed
        #[arg(long)]
        all_topics: bool,
        #[command(flatten)]
        to: ResetTo,
        /// Reset: apply it (the default is a dry run)
        #[arg(long)]
        execute: bool,
        /// JSON output
        #[arg(long)]
        json: bool,
    },
    /// The topics of a Kafka broker — the lab's listener or a real cluster — like kafka-topics.sh
    Topics {
        #[command(flatten)]
        connect: conn::ConnectArgs,
        /// List the topics' names
        #[arg(long, conflicts_with = "describe", required_unless_present = "describe")]
        list: bool,
        /// Describe the topics: partitions, leaders, replicas and each partition's log start
        /// and end offsets
        #[arg(long)]
        describe: bool,
        /// Only this topic
        #[arg(long)]
        topic: Option<String>,
        /// JSON output
        #[arg(long)]
        json: bool,
    },
    /// The records of a broker's __consumer_offsets topic, decoded — the lab's listener or a real
    /// cluster — like kafka-console-consumer.sh with Kafka's OffsetsMessageFormatter
    ///
    /// Every commit is a record keyed (group, topic, partition) whose value holds the offset;
    /// every completed rebalance is a record keyed by the group holding its members and their
    /// assignment. A null value is a tombstone. Reads each partition from its log start to its
    /// log end, then exits.
    Offsets {
        #[command(flatten)]
        connect: conn::ConnectArgs,
        /// Only this group's records
        #[arg(long)]
        group: Option<String>,
        /// One JSON object per record (Kafka 4.0's formatter shape: key type and data, value
        /// version and data)
        #[arg(long)]
        json: bool,
    },
    /// Measure the lab's moving parts and print the figures (see docs/BENCHMARKS.md)
    Bench {
        #[command(subcommand)]
        what: BenchCmd,
    },
    /// A guided tour, one step at a time: the seed's consumer crashed mid-batch under two
    /// commit strategies and sinks, then rewound; you guess each outcome before the lab shows it
    ///
    /// ① a timer auto-commit into an append-only sink, ② a commit after the batch into an upsert
    /// sink, the same crash, ③ both groups rewound to the start of the log and replayed. At
    /// each step you are asked to guess what the crash costs before the lab shows it. With
    /// stdin not a terminal (`offsetlab tour < /dev/null`) the whole tour is printed at once.
    Tour,
    /// A consumer agent: one real Kafka consumer (librdkafka) driven over stdin/stdout, one
    /// JSON message per line (offsetlab-cluster's protocol). Started by offsetlab itself, in a
    /// process of its own so that a crash can be SIGKILL. Its settings are the first line of
    /// its stdin
    #[command(hide = true)]
    Agent,
    /// Print the seed scenario (a starting point for your own)
    Seed,
}

#[derive(Subcommand)]
enum BenchCmd {
    /// The durable log: appends (--flush never and always, group commit), startup after a clean
    /// and an unclean stop, replay from offset 0 warm and cold, an upsert projection rebuilt
    /// into SQLite — beside this machine's write and memcpy limits measured in the same run
    Storage {
        /// Records of 100-byte values to write
        #[arg(long, default_value_t = 10_000_000)]
        records: u64,
        /// Where to write (default: a temporary directory under the current one, removed after)
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print the figures as JSON (no progress bars)
        #[arg(long)]
        json: bool,
    },
    /// The web lab's session where a user can make it expensive: `tick 36500d` beside a 1 ms
    /// auto-commit timer while state requests wait for the lab, and 100 saved actions on a lab
    /// with 20,000 narrative events against a fresh one
    Lab {
        /// Print the figures as JSON
        #[arg(long)]
        json: bool,
    },
    /// A workshop on this machine: the memory of a room of idle learners (with their labs in
    /// memory and evicted) and the time to bring an evicted lab back; then a class of learners
    /// replaying lessons through the HTTP API at once, live updates open — every action's
    /// latency. Exits 1 if any action failed
    Workshop {
        /// Learners replaying a lesson at once
        #[arg(long, default_value_t = 200)]
        learners: usize,
        /// Learners in the idle room whose memory is measured
        #[arg(long, default_value_t = 1000)]
        idle: usize,
        /// How often each learner acts
        #[arg(long, value_name = "DUR", default_value = "500ms", value_parser = positive_duration)]
        pace: std::time::Duration,
        /// Print the figures as JSON
        #[arg(long)]
        json: bool,
    },
}

/// `--kafka ADDR` or `--kafka off`.
#[derive(Debug, Clone, Copy)]
struct KafkaAddr(Option<std::net::SocketAddr>);

impl std::str::FromStr for KafkaAddr {
    type Err = String;
    fn from_str(v: &str) -> Result<Self, Self::Err> {
        if v == "off" {
            return Ok(Self(None));
        }
        v.parse()
            .map(|a| Self(Some(a)))
            .map_err(|e| format!("expected HOST:PORT or off ({e})"))
    }
}

/// `offsetlab serve`'s options (also what `offsetlab` alone runs with, at their defaults).
#[derive(clap::Args, Debug)]
struct ServeArgs {
    /// Address of the web lab
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7070")]
    http: std::net::SocketAddr,
    /// The lab's data directory: the groups' SQLite sinks and the saved session
    #[arg(
        long,
        value_name = "DIR",
        default_value = "./offsetlab-data",
        conflicts_with = "ephemeral"
    )]
    data: PathBuf,
    /// Use a temporary data directory, removed when the lab stops
    #[arg(long)]
    ephemeral: bool,
    /// Discard the lab saved in the data directory and start from the seed. A lab that
    /// cannot be restored is never replaced on its own: the server refuses to start and
    /// says which file is wrong, and this is the way to start over
    #[arg(long, conflicts_with = "ephemeral")]
    reset_data: bool,
    /// Allow a non-loopback --http address (anyone who can reach it can drive the lab)
    #[arg(long)]
    allow_remote: bool,
    /// A name (or address) the lab is reached by, besides 127.0.0.1 and localhost: requests
    /// with any other Host header are refused, which keeps a page whose name was made to
    /// resolve to the lab (DNS rebinding) out. NAME or NAME:PORT; repeat for several
    #[arg(long, value_name = "NAME")]
    public_host: Vec<String>,
    /// When appended records reach the disk: `never` (the page cache, as Kafka relies on
    /// replication), `interval=DUR` (e.g. interval=1s), or `always` (fsync before
    /// acknowledging, concurrent writers sharing one fsync)
    #[arg(long, value_name = "POLICY", default_value = "never")]
    flush: offsetlab_storage::FlushPolicy,
    /// Where real Kafka clients connect (kcat, librdkafka, kafka-python …), or `off`. They
    /// can produce into the lab, consume its logs, and see and reset its consumer groups.
    /// Default: 127.0.0.1:9092, and off with --workshop (a Kafka connection carries no
    /// learner's cookie, so it could only reach one lab: with --workshop --kafka ADDR it serves
    /// the instructor's own lab, shown on the instructor's page)
    #[arg(long, value_name = "ADDR|off")]
    kafka: Option<KafkaAddr>,
    /// Create a topic when a client first produces to it or asks for its metadata, with one
    /// partition — Kafka's auto.create.topics.enable (true by default, as in Kafka)
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    auto_create_topics: bool,
    /// The largest Kafka request accepted, in bytes — Kafka's socket.request.max.bytes. A
    /// request announcing more closes its connection before anything is allocated for it
    #[arg(long, value_name = "BYTES", default_value_t = 100 << 20, value_parser = clap::value_parser!(u32).range(64..))]
    kafka_max_request_bytes: u32,
    /// Kafka connections held at once — Kafka's max.connections. At the cap a new connection
    /// closes the one idle longest, or is refused when every one is answering a request.
    /// Default: a quarter of the process's file descriptor limit
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    kafka_max_connections: Option<u32>,
    /// How long a Kafka connection may go without completing a request before it is closed —
    /// Kafka's connections.max.idle.ms
    #[arg(long, value_name = "DUR", default_value = "10m", value_parser = positive_duration)]
    kafka_idle_timeout: std::time::Duration,
    /// Make the Kafka listener SASL_PLAINTEXT: a client must authenticate with SASL/PLAIN as
    /// one of the users in FILE (one NAME=PASSWORD per line, # comments) before anything else,
    /// as on a secured cluster. Clients then need security.protocol=SASL_PLAINTEXT,
    /// sasl.mechanism=PLAIN, sasl.username, sasl.password
    #[arg(long, value_name = "FILE")]
    kafka_sasl_plain_users: Option<PathBuf>,
    /// HTTP connections held at once. At the cap a new connection closes the one idle longest,
    /// or is refused when every one is answering a request. Default: an eighth of the process's
    /// file descriptor limit
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    http_max_connections: Option<u32>,
    /// How long an HTTP connection may stay silent (no byte either way) before it is closed;
    /// a request's headers must arrive within 10 s whatever this says
    #[arg(long, value_name = "DUR", default_value = "2m", value_parser = positive_duration)]
    http_idle_timeout: std::time::Duration,
    /// How the lab's clock runs: `live` reads wall time, so every timer (sessions, transaction
    /// timeouts, retention, offsets retention) fires on time and real clients' timestamps and
    /// the lab's agree; `paused` moves only when stepped, as lessons and `run` do. Default: the
    /// mode the lab had (a new lab starts live); loading a lesson or a scenario pauses it
    #[arg(long, value_name = "live|paused")]
    clock: Option<offsetlab_lab::session::ClockMode>,
    #[command(flatten)]
    workshop: WorkshopArgs,
    #[command(flatten)]
    cluster: cluster_cmd::ClusterArgs,
}

/// `offsetlab serve --workshop`: a lab per learner.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Workshop")]
struct WorkshopArgs {
    /// Serve a classroom: every browser that opens the page joins with a name and gets a lab
    /// of its own (an unguessable id in a cookie), isolated from every other; the instructor
    /// watches the room at /instructor with the token printed at start
    #[arg(long)]
    workshop: bool,
    /// The most learners the room takes; a join past it is refused
    #[arg(long, value_name = "N", default_value_t = 100, requires = "workshop", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    max_learners: u32,
    /// Read the instructor's token (16 to 256 printable characters) from FILE instead of
    /// making a new one at every start
    #[arg(long, value_name = "FILE", requires = "workshop")]
    instructor_token_file: Option<PathBuf>,
    /// A learner's lab unused this long is written to disk and dropped from memory (it comes
    /// back, as it was, on their next request)
    #[arg(long, value_name = "DUR", default_value = "2m", value_parser = positive_duration, requires = "workshop")]
    evict_after: std::time::Duration,
    /// The most learner labs kept in memory (and holding files open) at once; past it the
    /// least recently used idle one is evicted. Default: one per 32 file descriptors the
    /// process may open, at least 16, at most 256
    #[arg(long, value_name = "N", requires = "workshop", value_parser = clap::value_parser!(u32).range(1..))]
    max_resident: Option<u32>,
    /// Requests a second one learner may make (bursts of three times that are let through)
    #[arg(long, value_name = "N", default_value_t = 20, requires = "workshop", value_parser = clap::value_parser!(u32).range(1..))]
    learner_rate: u32,
    /// Records one learner's lab may hold, all partitions together
    #[arg(long, value_name = "N", default_value_t = 100_000, requires = "workshop")]
    cap_records: u64,
    /// Bytes of record batches one learner's lab may hold, all partitions together
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20, requires = "workshop")]
    cap_bytes: u64,
    /// Records one learner's lab may apply to its sinks, all groups together (every rewind
    /// writes again)
    #[arg(long, value_name = "N", default_value_t = 500_000, requires = "workshop")]
    cap_sink_writes: u64,
    /// Consumer groups one learner's lab may hold (a consumer's, an offset reset's, …)
    #[arg(long, value_name = "N", default_value_t = 20, requires = "workshop")]
    cap_groups: usize,
    /// Topics one learner's lab may hold
    #[arg(long, value_name = "N", default_value_t = 20, requires = "workshop")]
    cap_topics: usize,
    /// Partitions one learner's lab may hold, all topics together
    #[arg(long, value_name = "N", default_value_t = 100, requires = "workshop")]
    cap_partitions: u64,
    /// Consumers one learner's lab may start
    #[arg(long, value_name = "N", default_value_t = 20, requires = "workshop")]
    cap_consumers: usize,
    /// Lines one learner's lab history may hold: what bounds every other kind of work
    #[arg(long, value_name = "N", default_value_t = 20_000, requires = "workshop")]
    cap_history_lines: usize,
    /// The largest request body a learner may send (a scenario import), in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 10, requires = "workshop", value_parser = clap::value_parser!(u64).range(1024..=(64 << 20)))]
    cap_request_bytes: u64,
}

/// A duration such as `500ms`, `30s` or `10m`, longer than zero.
fn positive_duration(v: &str) -> Result<std::time::Duration, String> {
    let d = humantime::parse_duration(v).map_err(|e| format!("{v}: {e}"))?;
    if d.is_zero() {
        return Err("must be longer than 0ms".into());
    }
    Ok(d)
}

impl Default for ServeArgs {
    fn default() -> Self {
        use clap::{Args, FromArgMatches};
        let matches = ServeArgs::augment_args(clap::Command::new("serve")).get_matches_from(["serve"]);
        match ServeArgs::from_arg_matches(&matches) {
            Ok(args) => args,
            Err(e) => e.exit(),
        }
    }
}

/// `--kafka-sasl-plain-users FILE`: the users, or one line saying what is wrong and where.
fn read_plain_users(file: &std::path::Path) -> Result<offsetlab_broker::sasl::PlainUsers, (String, u8)> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| (format!("cannot read {}: {e}", file.display()), exit::IO_ERROR))?;
    offsetlab_broker::sasl::PlainUsers::parse(&text).map_err(|e| {
        let at = if e.line == 0 {
            String::new()
        } else {
            format!(":{}", e.line)
        };
        (
            format!("--kafka-sasl-plain-users {}{at}: {}", file.display(), e.why),
            exit::INVALID_SCENARIO,
        )
    })
}

fn serve(args: ServeArgs) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            style::say_error!("cannot start the runtime: {e}");
            return exit::IO_ERROR;
        }
    };
    if let Some(bootstrap) = args.cluster.bootstrap_server.clone() {
        if args.workshop.workshop || args.kafka.as_ref().is_some_and(|k| k.0.is_some()) {
            style::say_error!("with --bootstrap-server the page drives that cluster: no --workshop, no --kafka listener of the lab's own");
            return exit::INVALID_SCENARIO;
        }
        if !args.http.ip().is_loopback() && !args.allow_remote {
            style::say_error!("{} is not a loopback address: the lab listens on 127.0.0.1 only unless you pass --allow-remote", args.http);
            return exit::INVALID_SCENARIO;
        }
        let (mirror, scratch) = match cluster_cmd::mirror(&args.cluster, &bootstrap) {
            Ok(m) => m,
            Err((e, code)) => {
                style::say_error!("{e}");
                return code;
            }
        };
        let limits = offsetlab_web::http::HttpLimits {
            max_connections: args
                .http_max_connections
                .map_or_else(offsetlab_web::http::default_max_connections, |n| n as usize),
            idle_timeout: args.http_idle_timeout,
            ..offsetlab_web::http::HttpLimits::default()
        };
        let code = match runtime.block_on(serve_cmd::serve_cluster(
            args.http,
            args.public_host,
            limits,
            std::sync::Arc::new(mirror),
        )) {
            Ok(()) => exit::OK,
            Err(e) => {
                style::say_error!("{e:#}");
                exit::IO_ERROR
            }
        };
        drop(scratch);
        return code;
    }
    let sasl_plain = match args
        .kafka_sasl_plain_users
        .as_deref()
        .map(read_plain_users)
        .transpose()
    {
        Ok(users) => users.map(std::sync::Arc::new),
        Err((e, code)) => {
            style::say_error!("{e}");
            return code;
        }
    };
    let config = serve_cmd::ServeConfig {
        http: args.http,
        data_dir: (!args.ephemeral).then_some(args.data),
        allow_remote: args.allow_remote,
        public_hosts: args.public_host,
        flush: args.flush,
        kafka: match args.kafka {
            Some(k) => k.0,
            None if args.workshop.workshop => None,
            None => Some(std::net::SocketAddr::from(([127, 0, 0, 1], 9092))),
        },
        workshop: args.workshop.workshop.then(|| serve_cmd::WorkshopOptions {
            max_learners: args.workshop.max_learners as usize,
            instructor_token_file: args.workshop.instructor_token_file,
            evict_after: args.workshop.evict_after,
            max_resident: args.workshop.max_resident.map_or_else(
                || {
                    let fds = offsetlab_storage::descriptor_limit().unwrap_or(1024);
                    usize::try_from(fds / 32).unwrap_or(256).clamp(16, 256)
                },
                |n| n as usize,
            ),
            rate: offsetlab_web::workshop::RateLimit {
                per_second: f64::from(args.workshop.learner_rate),
                burst: 3.0 * f64::from(args.workshop.learner_rate),
            },
            caps: offsetlab_lab::caps::Caps {
                records: args.workshop.cap_records,
                bytes: args.workshop.cap_bytes,
                sink_writes: args.workshop.cap_sink_writes,
                topics: args.workshop.cap_topics,
                partitions: args.workshop.cap_partitions,
                consumers: args.workshop.cap_consumers,
                groups: args.workshop.cap_groups,
                history_lines: args.workshop.cap_history_lines,
            },
            max_request_bytes: usize::try_from(args.workshop.cap_request_bytes).unwrap_or(256 << 10),
        }),
        reset_data: args.reset_data,
        clock: args.clock,
        kafka_config: offsetlab_broker::KafkaConfig {
            auto_create_topics: args.auto_create_topics,
            max_request_bytes: args.kafka_max_request_bytes as usize,
            limits: offsetlab_lab::connections::Limits {
                max_connections: args
                    .kafka_max_connections
                    .map_or_else(offsetlab_lab::connections::default_max_connections, |n| {
                        n as usize
                    }),
                idle_timeout: args.kafka_idle_timeout,
            },
            sasl_plain,
            ..offsetlab_broker::KafkaConfig::default()
        },
        http_limits: offsetlab_web::http::HttpLimits {
            max_connections: args.http_max_connections.map_or_else(
                || {
                    let default = offsetlab_web::http::default_max_connections();
                    if args.workshop.workshop {
                        // Every learner's page holds its event stream and a connection or two for
                        // requests: room for all of them, within half the descriptors.
                        let room = 4 * args.workshop.max_learners as usize + 64;
                        let fds = offsetlab_storage::descriptor_limit().unwrap_or(1024);
                        room.max(default)
                            .min(usize::try_from(fds / 2).unwrap_or(default).max(default))
                    } else {
                        default
                    }
                },
                |n| n as usize,
            ),
            idle_timeout: args.http_idle_timeout,
            ..offsetlab_web::http::HttpLimits::default()
        },
    };
    match runtime.block_on(serve_cmd::serve(config)) {
        Ok(()) => exit::OK,
        Err(e) => {
            style::say_error!("{e:#}");
            exit::IO_ERROR
        }
    }
}

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

/// Where `offsetlab groups --reset-offsets` moves each partition: one of these.
#[derive(clap::Args, Debug)]
struct ResetTo {
    /// Reset: to the log start offset (replays everything retained)
    #[arg(long, group = "spec")]
    to_earliest: bool,
    /// Reset: to the log end offset (skips everything not yet read)
    #[arg(long, group = "spec")]
    to_latest: bool,
    /// Reset: to the committed offset (a no-op that shows the current position)
    #[arg(long, group = "spec")]
    to_current: bool,
    /// Reset: to this offset (clamped to the retained range)
    #[arg(long, group = "spec", value_name = "OFFSET")]
    to_offset: Option<i64>,
    /// Reset: move the committed offset by N (negative replays, positive skips)
    #[arg(long, group = "spec", value_name = "N", allow_hyphen_values = true)]
    shift_by: Option<i64>,
    /// Reset: to the first record at or after YYYY-MM-DDTHH:mm:SS[.sss] (UTC without a zone,
    /// as kafka-consumer-groups.sh reads it)
    #[arg(long, group = "spec", value_name = "DATETIME")]
    to_datetime: Option<String>,
    /// Reset: to the first record of this long ago, ISO-8601 (PT6H: the last six hours)
    #[arg(long, group = "spec", value_name = "DURATION")]
    by_duration: Option<String>,
}

impl ResetTo {
    fn spec(&self) -> Result<groups_cmd::Spec, String> {
        use groups_cmd::Spec;
        if self.to_earliest {
            Ok(Spec::Earliest)
        } else if self.to_latest {
            Ok(Spec::Latest)
        } else if self.to_current {
            Ok(Spec::Current)
        } else if let Some(o) = self.to_offset {
            Ok(Spec::Offset(o))
        } else if let Some(n) = self.shift_by {
            Ok(Spec::ShiftBy(n))
        } else if let Some(t) = &self.to_datetime {
            offsetlab_scenario::units::instant_ms(t).map(Spec::Datetime)
        } else if let Some(d) = &self.by_duration {
            groups_cmd::iso_duration_ms(d).map(Spec::Duration)
        } else {
            Err("--reset-offsets needs one of --to-earliest, --to-latest, --to-current, --to-offset, --shift-by, --to-datetime, --by-duration".to_string())
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
    let code = match cli.command {
        None => serve(ServeArgs::default()),
        Some(Cmd::Serve(args)) => serve(args),
        Some(Cmd::Agent) => agent(),
        Some(Cmd::Bench {
            what: BenchCmd::Storage { records, dir, json },
        }) => bench_cmd::storage(records, dir, json),
        Some(Cmd::Bench {
            what: BenchCmd::Lab { json },
        }) => bench_lab::run(json),
        Some(Cmd::Bench {
            what:
                BenchCmd::Workshop {
                    learners,
                    idle,
                    pace,
                    json,
                },
        }) => bench_workshop::run(learners, idle, pace, json),
        Some(Cmd::Groups {
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
        }) if reset_offsets => match (connect.endpoint(), to.spec()) {
            (Ok(endpoint), Ok(spec)) => groups_cmd::reset(
                &endpoint,
                group.as_deref().unwrap_or_default(),
                &topics,
                all_topics,
                spec,
                execute,
                json,
            ),
            (Err(e), _) => exit::said(e),
            (_, Err(e)) => exit::said((e, exit::INVALID_SCENARIO)),
        },
        Some(Cmd::Groups {
            connect,
            list,
            group,
            json,
            ..
        }) => match connect.endpoint() {
            Ok(endpoint) => groups_cmd::run(&endpoint, list, group, json),
            Err(e) => exit::said(e),
        },
        Some(Cmd::Topics {
            connect,
            list,
            describe: _,
            topic,
            json,
        }) => match connect.endpoint() {
            Ok(endpoint) => topics_cmd::run(&endpoint, list, topic, json),
            Err(e) => exit::said(e),
        },
        Some(Cmd::Offsets { connect, group, json }) => match connect.endpoint() {
            Ok(endpoint) => offsets_cmd::run(&endpoint, group.as_deref(), json),
            Err(e) => exit::said(e),
        },
        Some(Cmd::Tour) => tour_cmd::tour(),
        Some(Cmd::Run {
            file,
            lesson,
            json,
            sqlite,
            quiet,
            cluster,
            compare,
        }) => match (
            run_cmd::Input::new(file.as_deref(), lesson.as_deref()),
            cluster.bootstrap_server.clone(),
        ) {
            (Err(e), _) => exit::said(e),
            (Ok(input), Some(bootstrap)) => cluster_cmd::run(
                &input,
                &cluster,
                &bootstrap,
                compare,
                json,
                quiet,
                sqlite.as_deref(),
            ),
            (Ok(input), None) => run_cmd::run_input(&input, json, sqlite.as_deref(), quiet),
        },
        Some(Cmd::Lessons {
            lesson: None, json, ..
        }) => lessons_cmd::list(json),
        Some(Cmd::Lessons {
            lesson: Some(l),
            source,
            json,
        }) => lessons_cmd::run(&l, source, json),
        Some(Cmd::Explore {
            file,
            consumer,
            json,
            strategy,
            sink,
            sample,
            compare: _,
            cluster,
        }) => match cluster.bootstrap_server.clone() {
            Some(bootstrap) => cluster_cmd::explore(
                file.as_deref(),
                consumer.as_deref(),
                cluster_cmd::CellArgs {
                    strategy,
                    sink,
                    sample,
                },
                &cluster,
                &bootstrap,
                json,
            ),
            None => explore_cmd::explore(file.as_deref(), consumer.as_deref(), json),
        },
        Some(Cmd::Seed) => {
            print!("{}", offsetlab_scenario::SEED_SCENARIO);
            exit::OK
        }
    };
    ExitCode::from(code)
}
