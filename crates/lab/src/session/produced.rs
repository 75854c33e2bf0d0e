//! Where the record batches real clients produced stay readable, and the export that spells them out.

use super::*;
use offsetlab_engine::lab::BatchPacking;
use offsetlab_engine::log::Compression;

/// Where the record batches real clients produced stay readable for the history: a
/// `send … stored=FILE:AT+LEN` line names `LEN` bytes of `FILE` from `AT`. The listener appends a
/// client's batches to the log as they came; a durable lab's log keeps the segments they went to
/// as hard links in the generation's `produced/` directory (no second copy, and the bytes outlive
/// retention, compaction and the topic's deletion). An in-memory lab keeps a copy in the session
/// (`memory`). The history never holds those records as text and the produce path never decodes
/// one; undo and export read them back from here.
pub(crate) enum ProducedStore {
    /// A durable generation's kept segments.
    Dir(PathBuf),
    /// An in-memory lab's copies, the file `memory`.
    Memory(Vec<u8>),
}

/// The directory of kept segments in a generation.
pub(crate) const PRODUCED_DIR: &str = "produced";

pub(crate) const MEMORY_FILE: &str = "memory";

impl ProducedStore {
    /// Keeps `bytes` (an in-memory lab's batches, which its log keeps no file of).
    pub(crate) fn keep(&mut self, bytes: &[u8]) -> Result<(String, u64), LabError> {
        match self {
            Self::Memory(v) => {
                let at = v.len() as u64;
                v.extend_from_slice(bytes);
                Ok((MEMORY_FILE.to_string(), at))
            }
            Self::Dir(_) => Err(storage("the durable log kept no copy of a client's batches")),
        }
    }

    /// The batches a `send … stored=` line names, validated again: a file is outside input.
    pub(crate) fn batches(&self, line: &SendStored) -> Result<ProducedBatches, LabError> {
        let too_large = || storage(format!("{line}: not a byte range a produce request could fill"));
        let len = usize::try_from(line.len).map_err(|_| too_large())?;
        if len > 1 << 30 {
            return Err(too_large());
        }
        let missing = || storage(format!("{line}: the lab keeps no such batches"));
        let bytes = match self {
            Self::Dir(dir) => {
                let io = |e: std::io::Error| storage(format!("{line}: {e}"));
                let path = dir.join(&line.file);
                let file = match std::fs::File::open(&path) {
                    Ok(f) => f,
                    // Retention deleted the segment: its shape stands in for it.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                        let bytes = offsetlab_storage::shape::read_shape(
                            &offsetlab_storage::shape::shape_path(&path),
                            line.at,
                            line.len,
                        )
                        .map_err(|e| match e.kind() {
                            std::io::ErrorKind::NotFound | std::io::ErrorKind::UnexpectedEof => missing(),
                            _ => io(e),
                        })?;
                        return checked(line, bytes);
                    }
                    Err(e) => return Err(io(e)),
                };
                // Checked against the file before anything is allocated for it.
                let end = line.at.checked_add(line.len).ok_or_else(missing)?;
                if file.metadata().map_err(io)?.len() < end {
                    return Err(missing());
                }
                let mut bytes = vec![0; len];
                std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, line.at).map_err(io)?;
                bytes
            }
            Self::Memory(v) => {
                let range = usize::try_from(line.at)
                    .ok()
                    .and_then(|at| Some(at..at.checked_add(len)?))
                    .filter(|r| line.file == MEMORY_FILE && r.end <= v.len())
                    .ok_or_else(missing)?;
                v[range].to_vec()
            }
        };
        checked(line, bytes)
    }

    /// The batches of `line` still whole, and how many of its records are not: for a line on a
    /// partition whose tail a crash tore (a later `truncate-log` cuts it), whose kept segment —
    /// the same file as the log's — the recovery cut. `None` when no batch survived.
    pub(crate) fn surviving(&self, line: &SendStored) -> Result<(Option<ProducedBatches>, usize), LabError> {
        let Self::Dir(dir) = self else {
            // An in-memory lab's copies are never torn.
            return Ok((Some(self.batches(line)?), 0));
        };
        if let Ok(batches) = self.batches(line) {
            return Ok((Some(batches), 0));
        }
        let io = |e: std::io::Error| storage(format!("{line}: {e}"));
        let file = match std::fs::File::open(dir.join(&line.file)) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok((None, line.count)),
            Err(e) => return Err(io(e)),
        };
        let there = file
            .metadata()
            .map_err(io)?
            .len()
            .saturating_sub(line.at)
            .min(line.len);
        let mut bytes = vec![0; usize::try_from(there).map_err(|_| storage(format!("{line}: too large")))?];
        std::os::unix::fs::FileExt::read_exact_at(&file, &mut bytes, line.at).map_err(io)?;
        // Whole batches from the start: base offset (8), length (4), then `length` bytes.
        let mut whole = 0usize;
        while let Some(len) = bytes.get(whole + 8..whole + 12) {
            let len = i32::from_be_bytes([len[0], len[1], len[2], len[3]]);
            let end = usize::try_from(len)
                .ok()
                .and_then(|l| (whole + 12).checked_add(l));
            match end {
                Some(end) if end <= bytes.len() => whole = end,
                _ => break,
            }
        }
        bytes.truncate(whole);
        let batches = (whole > 0)
            .then(|| ProducedBatches::validate(bytes).ok())
            .flatten()
            .filter(|b| b.records() <= line.count);
        let kept = batches.as_ref().map_or(0, ProducedBatches::records);
        Ok((batches, line.count - kept))
    }

    /// The line's records, as `send … records=[…]` lines spell them out.
    /// One line for the stored line, with its batches' sizes, so a replay lays the records out
    /// in segments as the client's batches were (more than one only past `MAX_SEND_RECORDS`,
    /// cut between batches).
    pub(crate) fn spelled_out(&self, line: &SendStored) -> Result<Vec<Command>, LabError> {
        Ok(spell(line, &self.batches(line)?))
    }

    /// [`ProducedStore::spelled_out`] for a line on a partition whose tail a crash tore: its
    /// surviving batches spelled out, then stand-ins for the records it lost ([`stand_ins`]).
    pub(crate) fn spelled_out_torn(&self, line: &SendStored) -> Result<Vec<Command>, LabError> {
        let (stored, missing) = self.surviving(line)?;
        let mut lines = stored.map(|s| spell(line, &s)).unwrap_or_default();
        lines.extend(stand_ins(line, missing));
        Ok(lines)
    }
}

