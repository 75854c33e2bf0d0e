//! From `offsetlab serve`'s flags to a running server: the flags checked against each other,
//! turned into `serve_cmd`'s configuration (the listener's, the page's and a workshop's limits,
//! sized from the descriptors this process has), and the server run on a runtime of its own —
//! or, with `--bootstrap-server`, the page run on a real cluster instead.

use crate::args::ServeArgs;
use crate::{cluster_cmd, exit, serve_cmd, style};

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

pub(crate) fn serve(args: ServeArgs) -> u8 {
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            style::say_error!("cannot start the runtime: {e}");
            return exit::IO_ERROR;
        }
    };
    if let Some(bootstrap) = args.cluster.bootstrap_server.clone() {
        return serve_on_cluster(&runtime, args, &bootstrap);
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
    let config = serve_config(args, sasl_plain);
    match runtime.block_on(serve_cmd::serve(config)) {
        Ok(()) => exit::OK,
        Err(e) => {
            style::say_error!("{e:#}");
            exit::IO_ERROR
        }
    }
}

/// With `--bootstrap-server`: the page's every action runs on that cluster first; no workshop,
/// no listener of the lab's own.
fn serve_on_cluster(runtime: &tokio::runtime::Runtime, args: ServeArgs, bootstrap: &str) -> u8 {
    if args.workshop.workshop || args.kafka.as_ref().is_some_and(|k| k.0.is_some()) {
        style::say_error!("with --bootstrap-server the page drives that cluster: no --workshop, no --kafka listener of the lab's own");
        return exit::INVALID_SCENARIO;
    }
    if !args.http.ip().is_loopback() && !args.allow_remote {
        style::say_error!(
            "{} is not a loopback address: the lab listens on 127.0.0.1 only unless you pass --allow-remote",
            args.http
        );
        return exit::INVALID_SCENARIO;
    }
    let (mirror, scratch) = match cluster_cmd::mirror(&args.cluster, bootstrap) {
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
    code
}

/// The server's configuration, every limit sized: the Kafka listener's, the page's and — with
/// `--workshop` — the room's.
fn serve_config(
    args: ServeArgs,
    sasl_plain: Option<std::sync::Arc<offsetlab_broker::sasl::PlainUsers>>,
) -> serve_cmd::ServeConfig {
    serve_cmd::ServeConfig {
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
        workshop: args.workshop.workshop.then(|| workshop_options(&args.workshop)),
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
    }
}

/// A workshop's options: its caps and rates, and how many labs stay in memory (a thirty-second
/// of the descriptors, within 16..=256, unless `--max-resident` says).
fn workshop_options(w: &crate::args::WorkshopArgs) -> serve_cmd::WorkshopOptions {
    serve_cmd::WorkshopOptions {
        max_learners: w.max_learners as usize,
        instructor_token_file: w.instructor_token_file.clone(),
        evict_after: w.evict_after,
        max_resident: w.max_resident.map_or_else(
            || {
                let fds = offsetlab_storage::descriptor_limit().unwrap_or(1024);
                usize::try_from(fds / 32).unwrap_or(256).clamp(16, 256)
            },
            |n| n as usize,
        ),
        rate: offsetlab_web::workshop::RateLimit {
            per_second: f64::from(w.learner_rate),
            burst: 3.0 * f64::from(w.learner_rate),
        },
        caps: offsetlab_lab::caps::Caps {
            records: w.cap_records,
            bytes: w.cap_bytes,
            sink_writes: w.cap_sink_writes,
            topics: w.cap_topics,
            partitions: w.cap_partitions,
            consumers: w.cap_consumers,
            groups: w.cap_groups,
            history_lines: w.cap_history_lines,
        },
        max_request_bytes: usize::try_from(w.cap_request_bytes).unwrap_or(256 << 10),
    }
}
