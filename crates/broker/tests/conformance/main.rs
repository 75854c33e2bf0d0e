//! Differential conformance: the same conversations — request sequences written with the
//! `kafka-protocol` types, covering every API key and version the lab advertises — sent to the
//! lab's listener and to a real Apache Kafka, and the answers compared field by field after
//! normalising what must differ (`normalize.rs`; docs/CONFORMANCE.md says why for each).
//! Every remaining difference must be explained, with its reason, in docs/CONFORMANCE.md; the
//! report is written to `target/conformance-report.json`.
//!
//! It needs a running Apache Kafka, named by `OFFSETLAB_APACHE_KAFKA=host:port`:
//!
//! ```sh
//! bs=$(scripts/apache-kafka.sh start --dir /tmp/ak)
//! OFFSETLAB_APACHE_KAFKA=$bs cargo test -p offsetlab-broker --test conformance -- --ignored
//! scripts/apache-kafka.sh stop --dir /tmp/ak
//! ```
//!
//! It is `#[ignore]`d so that `cargo test --workspace` does not need a Kafka; `scripts/test.sh`
//! runs it with `--ignored` against the Kafka it starts. Run without the variable, it fails and
//! says how to start one: it never passes without having compared anything.

mod conn;
mod conversations;
mod explained;
mod normalize;
mod report;
mod target;
mod tree;

use normalize::Ctx;
use offsetlab_lab::session::ClockMode;
use offsetlab_lab::LabHandle;
use offsetlab_wire::kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};
use report::Json;
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use target::{api_name, Exchange, Target};

const ENV: &str = "OFFSETLAB_APACHE_KAFKA";

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A directory removed when the test ends, however it ends.
struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The lab's listener on a new durable lab in `dir` (as `offsetlab serve --ephemeral` runs it:
/// segment files of the batches clients sent, a live clock), on its own runtime; its address.
fn start_lab(dir: PathBuf) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port for the lab");
    let addr = listener.local_addr().expect("its address").to_string();
    listener.set_nonblocking(true).expect("non-blocking");
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime for the lab");
        rt.block_on(async move {
            let flush = "never".parse().expect("a flush policy");
            let opened = offsetlab_lab::open(&dir, flush, true, Some(ClockMode::Live)).expect("a new lab");
            let listener = tokio::net::TcpListener::from_std(listener).expect("the listener");
            offsetlab_broker::serve(
                listener,
                LabHandle::new(opened.session),
                offsetlab_broker::KafkaConfig::default(),
            )
            .await;
        });
    });
    addr
}

fn split_addr(addr: &str) -> (String, u16) {
    let (host, port) = addr.rsplit_once(':').unwrap_or((addr, "0"));
    (host.to_string(), port.parse().unwrap_or(0))
}

/// A broker's node id, as its Metadata names it (the test wants one broker).
fn node_id(addr: &str, run: &str) -> i32 {
    let (host, port) = split_addr(addr);
    let mut t = Target::new("probe", addr, Ctx::new(-1, &host, port, run), run)
        .unwrap_or_else(|e| panic!("cannot reach {addr}: {}", e.0));
    let m = t
        .quiet(12, MetadataRequest::default().with_topics(Some(Vec::new())))
        .unwrap_or_else(|e| panic!("Metadata from {addr}: {}", e.0));
    assert_eq!(
        m.brokers.len(),
        1,
        "{addr} is a cluster of {} brokers; the comparison wants one broker (scripts/apache-kafka.sh start, without --brokers)",
        m.brokers.len()
    );
    m.brokers[0].node_id.0
}

/// (api key, version) of every range `addr` advertises.
fn advertised(addr: &str, run: &str) -> BTreeSet<(i16, i16)> {
    let (host, port) = split_addr(addr);
    let mut t = Target::new("probe", addr, Ctx::new(-1, &host, port, run), run)
        .unwrap_or_else(|e| panic!("cannot reach {addr}: {}", e.0));
    let v = t
        .quiet(3, ApiVersionsRequest::default())
        .unwrap_or_else(|e| panic!("ApiVersions from {addr}: {}", e.0));
    v.api_keys
        .iter()
        .flat_map(|k| (k.min_version..=k.max_version).map(move |v| (k.api_key, v)))
        .collect()
}

