//! `serve --bootstrap-server`: the page's lab, run on a real cluster as it is typed.
//!
//! Every action line runs on a [`ClusterRun`] first — its model, then the cluster: real
//! librdkafka consumers in processes of their own, `crash` a `SIGKILL` — and then on the page's
//! own lab, the same model, which draws the log, the consumers and the narrative. The figures the
//! page shows are the cluster's: every state it is sent has each group's committed offsets, log
//! end offsets and lag read from the cluster, the audit and the sink of what the real consumers
//! handed over, and the members the group coordinator lists — in place of the model's.

use offsetlab_cluster::run::{ClusterRun, RunError};
use offsetlab_lab::session::{ActionError, Applied, Session};
use offsetlab_scenario::script::Line;
use offsetlab_scenario::Command;
use serde_json::{json, Value};
use std::sync::{Mutex, MutexGuard};

pub struct ClusterMirror {
    run: Mutex<ClusterRun>,
    /// Set when a line failed on the cluster after the model had taken it: the cluster and
    /// the page's lab no longer tell the same story, and no further line runs.
    broken: Mutex<Option<String>>,
}

impl ClusterMirror {
    pub fn new(run: ClusterRun) -> Self {
        Self {
            run: Mutex::new(run),
            broken: Mutex::new(None),
        }
    }

    fn broken(&self) -> MutexGuard<'_, Option<String>> {
        self.broken
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn run(&self) -> MutexGuard<'_, ClusterRun> {
        self.run.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs one of the page's lines on the cluster, then on the page's lab. A line the cluster
    /// refuses or fails changes neither.
    pub(crate) fn apply(&self, session: &mut Session, text: &str) -> Result<Applied, ActionError> {
        let refused = |status: u16, error: String| ActionError {
            status,
            error,
            line: 1,
            text: text.to_string(),
            cause: None,
        };
        let command = match Command::parse(text) {
            Ok(Some(c)) => c,
            Ok(None) => return session.apply_lines(&[text.to_string()]),
            Err(e) => return Err(refused(400, e.to_string())),
        };
        let line = Line {
            number: 1,
            text: text.to_string(),
            command,
        };
        if let Some(why) = self.broken().clone() {
            return Err(refused(
                409,
                format!("an earlier line failed on the cluster ({why}): the cluster and this page no longer agree — restart `offsetlab serve --bootstrap-server`"),
            ));
        }
        let now = session.lab().now();
        if let Err(e) = self.run().apply_now(&line, now) {
            // Refused before the model took it: nothing changed anywhere. Otherwise the model
            // (and part of the cluster) moved on without the page.
            let clean = matches!(
                e,
                RunError::Unrunnable(_)
                    | RunError::Names(_)
                    | RunError::Model(_)
                    | RunError::Expectation { .. }
            ) || matches!(e, RunError::Cluster(_) if matches!(line.command, Command::Consumer(_) | Command::ResetOffsets(_)) && e.to_string().contains("exists on the cluster"));
            if !clean {
                *self.broken() = Some(e.to_string());
            }
            let status = match e.exit_code() {
                3 => 502,
                _ => 422,
            };
            return Err(refused(status, e.to_string()));
        }
        session.apply_lines(&[text.to_string()])
    }

    /// `state` (the page's lab, as JSON) with the cluster's figures in place of the model's.
    pub(crate) fn overlay(&self, mut state: Value) -> Value {
        let mut run = self.run();
        let mut cluster = json!({
            "bootstrap": run.bootstrap(),
            "prefix": run.prefix().as_str(),
        });
        if let Err(e) = overlay_groups(&mut run, &mut state) {
            cluster["error"] = json!(e.to_string());
        }
        state["cluster"] = cluster;
        state
    }

    /// A window of one of the run's topics read from the cluster (the page's log view).
    pub(crate) fn log_window(
        &self,
        topic: &str,
        partition: i32,
        from: Option<i64>,
        max: usize,
    ) -> Result<offsetlab_cluster::run::LogWindow, RunError> {
        self.run().log_window(topic, partition, from, max)
    }

    /// Closes the run's consumers and deletes what it created (unless `--keep`).
    pub fn finish(&self) -> Vec<String> {
        self.run().finish()
    }
}

fn overlay_groups(run: &mut ClusterRun, state: &mut Value) -> Result<(), RunError> {
    for g in run.figures()? {
        let members = run.members(&g.group)?;
        let Some(view) = state["groups"].get_mut(&g.group) else {
            continue;
        };
        for p in &g.partitions {
            let key = format!("{}-{}", p.topic, p.partition);
            view["committed"][&key] = json!(p.committed.filter(|&c| c >= 0));
            view["log_end_offset"][&key] = json!(p.log_end_offset);
            view["lag"][&key] = json!(p.lag);
            if let Some(parts) = view["partitions"].as_array_mut() {
                for q in parts
                    .iter_mut()
                    .filter(|q| q["topic"] == json!(p.topic) && q["partition"] == json!(p.partition))
                {
                    q["committed"] = json!(p.committed.filter(|&c| c >= 0));
                    q["kafka_committed"] = json!(p.committed);
                    q["log_start_offset"] = json!(p.log_start_offset);
                    q["log_end_offset"] = json!(p.log_end_offset);
                    q["lag"] = json!(p.lag);
                    q["audit"] = json!(p.audit);
                    q["lost_ranges"] = json!(p.lost_ranges);
                }
            }
        }
        let sum = |f: &dyn Fn(&offsetlab_engine::audit::AuditFigures) -> u64| -> u64 {
            g.partitions.iter().map(|p| f(&p.audit)).sum()
        };
        view["audit"]["lost"] = json!(sum(&|a| a.lost));
        view["audit"]["duplicates"] = json!(sum(&|a| a.duplicates));
        view["audit"]["redeliveries"] = json!(sum(&|a| a.redeliveries));
        view["audit"]["crash_redeliveries"] = json!(sum(&|a| a.crash_redeliveries));
        view["audit"]["replays"] = json!(sum(&|a| a.replays));
        view["audit"]["skipped"] = json!(sum(&|a| a.skipped));
        view["audit"]["deliveries"] = json!(sum(&|a| a.deliveries));
        view["audit"]["duplicate_rows"] = json!(g.duplicate_rows);
        view["sink"]["rows"] = json!(g.sink_rows);
        view["sink"]["distinct_keys"] = json!(g.distinct_keys);
        view["sink"]["duplicate_rows"] = json!(g.duplicate_rows);
        // The coordinator's members, by the scenario consumer each is (its client id): the
        // page's member ids are kept for those the cluster lists.
        let clients: Vec<&str> = members.iter().map(|(client, _)| client.as_str()).collect();
        if let Some(list) = view["members"].as_array_mut() {
            list.retain(|m| {
                m.as_str()
                    .and_then(|id| id.split('#').next())
                    .is_some_and(|name| clients.contains(&name))
            });
        }
        view["cluster_members"] = json!(members
            .iter()
            .map(|(client, id)| format!("{client} ({id})"))
            .collect::<Vec<_>>());
    }
    Ok(())
}
