//! # offsetlab-web
//!
//! `offsetlab serve`: the lab in a browser. An axum server holds one [`session::Session`]
//! behind a mutex, exposes it as a small JSON API (`docs/API.md`), pushes a version number to
//! every open tab over server-sent events when the lab changes (each tab then fetches the new
//! state, so several tabs stay in sync), and serves the page — plain HTML, CSS and JavaScript
//! embedded in the binary, so running the lab needs no Node build.

mod api;
mod assets;
pub mod connections;
mod guard;
pub mod http;
pub mod kafka;
pub mod session;

pub use api::{router, AppState, MAX_PAGE};
use session::{Session, SinkBackend};
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Largest request body accepted (a scenario import); actions are far smaller.
pub const MAX_BODY_BYTES: usize = 4 << 20;

pub struct ServeConfig {
    pub http: SocketAddr,
    /// The lab's data directory; `None` for a temporary one removed at exit.
    pub data_dir: Option<PathBuf>,
    /// Serve on a non-loopback address.
    pub allow_remote: bool,
    /// Host names (besides the loopback ones) whose requests the lab answers (`--public-host`).
    pub public_hosts: Vec<String>,
    /// When appended records reach the disk (`--flush`).
    pub flush: offsetlab_storage::FlushPolicy,
    /// Where the Kafka listener listens (`--kafka`), if it does.
    pub kafka: Option<SocketAddr>,
    /// How it behaves (`--auto-create-topics`).
    pub kafka_config: kafka::KafkaConfig,
    /// Discard the data directory's lab before starting (`--reset-data`).
    pub reset_data: bool,
    /// The HTTP server's connection cap and timeouts.
    pub http_limits: http::HttpLimits,
}

/// The file in the data directory that held the session before the durable log; a data
/// directory that has it and no lab yet starts from it.
pub const SESSION_FILE: &str = "session.scn";