/// Runs every conversation on one broker.
fn run_side(side: &'static str, addr: String, node: i32, run: String, base_ts: i64) -> Target {
    let (host, port) = split_addr(&addr);
    let mut t = Target::new(side, &addr, Ctx::new(node, &host, port, &run), &run)
        .unwrap_or_else(|e| panic!("{side}: {}", e.0));
    t.base_ts = base_ts;
    if let Err(e) = conversations::warm_up(&mut t) {
        panic!("{side} ({addr}) is not ready: {}", e.0);
    }
    for (name, conversation) in conversations::ALL {
        t.conversation = name.to_string();
        t.fresh_connection();
        if let Err(e) = conversation(&mut t) {
            let why = e.0.clone();
            t.ended(&why);
        }
    }
    t
}

struct Difference {
    conversation: String,
    step: String,
    api: String,
    version: i16,
    path: String,
    lab: Option<String>,
    kafka: Option<String>,
}

fn compare(lab: &[Exchange], kafka: &[Exchange]) -> Vec<Difference> {
    let mut out = Vec::new();
    let by_conversation = |xs: &[Exchange]| {
        let mut m: BTreeMap<String, Vec<Exchange>> = BTreeMap::new();
        for x in xs {
            m.entry(x.conversation.clone()).or_default().push(x.clone());
        }
        m
    };
    let (l, k) = (by_conversation(lab), by_conversation(kafka));
    let names: BTreeSet<&String> = l.keys().chain(k.keys()).collect();
    for name in names {
        let empty = Vec::new();
        let (ls, ks) = (l.get(name).unwrap_or(&empty), k.get(name).unwrap_or(&empty));
        for i in 0..ls.len().max(ks.len()) {
            let (a, b) = (ls.get(i), ks.get(i));
            let same_step = match (a, b) {
                (Some(a), Some(b)) => a.step == b.step && a.api_key == b.api_key && a.version == b.version,
                _ => false,
            };
            if !same_step {
                let show = |x: Option<&Exchange>| {
                    x.map(|x| {
                        let ended = x
                            .answer
                            .get("<ended>")
                            .map_or(String::new(), |w| format!(": {w}"));
                        format!("{} ({} v{}){ended}", x.step, api_name(x.api_key), x.version)
                    })
                };
                let any = a.or(b);
                out.push(Difference {
                    conversation: name.clone(),
                    step: any.map_or(String::new(), |x| x.step.clone()),
                    api: any.map_or(String::new(), |x| api_name(x.api_key)),
                    version: any.map_or(-1, |x| x.version),
                    path: "<step>".into(),
                    lab: show(a),
                    kafka: show(b),
                });
                break;
            }
            let (Some(a), Some(b)) = (a, b) else { break };
            let paths: BTreeSet<&String> = a.answer.keys().chain(b.answer.keys()).collect();
            let mut reported = BTreeSet::new();
            for p in paths {
                let (x, y) = (a.answer.get(p), b.answer.get(p));
                if x == y {
                    continue;
                }
                // Present on one side only: reported once, at the highest field or item the
                // other side lacks whole.
                let (path, x, y) = match (x, y) {
                    (Some(_), None) => absent_root(p, &b.answer, x.cloned()),
                    (None, Some(_)) => {
                        let (root, y, x) = absent_root(p, &a.answer, y.cloned());
                        (root, x, y)
                    }
                    _ => (p.clone(), x.cloned(), y.cloned()),
                };
                if !reported.insert(path.clone()) {
                    continue;
                }
                out.push(Difference {
                    conversation: name.clone(),
                    step: a.step.clone(),
                    api: api_name(a.api_key),
                    version: a.version,
                    path,
                    lab: x,
                    kafka: y,
                });
            }
        }
    }
    out
}

/// The highest prefix of `path` (a field, or an item of a list) that `other` has nothing under:
/// (that prefix, `value` — or `(present)` when the prefix is not the whole path — and `None`).
fn absent_root(
    path: &str,
    other: &tree::Flat,
    value: Option<String>,
) -> (String, Option<String>, Option<String>) {
    let mut depth = 0i32;
    let mut ends = Vec::new();
    for (i, c) in path.char_indices() {
        match c {
            '.' | '[' | '{' if depth == 0 => ends.push(i),
            _ => {}
        }
        match c {
            '[' | '{' => depth += 1,
            ']' | '}' => depth -= 1,
            _ => {}
        }
    }
    ends.push(path.len());
    for end in ends {
        let prefix = &path[..end];
        if prefix.is_empty() {
            continue;
        }
        let has = other
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .any(|(k, _)| {
                k.len() == prefix.len() || matches!(k.as_bytes()[prefix.len()], b'.' | b'[' | b'{')
            });
        if !has {
            let shown = if end == path.len() {
                value
            } else {
                Some("(present)".into())
            };
            return (prefix.to_string(), shown, None);
        }
    }
    (path.to_string(), value, None)
}

