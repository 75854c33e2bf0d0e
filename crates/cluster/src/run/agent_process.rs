//! One consumer agent as the runner sees it: a child process (`offsetlab agent`) spoken to
//! over its stdin and stdout, one typed message per line.
//!
//! Every answer is waited for with a deadline (a reader thread hands the lines over), so an
//! agent that hangs fails its request instead of the run; [`AgentProcess::kill`] is `SIGKILL`.

use crate::protocol::{decode, encode, Reply, Request};
use crate::settings::ConsumerSettings;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

/// Why an agent did not answer as the protocol says.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("consumer {consumer}'s agent process: {why}")]
pub struct AgentError {
    pub consumer: String,
    pub why: String,
}

/// How far off the agent's report of when its client was created may be (the pipe, the
/// scheduler).
pub const CREATED_SLACK: Duration = Duration::from_millis(25);

pub struct AgentProcess {
    consumer: String,
    child: Child,
    to: ChildStdin,
    replies: Receiver<String>,
    /// When the process was started, and when its client (and its auto-commit timer) was
    /// created, as it said (give or take [`CREATED_SLACK`]).
    pub started: Instant,
    pub created: Instant,
    /// Why the client stopped as it was given its partitions, if it did (`reset=none` and no
    /// committed offset).
    pub stopped: Option<String>,
    /// An answer that did not come in time may still come: after one, the process is killed
    /// and every request refused, so no request ever reads another's answer.
    gone: Option<String>,
}

impl AgentProcess {
    /// Starts `program agent`, hands it its settings as the first line of its stdin (never on
    /// its command line, which every user of the machine can read: the settings hold the
    /// client's properties, `sasl.password` among them), and waits (up to `timeout`) for its
    /// `ready`.
    pub fn start(
        program: &Path,
        name: &str,
        settings: &ConsumerSettings,
        timeout: Duration,
    ) -> Result<Self, AgentError> {
        let json = serde_json::to_string(settings).map_err(|e| AgentError {
            consumer: name.to_string(),
            why: e.to_string(),
        })?;
        let mut command = Command::new(program);
        command.arg("agent");
        Self::spawn(command, name, &json, timeout)
    }

    /// Starts `command` as an agent: its settings (`json`) on the first line of its stdin, then
    /// its `ready` waited for (up to `timeout`, and the group's first join on top).
    pub fn spawn(
        mut command: Command,
        name: &str,
        json: &str,
        timeout: Duration,
    ) -> Result<Self, AgentError> {
        let fail = |why: String| AgentError {
            consumer: name.to_string(),
            why,
        };
        let program = command.get_program().to_string_lossy().into_owned();
        let started = Instant::now();
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| fail(format!("cannot start {program}: {e}")))?;
        let (mut to, from) = match (child.stdin.take(), child.stdout.take()) {
            (Some(to), Some(from)) => (to, from),
            _ => return Err(fail("no pipes to the process".into())),
        };
        if let Err(e) = writeln!(to, "{json}").and_then(|()| to.flush()) {
            let _ = child.kill();
            let _ = child.wait();
            return Err(fail(format!("cannot hand the process its settings: {e}")));
        }
        let (tx, replies) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(from).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut agent = Self {
            consumer: name.to_string(),
            child,
            to,
            replies,
            started,
            created: started,
            stopped: None,
            gone: None,
        };
        // Joining the group can take the broker's initial rebalance delay on top.
        match agent.reply(timeout + Duration::from_secs(35))? {
            Reply::Ready {
                created_ms_ago,
                stopped,
                ..
            } => {
                agent.stopped = stopped;
                let ready = Instant::now();
                agent.created = ready
                    .checked_sub(Duration::from_millis(created_ms_ago))
                    .unwrap_or(started)
                    .max(started);
                Ok(agent)
            }
            Reply::Failed { message } => Err(fail(message)),
            other => Err(fail(format!("answered {other:?} before it was ready"))),
        }
    }

    fn fail(&self, why: impl Into<String>) -> AgentError {
        AgentError {
            consumer: self.consumer.clone(),
            why: why.into(),
        }
    }

    fn reply(&mut self, timeout: Duration) -> Result<Reply, AgentError> {
        match self.replies.recv_timeout(timeout) {
            Ok(line) => decode(&line).map_err(|e| self.fail(e.to_string())),
            Err(RecvTimeoutError::Timeout) => Err(self.fail(format!("no answer within {timeout:?}"))),
            Err(RecvTimeoutError::Disconnected) => {
                let status = self.child.try_wait().ok().flatten();
                Err(self.fail(match status {
                    Some(s) => format!("it exited ({s}); run `offsetlab agent` by hand to see why"),
                    None => "it closed its output".to_string(),
                }))
            }
        }
    }

    /// Sends `request` and waits up to `timeout` for its answer. A `failed` answer is an error
    /// naming the client's complaint.
    pub fn ask(&mut self, request: &Request, timeout: Duration) -> Result<Reply, AgentError> {
        if let Some(why) = &self.gone {
            return Err(self.fail(format!("it is gone ({why})")));
        }
        let answer = self.exchange(request, timeout);
        if let Err(e) = &answer {
            if !self.is_alive() || e.why.starts_with("no answer within") {
                let _ = self.child.kill();
                self.gone = Some(e.why.clone());
            }
        }
        answer
    }

    fn is_alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    fn exchange(&mut self, request: &Request, timeout: Duration) -> Result<Reply, AgentError> {
        writeln!(self.to, "{}", encode(request))
            .and_then(|()| self.to.flush())
            .map_err(|e| self.fail(format!("cannot write to it: {e}")))?;
        match self.reply(timeout)? {
            Reply::Failed { message } => Err(self.fail(message)),
            reply => Ok(reply),
        }
    }

    /// `SIGKILL`: no LeaveGroup, no final commit; the client's timer dies with the process.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `close()`, then waits for the process to end.
    pub fn close(mut self, timeout: Duration) -> Result<(), AgentError> {
        let answer = self.ask(&Request::Close, timeout);
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        answer.map(|_| ())
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
