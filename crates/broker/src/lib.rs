//! # offsetlab-broker
//!
//! The Kafka listener: real Kafka clients — kcat, librdkafka, kafka-python, a Java service —
//! produce into the lab's logs, consume from any offset with either isolation level, look
//! offsets up by time, join consumer groups, commit, run transactions, and administer topics
//! and groups. What they change reaches the lab as typed commands ([`change`]), applied and
//! saved like anything the page does, so the history, the export and the page see it.
//!
//! - [`server`]: sockets — connections within a cap, frames within a size limit, idle timeouts.
//! - [`apis`]: a request decoded, dispatched to its handler, the response encoded.
//! - `handlers/`: one file per API key.
//! - [`coordinator`]: the group coordinator for real clients (Kafka's classic protocol).
//! - [`delayed_fetch`]: a fetch with nothing to read yet, parked until a change can answer it.
//! - [`producers`]: idempotent producers' ids and sequence numbers.
//! - [`change`]: how a handler changes the lab, and which Kafka error code a refusal is.
//! - [`sasl`]: SASL/PLAIN authentication of a connection, when the listener asks for it.

mod apis;
mod auth_failures;
mod authorized;
mod auto_create;
mod broker;
mod change;
mod coordinator;
mod delayed_fetch;
mod handlers;
mod produced;
mod producers;
#[cfg(test)]
mod reads_while_writing;
pub mod sasl;
mod server;
mod share_members;
mod share_sessions;
#[cfg(test)]
mod testing;
mod topic_configs;
mod transaction_state;
mod txn_timeouts;

pub use broker::KafkaConfig;

use broker::Broker;
use offsetlab_lab::LabHandle;
use offsetlab_scenario::command::{Command, ConsumerGroupState};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

/// Serves `lab` to Kafka clients on `listener` until the runtime stops.
pub async fn serve(listener: TcpListener, lab: LabHandle, config: KafkaConfig) {
    let Ok(advertised) = listener.local_addr() else {
        return;
    };
    let broker = Arc::new(Broker::new(lab, config, advertised));
    forget_members_of_the_last_run(&broker).await;
    // Sessions, rebalance timeouts and real clients' transaction timeouts run on wall time:
    // check them a few times a second.
    {
        let broker = Arc::clone(&broker);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(250));
            loop {
                every.tick().await;
                let broker = Arc::clone(&broker);
                let _ = tokio::task::spawn_blocking(move || {
                    let _settle = broker.coordinator.settle_lock();
                    let now = std::time::Instant::now();
                    let topics = handlers::consumer_group_heartbeat::topics_by_id(&broker.lab.view());
                    let settled = broker.coordinator.tick(now, &topics);
                    let _ = change::settle(&broker.lab, &broker.coordinator, settled);
                    // Share group members whose session ran out (no ShareGroupHeartbeat within
                    // share.session.timeout.ms): out of their groups, their records released.
                    let timeouts: std::collections::HashMap<String, Duration> = broker
                        .lab
                        .lock()
                        .lab()
                        .share()
                        .groups
                        .values()
                        .map(|g| {
                            let ms = u64::try_from(g.config.session_timeout_ms).unwrap_or(45_000);
                            (g.name.clone(), Duration::from_millis(ms))
                        })
                        .collect();
                    let timeout_of = |group: &str| {
                        timeouts
                            .get(group)
                            .copied()
                            .unwrap_or(share_members::SESSION_TIMEOUT)
                    };
                    for leave in broker.share_members.expired(now, timeout_of) {
                        if let Command::ShareLeave(l) = &leave {
                            broker.share_sessions.forget(&l.group, &l.member);
                        }
                        let _ = change::apply_commands(&broker.lab, broker.lab.lock(), vec![leave]);
                    }
                    let s = broker.lab.lock();
                    let due = broker.txn_timeouts.due(s.lab(), now);
                    if due.is_empty() {
                        drop(s);
                    } else {
                        // Refused when the transaction ended meanwhile: nothing to abort then.
                        let _ = change::apply_commands(&broker.lab, s, due);
                    }
                })
                .await;
            }
        });
    }
    server::accept(listener, broker).await;
}

/// Real clients that were members when the lab last stopped are gone with the coordinator's
/// memory: their groups are Empty until they join again (as after their session timeout), and
/// their share groups' members leave.
async fn forget_members_of_the_last_run(broker: &Arc<Broker>) {
    let broker = Arc::clone(broker);
    let _ = tokio::task::spawn_blocking(move || {
        let _settle = broker.coordinator.settle_lock();
        let emptied: Vec<_> = {
            let s = broker.lab.lock();
            s.lab()
                .groups()
                .values()
                .filter_map(|g| {
                    let e = g.external.as_ref().filter(|e| !e.members.is_empty())?;
                    if let Some(c) = &g.consumer {
                        // A consumer-protocol group: Empty, at a new epoch.
                        return Some(Command::ConsumerGroupState(ConsumerGroupState {
                            group: g.name.clone(),
                            epoch: c.group_epoch + 1,
                            assignment_epoch: c.group_epoch + 1,
                            members: Vec::new(),
                        }));
                    }
                    Some(coordinator::empty_group(
                        &g.name,
                        g.generation + 1,
                        &e.protocol_type,
                        &e.protocol,
                    ))
                })
                .collect()
        };
        let _ = change::settle(&broker.lab, &broker.coordinator, emptied);
        // Share groups' real members too: their sessions (and connections) are gone; they leave,
        // releasing what they held, and join again with their next heartbeat.
        let gone: Vec<Command> = {
            let s = broker.lab.lock();
            s.lab()
                .share()
                .groups
                .values()
                .flat_map(|g| {
                    g.members.iter().filter(|m| m.client).map(|m| {
                        Command::ShareLeave(offsetlab_scenario::command::ShareLeave {
                            group: g.name.clone(),
                            member: m.id.clone(),
                            session_timeout: true,
                        })
                    })
                })
                .collect()
        };
        if !gone.is_empty() {
            let _ = change::apply_commands(&broker.lab, broker.lab.lock(), gone);
        }
    })
    .await;
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}
