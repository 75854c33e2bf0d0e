//! The share agent, as the runner starts and speaks to it: the Python program (confluent-kafka's
//! `ShareConsumer`, librdkafka's share consumer) the binary carries, which Python runs it, and its
//! admin mode for a share group's configs.

use crate::protocol::Reply;
use serde::Serialize;
use std::path::PathBuf;
use std::process::Command;

/// The share agent: a Python program on confluent-kafka's `ShareConsumer`.
pub const SHARE_AGENT: &str = include_str!("../../share_agent.py");

/// The Python a run starts share agents with: `OFFSETLAB_PYTHON`, or `python3` on the `PATH`.
pub fn python() -> PathBuf {
    std::env::var_os("OFFSETLAB_PYTHON").map_or_else(|| PathBuf::from("python3"), PathBuf::from)
}

/// Why `python` cannot run share agents, if it cannot: it must import confluent-kafka's
/// `ShareConsumer`.
pub fn python_cannot_run_share_agents(python: &std::path::Path) -> Option<String> {
    let out = Command::new(python)
        .args(["-c", "from confluent_kafka import ShareConsumer"])
        .output();
    let why = match out {
        Ok(o) if o.status.success() => return None,
        Ok(o) => String::from_utf8_lossy(&o.stderr)
            .lines()
            .last()
            .unwrap_or("it failed")
            .to_string(),
        Err(e) => e.to_string(),
    };
    Some(format!(
        "share consumers run on a cluster as confluent-kafka's ShareConsumer (librdkafka 2.15+), and {} cannot import it ({why}): `pip install 'confluent-kafka>=2.16'`, and point OFFSETLAB_PYTHON at that Python",
        python.display()
    ))
}

/// The share agent's admin mode, once: its settings on stdin, its one answer on stdout (the
/// client's own timeouts bound how long it takes).
pub(super) fn run_admin(json: &str) -> Result<(), String> {
    use std::io::Write;
    let mut child = Command::new(python())
        .args(["-c", SHARE_AGENT])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", python().display()))?;
    if let Some(mut to) = child.stdin.take() {
        writeln!(to, "{json}").map_err(|e| e.to_string())?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    let text = String::from_utf8_lossy(&out.stdout);
    match text.lines().last().map(crate::protocol::decode::<Reply>) {
        Some(Ok(Reply::Closed)) => Ok(()),
        Some(Ok(Reply::Failed { message })) => Err(message),
        _ => Err(format!("the share agent answered {:?}", text.trim())),
    }
}

/// A share agent's settings: the first line of its stdin.
#[derive(Debug, Serialize)]
pub(super) struct ShareSettings<'a> {
    pub(super) mode: &'static str,
    pub(super) bootstrap_servers: &'a str,
    pub(super) group: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) topic: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) client_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) acknowledgement_mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) max_poll_records: Option<usize>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub(super) configs: Vec<(String, String)>,
    pub(super) extra: &'a [(String, String)],
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_python_that_cannot_import_the_share_consumer_is_named_with_what_to_install() {
        let why =
            python_cannot_run_share_agents(std::path::Path::new("/nonexistent/python3")).expect("refused");
        assert!(why.contains("/nonexistent/python3"), "{why}");
        assert!(why.contains("pip install 'confluent-kafka>=2.16'"), "{why}");
    }
}
