//! `offsetlab serve`: the lab of a data directory opened ([`offsetlab_lab::open`]), served to
//! browsers ([`offsetlab_web`]) and to Kafka clients ([`offsetlab_broker`]) at once.

use offsetlab_lab::LabHandle;
use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

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
    pub kafka_config: offsetlab_broker::KafkaConfig,
    /// Discard the data directory's lab before starting (`--reset-data`).
    pub reset_data: bool,
    /// The HTTP server's connection cap and timeouts.
    pub http_limits: offsetlab_web::http::HttpLimits,
    /// How the lab's clock runs (`--clock`); `None` keeps the lab's own mode.
    pub clock: Option<offsetlab_lab::session::ClockMode>,
    /// A lab per learner (`--workshop`), bounded so.
    pub workshop: Option<WorkshopOptions>,
}

/// `serve --workshop`'s bounds.
pub struct WorkshopOptions {
    pub max_learners: usize,
    pub instructor_token_file: Option<PathBuf>,
    pub evict_after: std::time::Duration,
    pub max_resident: usize,
    pub rate: offsetlab_web::workshop::RateLimit,
    pub caps: offsetlab_lab::caps::Caps,
    pub max_request_bytes: usize,
}

/// Runs the lab — the page and the Kafka listener, both serving one [`LabHandle`] — until
/// Ctrl-C, then closes it cleanly.
pub async fn serve(mut config: ServeConfig) -> anyhow::Result<()> {
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
    if let Some(w) = config.workshop.take() {
        return serve_workshop(config, w, data_dir).await;
    }
    let started = std::time::Instant::now();
    let opened = offsetlab_lab::open(&data_dir, config.flush, config.reset_data, config.clock)?;
    for path in &opened.removed {
        eprintln!("--reset-data: removed {}", path.display());
    }
    let restored = opened
        .restored
        .map(|s| format!("{s}; restored in {:.0?}", started.elapsed()));
    let listener = tokio::net::TcpListener::bind(config.http).await?;
    let addr = listener.local_addr()?;
    let clock = opened.session.clock_mode();
    let lab = LabHandle::new(opened.session);
    tokio::spawn(live_clock(lab.clone()));
    let state = offsetlab_web::AppState::new(lab.clone(), addr, &config.public_hosts);
    remote_note(&config, state.hosts());
    let kafka = start_kafka(&config, &lab).await;
    // Write errors are ignored: a lab whose stdout was closed keeps serving.
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "offsetlab lab on http://{addr}  (data: {}, --flush {}, clock {clock}){}{}\npress Ctrl-C to stop",
        data_dir.display(),
        config.flush,
        restored
            .map(|s| format!("\nlab restored: {s}"))
            .unwrap_or_default(),
        kafka
            .map(|k| kafka_banner(k, &config.kafka_config))
            .unwrap_or_default()
    );
    let _ = out.flush();
    serve_until_stopped(listener, state, config.http_limits).await?;
    // A clean stop: logs synced and snapshotted, so the next start reads no record data.
    lab.lock()
        .close()
        .map_err(|e| anyhow::anyhow!("closing the lab: {e}"))?;
    Ok(())
}

/// `serve --bootstrap-server`: a page whose every action runs on a real cluster first, its
/// figures read from there. The page's lab starts empty, on a live clock (time is the
/// cluster's), in memory: the cluster keeps what matters. At Ctrl-C the run's consumers are
/// closed and what it created on the cluster is deleted (unless `--keep`).
pub async fn serve_cluster(
    http: SocketAddr,
    public_hosts: Vec<String>,
    limits: offsetlab_web::http::HttpLimits,
    mirror: std::sync::Arc<offsetlab_web::cluster::ClusterMirror>,
) -> anyhow::Result<()> {
    let mut session = offsetlab_lab::session::Session::new(offsetlab_lab::session::SinkBackend::Memory, "")
        .map_err(|e| anyhow::anyhow!("an empty lab: {}", e.error))?;
    session.set_clock_mode(offsetlab_lab::session::ClockMode::Live)?;
    session
        .catch_up(offsetlab_lab::session::wall_clock_ms())
        .map_err(|e| anyhow::anyhow!("the clock: {}", e.error))?;
    let listener = tokio::net::TcpListener::bind(http).await?;
    let addr = listener.local_addr()?;
    let lab = LabHandle::new(session);
    tokio::spawn(live_clock(lab.clone()));
    let state = offsetlab_web::AppState::on_cluster(lab, addr, &public_hosts, std::sync::Arc::clone(&mirror));
    let mut out = std::io::stdout();
    let _ = writeln!(
        out,
        "offsetlab lab on http://{addr}  (every action runs on the cluster first: real consumers, real crashes)\npress Ctrl-C to stop"
    );
    let _ = out.flush();
    let served = serve_until_stopped(listener, state, limits).await;
    let mirror = std::sync::Arc::clone(&mirror);
    let left = tokio::task::spawn_blocking(move || mirror.finish()).await?;
    for l in left {
        crate::style::say_warning!("cleaning up the cluster: {l}");
    }
    Ok(served?)
}