/// The records of `stored` (the batches of `line`) as `send … records=[…]` lines.
/// One line for the stored line, with its batches' sizes, so a replay lays the records out
/// in segments as the client's batches were (more than one only past `MAX_SEND_RECORDS`,
/// cut between batches).
fn spell(line: &SendStored, stored: &ProducedBatches) -> Vec<Command> {
    {
        let mut lines = Vec::new();
        let (mut records, mut sizes) = (Vec::new(), Vec::new());
        // One line per run of batches in one codec: a line says how its batches were compressed.
        let mut codec = None;
        stored.each_batch(&mut |b| {
            let this = Compression::from_attributes(b.header.attributes).unwrap_or(Compression::None);
            // The producer's timestamps: always for a CreateTime batch (readers see them), and
            // for a LogAppendTime one when they differ within the batch — a replay encodes the
            // same deltas, so the batch takes the same bytes (and the segments roll where they
            // rolled), while readers see its log append time.
            let created: Vec<i64> = b.create_timestamps().collect();
            let base = b.header.base_timestamp;
            let moved = !b.header.is_log_append_time() || created.iter().any(|&t| t != base);
            // A base that is not the first record's own timestamp (some clients take the
            // earliest) is written on that record.
            let based = created.first().is_some_and(|&t| t != base).then_some(base);
            let batch: Vec<SentRecord> = b
                .records()
                .zip(created)
                .enumerate()
                .map(|(i, (r, created))| SentRecord {
                    batch_timestamp: if i == 0 { based } else { None },
                    key: r.key.map(Into::into),
                    value: r.value.map(Into::into),
                    timestamp: moved.then_some(created),
                    headers: offsetlab_engine::record::headers::decode(r.headers)
                        .unwrap_or_default()
                        .into_iter()
                        .map(offsetlab_engine::lab::SentHeader::from)
                        .collect(),
                })
                .collect();
            if (codec.is_some_and(|c| c != this) || this != Compression::None) && !records.is_empty() {
                let packing = BatchPacking::in_codec(codec.unwrap_or(Compression::None));
                lines.push(spelled_send(
                    line,
                    std::mem::take(&mut records),
                    std::mem::take(&mut sizes),
                    packing,
                ));
            }
            codec = Some(this);
            // A compressed batch is a line of its own, with its compressor's very bytes — when
            // they are what the line's records encode to (a record the lab spells differently,
            // such as a malformed header, leaves the bytes to the lab's compressor): the replay
            // stores them as they are.
            if this != Compression::None && batch.len() <= MAX_SEND_RECORDS {
                let bytes = b
                    .bytes()
                    .get(offsetlab_records::batch::HEADER_LEN..)
                    .unwrap_or_default();
                let kept = offsetlab_engine::lab::sent_batch_matches(&batch, based, this, bytes, base);
                let packing = BatchPacking {
                    codec: this,
                    compressed: kept.then(|| bytes.to_vec()),
                };
                lines.push(spelled_send(line, batch, vec![], packing));
                return;
            }
            for chunk in batch.chunks(MAX_SEND_RECORDS) {
                if records.len() + chunk.len() > MAX_SEND_RECORDS {
                    lines.push(spelled_send(
                        line,
                        std::mem::take(&mut records),
                        std::mem::take(&mut sizes),
                        BatchPacking::in_codec(this),
                    ));
                }
                records.extend_from_slice(chunk);
                sizes.push(chunk.len());
            }
        });
        if !records.is_empty() {
            let packing = BatchPacking::in_codec(codec.unwrap_or(Compression::None));
            lines.push(spelled_send(line, records, sizes, packing));
        }
        lines
    }
}

