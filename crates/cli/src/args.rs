//! The command line: every command and option `offsetlab` takes, as clap reads them. Only the
//! shapes live here (and the small parsers and defaults clap needs); what a command does with
//! its options is in its own `*_cmd.rs`, so this file changes when the interface does.

use crate::{cluster_cmd, conn, groups_cmd, style};
use clap::{Parser, Subcommand};
use std::path::PathBuf;

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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Option<Cmd>,
    /// When to colour the output: auto colours a terminal unless NO_COLOR is set (to any
    /// non-empty value); CLICOLOR_FORCE=1 colours even a pipe. --json output is never coloured
    #[arg(long, global = true, value_name = "WHEN", default_value = "auto")]
    pub(crate) color: style::ColorWhen,
}

// Parsed once per process: the size of the largest variant (serve's options) costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
pub(crate) enum Cmd {
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
    /// CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID). A share group (KIP-932)
    /// is described and reset like kafka-share-groups.sh: its start offsets and members
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
pub(crate) enum BenchCmd {
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
pub(crate) struct KafkaAddr(pub(crate) Option<std::net::SocketAddr>);

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
pub(crate) struct ServeArgs {
    /// Address of the web lab
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7070")]
    pub(crate) http: std::net::SocketAddr,
    /// The lab's data directory: the groups' SQLite sinks and the saved session
    #[arg(
        long,
        value_name = "DIR",
        default_value = "./offsetlab-data",
        conflicts_with = "ephemeral"
    )]
    pub(crate) data: PathBuf,
    /// Use a temporary data directory, removed when the lab stops
    #[arg(long)]
    pub(crate) ephemeral: bool,
    /// Discard the lab saved in the data directory and start from the seed. A lab that
    /// cannot be restored is never replaced on its own: the server refuses to start and
    /// says which file is wrong, and this is the way to start over
    #[arg(long, conflicts_with = "ephemeral")]
    pub(crate) reset_data: bool,
    /// Allow a non-loopback --http address (anyone who can reach it can drive the lab)
    #[arg(long)]
    pub(crate) allow_remote: bool,
    /// A name (or address) the lab is reached by, besides 127.0.0.1 and localhost: requests
    /// with any other Host header are refused, which keeps a page whose name was made to
    /// resolve to the lab (DNS rebinding) out. NAME or NAME:PORT; repeat for several
    #[arg(long, value_name = "NAME")]
    pub(crate) public_host: Vec<String>,
    /// When appended records reach the disk: `never` (the page cache, as Kafka relies on
    /// replication), `interval=DUR` (e.g. interval=1s), or `always` (fsync before
    /// acknowledging, concurrent writers sharing one fsync)
    #[arg(long, value_name = "POLICY", default_value = "never")]
    pub(crate) flush: offsetlab_storage::FlushPolicy,
    /// Where real Kafka clients connect (kcat, librdkafka, kafka-python …), or `off`. They
    /// can produce into the lab, consume its logs, and see and reset its consumer groups.
    /// Default: 127.0.0.1:9092, and off with --workshop (a Kafka connection carries no
    /// learner's cookie, so it could only reach one lab: with --workshop --kafka ADDR it serves
    /// the instructor's own lab, shown on the instructor's page)
    #[arg(long, value_name = "ADDR|off")]
    pub(crate) kafka: Option<KafkaAddr>,
    /// Create a topic when a client first produces to it or asks for its metadata, with one
    /// partition — Kafka's auto.create.topics.enable (true by default, as in Kafka)
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) auto_create_topics: bool,
    /// The largest Kafka request accepted, in bytes — Kafka's socket.request.max.bytes. A
    /// request announcing more closes its connection before anything is allocated for it
    #[arg(long, value_name = "BYTES", default_value_t = 100 << 20, value_parser = clap::value_parser!(u32).range(64..))]
    pub(crate) kafka_max_request_bytes: u32,
    /// Kafka connections held at once — Kafka's max.connections. At the cap a new connection
    /// closes the one idle longest, or is refused when every one is answering a request.
    /// Default: a quarter of the process's file descriptor limit
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) kafka_max_connections: Option<u32>,
    /// How long a Kafka connection may go without completing a request before it is closed —
    /// Kafka's connections.max.idle.ms
    #[arg(long, value_name = "DUR", default_value = "10m", value_parser = positive_duration)]
    pub(crate) kafka_idle_timeout: std::time::Duration,
    /// Make the Kafka listener SASL_PLAINTEXT: a client must authenticate with SASL/PLAIN as
    /// one of the users in FILE (one NAME=PASSWORD per line, # comments) before anything else,
    /// as on a secured cluster. Clients then need security.protocol=SASL_PLAINTEXT,
    /// sasl.mechanism=PLAIN, sasl.username, sasl.password
    #[arg(long, value_name = "FILE")]
    pub(crate) kafka_sasl_plain_users: Option<PathBuf>,
    /// HTTP connections held at once. At the cap a new connection closes the one idle longest,
    /// or is refused when every one is answering a request. Default: an eighth of the process's
    /// file descriptor limit
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) http_max_connections: Option<u32>,
    /// How long an HTTP connection may stay silent (no byte either way) before it is closed;
    /// a request's headers must arrive within 10 s whatever this says
    #[arg(long, value_name = "DUR", default_value = "2m", value_parser = positive_duration)]
    pub(crate) http_idle_timeout: std::time::Duration,
    /// How the lab's clock runs: `live` reads wall time, so every timer (sessions, transaction
    /// timeouts, retention, offsets retention) fires on time and real clients' timestamps and
    /// the lab's agree; `paused` moves only when stepped, as lessons and `run` do. Default: the
    /// mode the lab had (a new lab starts live); loading a lesson or a scenario pauses it
    #[arg(long, value_name = "live|paused")]
    pub(crate) clock: Option<offsetlab_lab::session::ClockMode>,
    #[command(flatten)]
    pub(crate) workshop: WorkshopArgs,
    #[command(flatten)]
    pub(crate) cluster: cluster_cmd::ClusterArgs,
}