/// The page and its API on `listener` until Ctrl-C or SIGTERM.
async fn serve_until_stopped(
    listener: tokio::net::TcpListener,
    state: offsetlab_web::AppState,
    limits: offsetlab_web::http::HttpLimits,
) -> std::io::Result<()> {
    offsetlab_web::http::serve(
        listener,
        offsetlab_web::router(state),
        limits,
        crate::shutdown::requested(),
    )
    .await
}

/// The note `--allow-remote` without `--public-host` deserves.
fn remote_note(config: &ServeConfig, hosts: &[String]) {
    if config.allow_remote && config.public_hosts.is_empty() {
        eprintln!(
            "note: --allow-remote without --public-host: the lab answers only requests whose Host is one of {}; add --public-host NAME for the name (or address) people use to reach it",
            hosts.join(", ")
        );
    }
}

/// The banner's line for the Kafka listener at `k`: where, and how to try it.
fn kafka_banner(k: SocketAddr, config: &offsetlab_broker::KafkaConfig) -> String {
    match &config.sasl_plain {
        None => format!("\nKafka listener on {k} (try: kcat -b {k} -L)"),
        Some(users) => format!(
            "\nKafka listener on {k} (SASL_PLAINTEXT with SASL/PLAIN for {} user{}; try: kcat -b {k} -L -X security.protocol=SASL_PLAINTEXT -X sasl.mechanism=PLAIN -X sasl.username=NAME -X sasl.password=PASSWORD)",
            users.len(),
            if users.len() == 1 { "" } else { "s" }
        ),
    }
}

/// The Kafka listener on `lab`, if `--kafka` asks for one; where it listens.
async fn start_kafka(config: &ServeConfig, lab: &LabHandle) -> Option<SocketAddr> {
    let addr = config.kafka?;
    match tokio::net::TcpListener::bind(addr).await {
        Ok(l) => {
            let bound = l.local_addr().ok();
            tokio::spawn(offsetlab_broker::serve(
                l,
                lab.clone(),
                config.kafka_config.clone(),
            ));
            bound
        }
        Err(e) => {
            crate::style::say_warning!(
                "the Kafka listener cannot listen on {addr} ({e}); the lab runs without it"
            );
            None
        }
    }
}