/// `bytes` as the batches of `line`: validated, holding the records it counts.
fn checked(line: &SendStored, bytes: Vec<u8>) -> Result<ProducedBatches, LabError> {
    let batches = ProducedBatches::validate(bytes).map_err(|e| storage(format!("{line}: {e}")))?;
    if batches.records() != line.count {
        return Err(storage(format!(
            "{line}: the stored batches hold {} records",
            batches.records()
        )));
    }
    Ok(batches)
}

/// What stands in, in a replay, for `missing` records of `line` a crash tore: `send` lines of
/// records that say so, which take the offsets the lost records held until the `truncate-log`
/// line after them cuts them again. (What the lab served from those records before the crash —
/// sink rows, an audit — is replayed from the stand-ins: their content is lost with the bytes.)
pub(crate) fn stand_ins(line: &SendStored, missing: usize) -> Vec<Command> {
    let lost = SentRecord {
        key: None,
        value: Some("lost: a crash tore this record's bytes before the restart cut the log".into()),
        timestamp: None,
        headers: Vec::new(),
        batch_timestamp: None,
    };
    let mut lines = Vec::new();
    let mut left = missing;
    while left > 0 {
        let n = left.min(MAX_SEND_RECORDS);
        lines.push(spelled_send(
            line,
            vec![lost.clone(); n],
            Vec::new(),
            BatchPacking::default(),
        ));
        left -= n;
    }
    lines
}

/// A `send … records=` line for (part of) a stored line.
pub(crate) fn spelled_send(
    line: &SendStored,
    records: Vec<SentRecord>,
    batches: Vec<usize>,
    packing: BatchPacking,
) -> Command {
    Command::Send(Send {
        topic: line.topic.clone(),
        partition: line.partition,
        batches: if batches.len() > 1 { batches } else { Vec::new() },
        records,
        client: line.client.clone(),
        packing,
    })
}

impl Session {
    /// The session as a scenario file that replays it exactly.
    /// Stored batches are spelled out as `send … records=[…]` lines, so the file stands on its
    /// own; batches that can no longer be read are named in a comment. An error if the history's
    /// file cannot be read back.
    pub fn export(&self) -> Result<String, LabError> {
        let mut out = String::from("# exported from the offsetlab web lab\n");
        let history = self.history.all()?;
        let torn = torn_partitions(history.iter());
        for c in history.iter() {
            match c {
                Command::SendStored(line) => match if torn.contains(&(line.topic.clone(), line.partition)) {
                    self.produced.spelled_out_torn(line)
                } else {
                    self.produced.spelled_out(line)
                } {
                    Ok(sends) => {
                        for s in sends {
                            out.push_str(&s.to_string());
                            out.push('\n');
                        }
                    }
                    Err(e) => {
                        out.push_str(&format!(
                            "# the lab could not read these records back: {e}\n# {c}\n"
                        ));
                    }
                },
                c => {
                    out.push_str(&c.to_string());
                    out.push('\n');
                }
            }
        }
        Ok(out)
    }
}
