//! The history: the lines that built the lab, in order. A durable lab keeps in memory only the
//! lines its last save has not yet written; the others are in its file (`history.scenario`),
//! read back when the whole history is needed — an undo that replays it, an export.
//!
//! Why: a client producing at full speed adds a `send … stored=` line per request, so a history
//! held in memory grew with the traffic for the life of the process (about 4 MB a minute in the
//! ten-minute soak); its file had every line already.

use super::*;
use std::borrow::Cow;
use std::os::unix::fs::FileExt;

/// The history: lines only in the file, then the lines in memory.
#[derive(Debug, Default)]
pub(crate) struct History {
    /// How many of the first lines are only in `file`, and the bytes they take there.
    forgotten: usize,
    forgotten_bytes: u64,
    file: Option<PathBuf>,
    recent: Vec<Command>,
}

impl From<Vec<Command>> for History {
    fn from(recent: Vec<Command>) -> Self {
        Self {
            recent,
            ..Self::default()
        }
    }
}

impl History {
    pub(crate) fn len(&self) -> usize {
        self.forgotten + self.recent.len()
    }

    pub(crate) fn push(&mut self, command: Command) {
        self.recent.push(command);
    }

    pub(crate) fn extend(&mut self, commands: impl IntoIterator<Item = Command>) {
        self.recent.extend(commands);
    }

    /// The last line.
    #[cfg(test)]
    pub(crate) fn last(&self) -> Option<Command> {
        self.all().ok().and_then(|all| all.last().cloned())
    }

    /// Keeps the first `n` lines. Lines only the file holds stay: the history is only ever cut
    /// back to a save, which wrote them.
    pub(crate) fn truncate(&mut self, n: usize) {
        self.recent.truncate(n.saturating_sub(self.forgotten));
    }

    /// The lines from the `n`th on, if memory holds them all.
    pub(crate) fn since(&self, n: usize) -> Option<&[Command]> {
        self.recent.get(n.checked_sub(self.forgotten)?..)
    }

    /// The first `upto` lines; those memory let go are read back from the file.
    pub(crate) fn upto(&self, upto: usize) -> Result<Cow<'_, [Command]>, LabError> {
        let upto = upto.min(self.len());
        if self.forgotten == 0 {
            return Ok(Cow::Borrowed(&self.recent[..upto]));
        }
        let path = self
            .file
            .as_ref()
            .ok_or_else(|| storage("the history let lines go that no file holds"))?;
        let failed =
            |why: String| storage(format!("reading the history back from {}: {why}", path.display()));
        let file = std::fs::File::open(path).map_err(|e| failed(e.to_string()))?;
        let len = usize::try_from(self.forgotten_bytes).map_err(|e| failed(e.to_string()))?;
        let mut bytes = vec![0u8; len];
        file.read_exact_at(&mut bytes, 0)
            .map_err(|e| failed(e.to_string()))?;
        let text = String::from_utf8(bytes).map_err(|e| failed(e.to_string()))?;
        let mut lines: Vec<Command> = Script::parse(&text)
            .map_err(|e| failed(format!("line {}: {}", e.line(), e.reason())))?
            .lines
            .into_iter()
            .map(|l| l.command)
            .collect();
        if lines.len() != self.forgotten {
            return Err(failed(format!(
                "{} lines where {} were written",
                lines.len(),
                self.forgotten
            )));
        }
        lines.extend(self.recent.iter().cloned());
        lines.truncate(upto);
        Ok(Cow::Owned(lines))
    }

    /// Every line.
    pub(crate) fn all(&self) -> Result<Cow<'_, [Command]>, LabError> {
        self.upto(self.len())
    }

    /// The first `lines` lines are saved, the first `bytes` of `file`: memory lets them go.
    pub(crate) fn let_go(&mut self, lines: usize, bytes: u64, file: &Path) {
        if lines <= self.forgotten || lines > self.len() {
            return;
        }
        self.recent.drain(..lines - self.forgotten);
        self.forgotten = lines;
        self.forgotten_bytes = bytes;
        self.file = Some(file.to_path_buf());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<Command> {
        Script::parse(text)
            .expect("script")
            .lines
            .into_iter()
            .map(|l| l.command)
            .collect()
    }

    #[test]
    fn lines_let_go_are_read_back_from_the_file() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join(HISTORY_FILE);
        let text = format!("{HISTORY_HEADER}topic t\nproduce t count=2\n");
        std::fs::write(&path, format!("{text}produce t count=3\n")).expect("file");
        let mut h = History::from(parse("topic t\nproduce t count=2\nproduce t count=3\n"));
        h.let_go(2, text.len() as u64, &path);
        assert_eq!(h.len(), 3);
        assert!(h.since(1).is_none(), "line 1 is only in the file");
        assert_eq!(h.since(2).map(<[Command]>::len), Some(1));
        h.push(parse("tick 1s").remove(0));
        let all: Vec<String> = h.all().expect("all").iter().map(ToString::to_string).collect();
        let expected: Vec<String> = parse("topic t\nproduce t count=2\nproduce t count=3\ntick 1s\n")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(all, expected);
        assert_eq!(h.upto(1).expect("upto").len(), 1);
        h.truncate(0);
        assert_eq!(h.len(), 2, "what only the file holds stays");
        std::fs::write(&path, "topic t\n").expect("a shorter file");
        assert!(
            h.all().is_err(),
            "a file that no longer holds the lines is an error, not a shorter history"
        );
    }
}
