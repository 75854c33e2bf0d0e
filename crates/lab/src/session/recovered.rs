//! What a start found lost: a partition's log shorter than the lab had acknowledged — its tail
//! torn by a machine crash under `--flush never`, cut by the storage's recovery — reported on the
//! console, kept in the session for the page (and, in a workshop, the instructor), and written
//! into the history as a `truncate-log` line, so that the history agrees with the log: an undo or
//! an export replays the records that were lost, then cuts them, and every record the lab serves
//! after the restart keeps its offset and its content through any later replay.

use super::*;
use offsetlab_engine::lab::TailLoss;
use offsetlab_scenario::command::TruncateLog;

/// One partition whose tail a start found lost.
#[derive(Debug, Clone, Serialize)]
pub struct Recovered {
    /// The partition, the offsets lost, the groups left committed past the new end.
    #[serde(flatten)]
    pub loss: TailLoss,
    /// Where the recovery kept the bytes it cut, relative to the lab's generation directory
    /// (`logs/<partition>/cut/…`).
    pub kept_aside: Vec<String>,
}

impl std::fmt::Display for Recovered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.loss)?;
        if !self.kept_aside.is_empty() {
            write!(f, "; the cut bytes are kept in {}", self.kept_aside.join(", "))?;
        }
        Ok(())
    }
}

impl Session {
    /// What the last start found lost (empty when every log ended where the lab left it).
    pub fn recovered(&self) -> &[Recovered] {
        &self.recovered
    }

    /// Writes each loss down: the log cut and sealed where the recovery left it, the lab told,
    /// a `truncate-log` line in the history, the lab saved — and each named on the console.
    /// `aside` is what the store's recovery kept per partition (`topic-p`).
    pub(crate) fn write_down_losses(
        &mut self,
        losses: Vec<TailLoss>,
        aside: &BTreeMap<String, Vec<PathBuf>>,
    ) -> Result<(), LabError> {
        if losses.is_empty() {
            return Ok(());
        }
        let dir = self
            .generation
            .as_ref()
            .map(|g| g.dir.clone())
            .unwrap_or_default();
        for lost in losses {
            let line = TruncateLog {
                topic: lost.topic.clone(),
                partition: lost.partition,
                to: lost.from,
                was: Some(lost.to),
            };
            let loss = self
                .lab
                .truncate_log(&line.topic, line.partition, line.to, line.was)?;
            self.history.push(Command::TruncateLog(line));
            let kept_aside: Vec<String> = aside
                .get(&format!("{}-{}", loss.topic, loss.partition))
                .into_iter()
                .flatten()
                .map(|p| p.strip_prefix(&dir).unwrap_or(p).display().to_string())
                .collect();
            tracing::warn!(
                partition = %format!("{}-{}", loss.topic, loss.partition),
                lost_from = loss.from,
                lost_to = loss.to - 1,
                committed_past_end = ?loss.committed_past_end,
                kept_aside = ?kept_aside,
                "a log lost acknowledged records: its tail did not survive the stop (a machine crash under --flush never) and was cut; the next record takes offset {}",
                loss.from
            );
            self.recovered.push(Recovered { loss, kept_aside });
        }
        if let Some(fault) = self.take_fault() {
            return Err(storage(fault.message));
        }
        self.version += 1;
        self.persist()
    }
}