/// Runs the web lab until Ctrl-C.
pub async fn serve(config: ServeConfig) -> anyhow::Result<()> {
    if let Some(k) = config
        .kafka
        .filter(|k| !k.ip().is_loopback() && !config.allow_remote)
    {
        anyhow::bail!(
            "{k} is not a loopback address: the Kafka listener listens on 127.0.0.1 only unless you pass --allow-remote"
        );
    }
    if !config.http.ip().is_loopback() && !config.allow_remote {
        anyhow::bail!(
            "{} is not a loopback address: the lab listens on 127.0.0.1 only unless you pass --allow-remote",
            config.http
        );
    }
    let temp;
    let data_dir = match &config.data_dir {
        Some(d) => d.clone(),
        None => {
            temp = tempfile::tempdir()?;
            temp.path().to_path_buf()
        }
    };
    std::fs::create_dir_all(&data_dir)?;
    let root = data_dir.join("lab");
    let backend = SinkBackend::Durable {
        root: root.clone(),
        flush: config.flush,
    };
    let session_file = data_dir.join(SESSION_FILE);
    if config.reset_data {
        // The one way to discard a lab that exists: asked for by name.
        for (path, dir) in [(&root, true), (&session_file, false)] {
            let removed = if dir {
                std::fs::remove_dir_all(path)
            } else {
                std::fs::remove_file(path)
            };
            match removed {
                Ok(()) => eprintln!("--reset-data: removed {}", path.display()),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => anyhow::bail!("--reset-data: cannot remove {}: {e}", path.display()),
            }
        }
    }
    let started = std::time::Instant::now();
    let (session, restored) = match Session::restore(&root, config.flush) {
        Ok(Some((s, summary))) => (s, Some(summary)),
        Ok(None) => (new_session(&backend, &root, &session_file)?, None),
        Err(e) => anyhow::bail!(
            "the lab in {} cannot be restored, and the server will not start over it.\n  {e}\n\
             {} To keep it, fix or restore that file; to start a new lab, use another directory \
             (--data DIR) or discard this one with `offsetlab serve --reset-data`.",
            data_dir.display(),
            if e.untouched {
                format!("Nothing in {} was changed.", data_dir.display())
            } else {
                "Only what a restart changes was changed (unacknowledged tails cut, as after a crash); the lab's own files are as they were.".to_string()
            },
        ),
    };
    let restored = restored.map(|s| format!("{s}; restored in {:.0?}", started.elapsed()));
    let listener = tokio::net::TcpListener::bind(config.http).await?;
    let addr = listener.local_addr()?;
    let session = Arc::new(Mutex::new(session));
    let state = AppState::new(Arc::clone(&session), addr, &config.public_hosts);
    if config.allow_remote && config.public_hosts.is_empty() {
        eprintln!(
            "note: --allow-remote without --public-host: the lab answers only requests whose Host is one of {}; add --public-host NAME for the name (or address) people use to reach it",
            state.hosts().join(", ")
        );
    }
    let kafka = match config.kafka {
        Some(addr) => match tokio::net::TcpListener::bind(addr).await {
            Ok(l) => {
                let bound = l.local_addr().ok();
                tokio::spawn(kafka::serve(l, state.clone(), config.kafka_config));
                bound
            }
            Err(e) => {
                eprintln!(
                    "warning: the Kafka listener cannot listen on {addr} ({e}); the lab runs without it"
                );
                None
            }
        },
        None => None,
    };
    // Write errors are ignored: a lab whose stdout was closed keeps serving.
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "offsetlab lab on http://{addr}  (data: {}, --flush {}){}{}\npress Ctrl-C to stop",
        data_dir.display(),
        config.flush,
        restored
            .map(|s| format!("\nlab restored: {s}"))
            .unwrap_or_default(),
        kafka
            .map(|k| format!("\nKafka listener on {k} (try: kcat -b {k} -L)"))
            .unwrap_or_default()
    );
    let _ = out.flush();
    http::serve(listener, router(state), config.http_limits, async {
        let _ = tokio::signal::ctrl_c().await;
    })
    .await?;
    // A clean stop: logs synced and snapshotted, so the next start reads no record data.
    let mut s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    s.close().map_err(|e| anyhow::anyhow!("closing the lab: {e}"))?;
    Ok(())
}

/// The lab of a data directory that has none yet: a session file from before the durable log
/// (`session.scn`) replayed, or the seed. A session file that does not replay stops the start —
/// it is a user's lab, and the seed never takes its place.
fn new_session(
    backend: &SinkBackend,
    root: &std::path::Path,
    session_file: &std::path::Path,
) -> anyhow::Result<Session> {
    // Generations without `current` naming one: a first start interrupted before its switch —
    // or a `current` that was lost. Which one cannot be told from here, so nothing is removed
    // and nothing started over them.
    let generations: Vec<String> = std::fs::read_dir(root)
        .map(|entries| {
            entries
                .filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .filter(|n| n.starts_with("gen-"))
                .collect()
        })
        .unwrap_or_default();
    if !generations.is_empty() {
        anyhow::bail!(
            "{} holds lab generations ({}) but no `current` file naming one, so the lab cannot be restored and the server will not start over them. \
             Write the number of the generation to keep into {}, use another directory (--data DIR), or discard them with `offsetlab serve --reset-data`.",
            root.display(),
            generations.join(", "),
            root.join("current").display()
        );
    }
    if session_file.exists() {
        let text = std::fs::read_to_string(session_file)
            .map_err(|e| anyhow::anyhow!("{}: {e}", session_file.display()))?;
        return Session::new(backend.clone(), &text).map_err(|e| {
            anyhow::anyhow!(
                "{}, line {}: {}\nThe server will not start over this lab. Fix the file, use another \
                 directory (--data DIR), or discard it with `offsetlab serve --reset-data`.",
                session_file.display(),
                e.line,
                e.error
            )
        });
    }
    Session::new(backend.clone(), offsetlab_scenario::LAB_SCENARIO).map_err(|e| anyhow::anyhow!(e.error))
}