/// `serve --workshop`: a room of learner labs under `DATA/workshop`, the instructor's page, and
/// — with `--kafka` — the data directory's own lab served to Kafka clients as the instructor's.
async fn serve_workshop(
    config: ServeConfig,
    options: WorkshopOptions,
    data_dir: PathBuf,
) -> anyhow::Result<()> {
    use offsetlab_web::workshop::{Room, Token, Workshop, WorkshopConfig};
    let room_dir = data_dir.join("workshop");
    if config.reset_data {
        match std::fs::remove_dir_all(&room_dir) {
            Ok(()) => eprintln!("--reset-data: removed {}", room_dir.display()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => anyhow::bail!("--reset-data: cannot remove {}: {e}", room_dir.display()),
        }
    }
    let token = match &options.instructor_token_file {
        Some(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| anyhow::anyhow!("--instructor-token-file {}: {e}", path.display()))?;
            Token::parse(&text)
                .map_err(|e| anyhow::anyhow!("--instructor-token-file {}: {e}", path.display()))?
        }
        None => Token::random()
            .map_err(|e| anyhow::anyhow!("no random source for the instructor's token: {e}"))?,
    };
    let room = Room::open(WorkshopConfig {
        flush: config.flush,
        clock: config.clock,
        max_learners: options.max_learners,
        caps: options.caps,
        max_request_bytes: options.max_request_bytes,
        evict_after: options.evict_after,
        max_resident: options.max_resident,
        rate: options.rate,
        ..WorkshopConfig::new(room_dir.clone())
    })?;
    let demo = match config.kafka {
        Some(_) => {
            let opened = offsetlab_lab::open(&data_dir, config.flush, config.reset_data, config.clock)?;
            let mut session = opened.session;
            // Anyone who reaches the Kafka port can grow it: the learners' caps hold for it too,
            // but its history's length (real clients commit every few seconds, each a line).
            session.set_caps(Some(offsetlab_lab::caps::Caps {
                history_lines: usize::MAX,
                ..options.caps
            }));
            Some(LabHandle::new(session))
        }
        None => None,
    };
    let listener = tokio::net::TcpListener::bind(config.http).await?;
    let addr = listener.local_addr()?;
    let learners = room.len();
    let workshop = std::sync::Arc::new(Workshop { room, token, demo });
    let state =
        offsetlab_web::AppState::workshop(std::sync::Arc::clone(&workshop), addr, &config.public_hosts);
    remote_note(&config, state.hosts());
    let kafka = match &workshop.demo {
        Some(lab) => {
            tokio::spawn(live_clock(lab.clone()));
            start_kafka(&config, lab).await
        }
        None => None,
    };
    tokio::spawn(room_keeper(std::sync::Arc::clone(&workshop)));
    let mut out = std::io::stdout();
    let token_line = match &options.instructor_token_file {
        Some(path) => format!(
            "instructor: http://{addr}/instructor  (token in {})",
            path.display()
        ),
        None => format!(
            "instructor: http://{addr}/instructor#token={}",
            workshop.token.as_str()
        ),
    };
    let _ = writeln!(
        out,
        "offsetlab workshop on http://{addr}  (data: {}, {learners} of at most {} learners joined, --flush {})\n{token_line}{}\npress Ctrl-C to stop",
        room_dir.display(),
        options.max_learners,
        config.flush,
        kafka
            .map(|k| format!("\nKafka listener on {k}, serving the instructor's lab (try: kcat -b {k} -L)"))
            .unwrap_or_default()
    );
    let _ = out.flush();
    serve_until_stopped(listener, state, config.http_limits).await?;
    let closing = std::sync::Arc::clone(&workshop);
    tokio::task::spawn_blocking(move || closing.room.close_all()).await?;
    if let Some(lab) = &workshop.demo {
        lab.lock()
            .close()
            .map_err(|e| anyhow::anyhow!("closing the instructor's lab: {e}"))?;
    }
    Ok(())
}

/// A workshop's housekeeping: four times a second the live clocks of the labs in memory catch
/// up where a timer is due; every two seconds idle labs are evicted.
async fn room_keeper(workshop: std::sync::Arc<offsetlab_web::workshop::Workshop>) {
    let mut every = tokio::time::interval(std::time::Duration::from_millis(250));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    for n in 0u64.. {
        every.tick().await;
        if workshop.room.is_closing() {
            return;
        }
        let w = std::sync::Arc::clone(&workshop);
        let _ = tokio::task::spawn_blocking(move || {
            w.room.catch_up_due_timers();
            if n % 8 == 0 {
                w.room.evict_idle();
            }
        })
        .await;
    }
}

/// The live clock's ticker: four times a second, a live lab whose next timer is due by wall time
/// catches up to it ([`LabHandle::catch_up_due_timers`]) — a session expiring, offsets retention,
/// a segment retention deletes — so timers fire on time even while nobody acts. A paused lab
/// costs a lock and a comparison; a live one with nothing due, the same once its next deadline
/// is known (computed again only after a change).
async fn live_clock(lab: LabHandle) {
    let mut every = tokio::time::interval(std::time::Duration::from_millis(250));
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    // Told once per cause, not four times a second.
    let mut told: Option<String> = None;
    loop {
        every.tick().await;
        let lab = lab.clone();
        match tokio::task::spawn_blocking(move || lab.catch_up_due_timers()).await {
            Ok(Err(e)) => {
                let e = e.to_string();
                if told.as_ref() != Some(&e) {
                    crate::style::say_warning!("the live clock could not catch up: {e}");
                    told = Some(e);
                }
            }
            _ => told = None,
        }
    }
}