/// `offsetlab serve --workshop`: a lab per learner.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Workshop")]
pub(crate) struct WorkshopArgs {
    /// Serve a classroom: every browser that opens the page joins with a name and gets a lab
    /// of its own (an unguessable id in a cookie), isolated from every other; the instructor
    /// watches the room at /instructor with the token printed at start
    #[arg(long)]
    pub(crate) workshop: bool,
    /// The most learners the room takes; a join past it is refused
    #[arg(long, value_name = "N", default_value_t = 100, requires = "workshop", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub(crate) max_learners: u32,
    /// Read the instructor's token (16 to 256 printable characters) from FILE instead of
    /// making a new one at every start
    #[arg(long, value_name = "FILE", requires = "workshop")]
    pub(crate) instructor_token_file: Option<PathBuf>,
    /// A learner's lab unused this long is written to disk and dropped from memory (it comes
    /// back, as it was, on their next request)
    #[arg(long, value_name = "DUR", default_value = "2m", value_parser = positive_duration, requires = "workshop")]
    pub(crate) evict_after: std::time::Duration,
    /// The most learner labs kept in memory (and holding files open) at once; past it the
    /// least recently used idle one is evicted. Default: one per 32 file descriptors the
    /// process may open, at least 16, at most 256
    #[arg(long, value_name = "N", requires = "workshop", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) max_resident: Option<u32>,
    /// Requests a second one learner may make (bursts of three times that are let through)
    #[arg(long, value_name = "N", default_value_t = 20, requires = "workshop", value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) learner_rate: u32,
    /// Records one learner's lab may hold, all partitions together
    #[arg(long, value_name = "N", default_value_t = 100_000, requires = "workshop")]
    pub(crate) cap_records: u64,
    /// Bytes of record batches one learner's lab may hold, all partitions together
    #[arg(long, value_name = "BYTES", default_value_t = 64 << 20, requires = "workshop")]
    pub(crate) cap_bytes: u64,
    /// Records one learner's lab may apply to its sinks, all groups together (every rewind
    /// writes again)
    #[arg(long, value_name = "N", default_value_t = 500_000, requires = "workshop")]
    pub(crate) cap_sink_writes: u64,
    /// Consumer groups one learner's lab may hold (a consumer's, an offset reset's, …)
    #[arg(long, value_name = "N", default_value_t = 20, requires = "workshop")]
    pub(crate) cap_groups: usize,
    /// Topics one learner's lab may hold
    #[arg(long, value_name = "N", default_value_t = 20, requires = "workshop")]
    pub(crate) cap_topics: usize,
    /// Partitions one learner's lab may hold, all topics together
    #[arg(long, value_name = "N", default_value_t = 100, requires = "workshop")]
    pub(crate) cap_partitions: u64,
    /// Consumers one learner's lab may start
    #[arg(long, value_name = "N", default_value_t = 20, requires = "workshop")]
    pub(crate) cap_consumers: usize,
    /// Lines one learner's lab history may hold: what bounds every other kind of work
    #[arg(long, value_name = "N", default_value_t = 20_000, requires = "workshop")]
    pub(crate) cap_history_lines: usize,
    /// The largest request body a learner may send (a scenario import), in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 256 << 10, requires = "workshop", value_parser = clap::value_parser!(u64).range(1024..=(64 << 20)))]
    pub(crate) cap_request_bytes: u64,
}

/// A duration such as `500ms`, `30s` or `10m`, longer than zero.
pub(crate) fn positive_duration(v: &str) -> Result<std::time::Duration, String> {
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

/// Where `offsetlab groups --reset-offsets` moves each partition: one of these.
#[derive(clap::Args, Debug)]
pub(crate) struct ResetTo {
    /// Reset: to the log start offset (replays everything retained)
    #[arg(long, group = "spec")]
    pub(crate) to_earliest: bool,
    /// Reset: to the log end offset (skips everything not yet read)
    #[arg(long, group = "spec")]
    pub(crate) to_latest: bool,
    /// Reset: to the committed offset (a no-op that shows the current position)
    #[arg(long, group = "spec")]
    pub(crate) to_current: bool,
    /// Reset: to this offset (clamped to the retained range)
    #[arg(long, group = "spec", value_name = "OFFSET")]
    pub(crate) to_offset: Option<i64>,
    /// Reset: move the committed offset by N (negative replays, positive skips)
    #[arg(long, group = "spec", value_name = "N", allow_hyphen_values = true)]
    pub(crate) shift_by: Option<i64>,
    /// Reset: to the first record at or after YYYY-MM-DDTHH:mm:SS[.sss] (UTC without a zone,
    /// as kafka-consumer-groups.sh reads it)
    #[arg(long, group = "spec", value_name = "DATETIME")]
    pub(crate) to_datetime: Option<String>,
    /// Reset: to the first record of this long ago, ISO-8601 (PT6H: the last six hours)
    #[arg(long, group = "spec", value_name = "DURATION")]
    pub(crate) by_duration: Option<String>,
}

impl ResetTo {
    pub(crate) fn spec(&self) -> Result<groups_cmd::Spec, String> {
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