#[test]
#[ignore = "needs a running Apache Kafka: OFFSETLAB_APACHE_KAFKA=$(scripts/apache-kafka.sh start) cargo test -p offsetlab-broker --test conformance -- --ignored"]
fn the_listener_answers_as_apache_kafka_does() {
    let kafka = std::env::var(ENV).unwrap_or_else(|_| {
        panic!(
            "{ENV} is not set: this test compares the lab's listener with a running Apache Kafka.\n\
             Start one and name it:\n  bs=$(scripts/apache-kafka.sh start --dir /tmp/ak)\n  \
             {ENV}=$bs cargo test -p offsetlab-broker --test conformance -- --ignored\n  \
             scripts/apache-kafka.sh stop --dir /tmp/ak"
        )
    });
    let kafka = kafka.split(',').next().unwrap_or_default().trim().to_string();
    let root = workspace_root();
    let doc_path = root.join("docs/CONFORMANCE.md");
    let doc = std::fs::read_to_string(&doc_path).unwrap_or_else(|e| panic!("{}: {e}", doc_path.display()));
    let patterns = explained::read(&doc).unwrap_or_else(|e| panic!("{}", e.0));

    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64);
    let run = format!(
        "cf{:x}",
        (now as u64 ^ u64::from(std::process::id()) << 20) & 0xff_ffff_ffff
    );
    let lab_dir = TempDir(std::env::temp_dir().join(format!("offsetlab-conformance-{run}")));
    let lab = start_lab(lab_dir.0.clone());
    // The records' timestamps: whole seconds a minute ago, the same on both brokers.
    let base_ts = (now - 60_000) / 1000 * 1000;
    let lab_node = node_id(&lab, &run);
    let kafka_node = node_id(&kafka, &run);
    let lab_advertised = advertised(&lab, &run);

    let (lab_side, kafka_side) = std::thread::scope(|s| {
        let (r1, r2) = (run.clone(), run.clone());
        let (a1, a2) = (lab.clone(), kafka.clone());
        let l = s.spawn(move || run_side("lab", a1, lab_node, r1, base_ts));
        let k = s.spawn(move || run_side("kafka", a2, kafka_node, r2, base_ts));
        (
            l.join().expect("the lab's side ran"),
            k.join().expect("Kafka's side ran"),
        )
    });

    // Every exchange of both sides, for reading a difference in its context.
    let transcripts = root.join("target/conformance-transcripts");
    if std::fs::create_dir_all(&transcripts).is_ok() {
        for side in [&lab_side, &kafka_side] {
            let mut text = String::new();
            for x in &side.exchanges {
                text.push_str(&format!(
                    "== {}/{} {} v{}\n",
                    x.conversation,
                    x.step,
                    api_name(x.api_key),
                    x.version
                ));
                for (k, v) in &x.answer {
                    text.push_str(&format!("{k} = {v}\n"));
                }
            }
            let _ = std::fs::write(transcripts.join(format!("{}.txt", side.side)), text);
        }
    }
    let differences = compare(&lab_side.exchanges, &kafka_side.exchanges);
    let explanation = |d: &Difference| {
        // Steps are named in words; patterns spell the spaces as hyphens.
        let step = format!("{}/{}", d.conversation, d.step.replace(' ', "-"));
        patterns
            .iter()
            .position(|p| p.matches(&d.api, d.version, &step, &d.path))
    };
    let mut used = vec![0usize; patterns.len()];
    let mut unexplained = Vec::new();
    let mut rows = Vec::new();
    for d in &differences {
        let e = explanation(d);
        if let Some(i) = e {
            used[i] += 1;
        } else {
            unexplained.push(d);
        }
        rows.push(Json::obj(vec![
            ("conversation", Json::str(&d.conversation)),
            ("step", Json::str(&d.step)),
            ("api", Json::str(&d.api)),
            ("version", Json::Num(i64::from(d.version))),
            ("path", Json::str(&d.path)),
            ("lab", Json::opt(d.lab.as_deref())),
            ("kafka", Json::opt(d.kafka.as_deref())),
            (
                "explained_by",
                e.map_or(Json::Null, |i| {
                    Json::str(format!(
                        "docs/CONFORMANCE.md:{}: {}",
                        patterns[i].line, patterns[i].text
                    ))
                }),
            ),
        ]));
    }
    let stale: Vec<&explained::Pattern> = patterns
        .iter()
        .zip(&used)
        .filter(|(_, n)| **n == 0)
        .map(|(p, _)| p)
        .collect();
    let missing: Vec<(i16, i16)> = lab_advertised.difference(&lab_side.sent).copied().collect();
    // A conversation that stopped on the test's own side (a request the codec cannot encode, an
    // answer it cannot decode) compares nothing after that point, on either broker: a failure.
    let harness_errors: Vec<String> = lab_side
        .exchanges
        .iter()
        .chain(&kafka_side.exchanges)
        .filter_map(|x| x.answer.get("<ended>").map(|why| (x, why)))
        .filter(|(_, why)| {
            ["cannot encode", "cannot decode", "does not parse"]
                .iter()
                .any(|w| why.contains(w))
        })
        .map(|(x, why)| format!("{}: {why}", x.conversation))
        .collect();

    let report = Json::obj(vec![
        ("kafka", Json::str(&kafka)),
        ("run", Json::str(&run)),
        (
            "exchanges",
            Json::obj(vec![
                ("lab", Json::Num(lab_side.exchanges.len() as i64)),
                ("kafka", Json::Num(kafka_side.exchanges.len() as i64)),
            ]),
        ),
        (
            "coverage",
            Json::obj(vec![
                ("advertised", Json::Num(lab_advertised.len() as i64)),
                (
                    "sent",
                    Json::Num(lab_advertised.intersection(&lab_side.sent).count() as i64),
                ),
                (
                    "missing",
                    Json::Arr(
                        missing
                            .iter()
                            .map(|(k, v)| Json::str(format!("{} v{v}", api_name(*k))))
                            .collect(),
                    ),
                ),
            ]),
        ),
        ("differences", Json::Num(differences.len() as i64)),
        ("unexplained", Json::Num(unexplained.len() as i64)),
        (
            "stale_explanations",
            Json::Arr(
                stale
                    .iter()
                    .map(|p| Json::str(format!("docs/CONFORMANCE.md:{}: {}", p.line, p.text)))
                    .collect(),
            ),
        ),
        ("all", Json::Arr(rows)),
    ]);
    let mut text = String::new();
    report.write(&mut text, 0);
    text.push('\n');
    let report_path = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| root.join("target"), PathBuf::from)
        .join("conformance-report.json");
    std::fs::write(&report_path, text).unwrap_or_else(|e| panic!("{}: {e}", report_path.display()));

    let mut failures = Vec::new();
    if !harness_errors.is_empty() {
        failures.push(format!(
            "the test's own requests or decoding failed:\n  {}",
            harness_errors.join("\n  ")
        ));
    }
    if !missing.is_empty() {
        failures.push(format!(
            "{} advertised (api, version) never sent: {}",
            missing.len(),
            missing
                .iter()
                .map(|(k, v)| format!("{} v{v}", api_name(*k)))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    if !unexplained.is_empty() {
        let mut lines = Vec::new();
        for d in unexplained.iter().take(300) {
            lines.push(format!(
                "  {} v{} {}/{} {}: lab {} | kafka {}",
                d.api,
                d.version,
                d.conversation,
                d.step,
                d.path,
                d.lab.as_deref().unwrap_or("(absent)"),
                d.kafka.as_deref().unwrap_or("(absent)")
            ));
        }
        failures.push(format!(
            "{} differences not explained in docs/CONFORMANCE.md:\n{}",
            unexplained.len(),
            lines.join("\n")
        ));
    }
    if !stale.is_empty() {
        failures.push(format!(
            "{} explanations in docs/CONFORMANCE.md match no difference any more:\n{}",
            stale.len(),
            stale
                .iter()
                .map(|p| format!("  line {}: {}", p.line, p.text))
                .collect::<Vec<_>>()
                .join("\n")
        ));
    }
    eprintln!(
        "conformance: {} exchanges with each broker, {} of {} advertised (api, version) sent, {} differences ({} explained); report: {}",
        lab_side.exchanges.len(),
        lab_advertised.intersection(&lab_side.sent).count(),
        lab_advertised.len(),
        differences.len(),
        differences.len() - unexplained.len(),
        report_path.display()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
