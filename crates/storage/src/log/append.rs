//! Appends: records encoded as batches, or producers' batches as they came, written one `write` per segment, segments rolled between batches.

use super::*;

/// The part of an append that went to one segment.
pub(crate) struct Piece {
    pub(crate) segment: usize,
    pub(crate) position: u64,
    pub(crate) len: u64,
    pub(crate) records: usize,
}

/// Why [`FileLog::append_wire`] refused or failed an append.
#[derive(Debug, thiserror::Error)]
pub enum AppendError {
    /// A batch is corrupt or malformed (Kafka answers `CORRUPT_MESSAGE`); nothing was written.
    #[error("invalid record batch: {0}")]
    Invalid(#[from] batch::BatchError),
    #[error(transparent)]
    Io(#[from] io::Error),
}

impl FileLog {
    /// Rolls to a new segment at the log end.
    pub(crate) fn roll(&mut self, now: Millis) -> io::Result<()> {
        let base = self.log_end_offset_raw();
        self.segments
            .push(FileSegment::create(&self.pool, &self.dir, base, now)?);
        if self.durability.policy() != crate::FlushPolicy::Never {
            // The closed segment is complete: sync it and move the recovery point past it.
            if let Some(closed) = self.segments.len().checked_sub(2).map(|i| &self.segments[i]) {
                if let Err(e) = closed.log()?.sync_data() {
                    storage_failure("sync", &self.dir, &e);
                }
            }
            write_synced(&self.dir.join("recovery-point"), base.to_string().as_bytes())?;
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// What the active segment holds, for the shared roll and batching rule ([`layout`]).
    pub(crate) fn fill(&self) -> Fill {
        let a = &self.active().meta;
        Fill {
            records: a.records,
            bytes: a.len as usize,
            created_at: a.created_at,
        }
    }

    pub(crate) fn should_roll(&self, incoming: usize, now: Millis) -> bool {
        self.limits.should_roll(self.fill(), incoming, now)
    }

    /// Appends records at the log end in as few batches as segment limits allow ([`layout::
    /// plan_append`]) — one `write` per segment touched — and returns the first offset.
    pub fn try_append_batch(&mut self, records: &[NewRecord<'_>], now: Millis) -> io::Result<Offset> {
        let first = self.log_end_offset_raw();
        let mut i = 0;
        let mut planned = Vec::new();
        while i < records.len() {
            if self.should_roll(layout::BATCH_HEADER + batch::record_size(0, 0, &records[i]), now) {
                self.roll(now)?;
            }
            self.active_mut_created(now)?;
            planned.clear();
            let taken = layout::plan_append(&records[i..], self.fill(), &self.limits, &mut planned);
            if taken == 0 {
                // Nothing fits: the segment is full by bytes; roll on the next turn.
                self.roll(now)?;
                continue;
            }
            let mut offset = self.log_end_offset_raw();
            let mut buf = std::mem::take(&mut self.scratch);
            buf.clear();
            let mut headers = Vec::with_capacity(planned.len());
            for p in &planned {
                let at = buf.len();
                batch::encode_consecutive(&mut buf, offset, &records[i..i + p.records], -1);
                debug_assert_eq!(buf.len() - at, p.bytes, "the plan counts what the encoder writes");
                headers.push(
                    BatchHeader::parse(&buf[at..])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
                );
                offset += p.records as Offset;
                i += p.records;
            }
            let last = self.segments.len() - 1;
            let seg = &mut self.segments[last];
            let appended = seg.append(&buf, &headers, taken).and_then(|()| seg.log());
            self.scratch = buf;
            self.durability.note_write(&appended?);
        }
        Ok(first)
    }

    /// Appends record batches exactly as a producer encoded them — a Produce request's records
    /// for this partition — and returns the first offset they were given: [`ProducedBatches::
    /// validate`], then [`FileLog::append_produced`]. If one batch is invalid nothing is written.
    pub fn append_wire(&mut self, batches: &mut [u8], now: Millis) -> Result<Offset, AppendError> {
        let mut headers = ProducedBatches::check(batches)?;
        Ok(self.append_checked(batches, &mut headers, now)?.0)
    }

    /// Appends batches validated beforehand. This is a broker's append, not a re-encoding:
    /// offsets are assigned by rewriting each batch's `baseOffset` in place — it sits before the
    /// CRC'd bytes, so the producer's CRC stays valid — and the bytes go to the segment as they
    /// came, one `write` per segment touched. Segments roll between batches only: a batch is never
    /// split, and only a fresh segment's first batch may overshoot its limits.
    pub fn append_produced(&mut self, produced: &mut ProducedBatches, now: Millis) -> io::Result<Offset> {
        let (bytes, headers) = produced.parts_mut();
        Ok(self.append_checked(bytes, headers, now)?.0)
    }

    /// Keeps every segment that client batches ([`PartitionLog::append_encoded`]) go to as a
    /// hard link in `dir`: the lab's history names those bytes instead of spelling out the
    /// records, so they must outlive the segment. Call once, right after opening.
    pub fn keep_segments_in(&mut self, dir: PathBuf) {
        self.kept_dir = Some(dir);
    }

    pub(crate) fn append_checked(
        &mut self,
        batches: &mut [u8],
        headers: &mut [BatchHeader],
        now: Millis,
    ) -> io::Result<(Offset, Vec<Piece>)> {
        let first = self.log_end_offset_raw();
        let mut pieces = Vec::new();
        let (mut i, mut at) = (0, 0);
        while i < headers.len() {
            if self.should_roll(headers[i].total_len, now) {
                self.roll(now)?;
            }
            self.active_mut_created(now)?;
            let fits = layout::fit_produced(
                headers[i..].iter().map(|h| (h.total_len, h.count as usize)),
                self.fill(),
                &self.limits,
            );
            if fits == 0 {
                // The next batch does not fit beside what the segment holds: roll.
                self.roll(now)?;
                continue;
            }
            let mut offset = self.log_end_offset_raw();
            let (start, mut records) = (at, 0);
            for h in &mut headers[i..i + fits] {
                h.base_offset = offset;
                batches[at..at + 8].copy_from_slice(&offset.to_be_bytes());
                offset += Offset::from(h.count);
                (records, at) = (records + h.count as usize, at + h.total_len);
            }
            let j = i + fits;
            let last = self.segments.len() - 1;
            let seg = &mut self.segments[last];
            pieces.push(Piece {
                segment: last,
                position: seg.meta.len,
                len: (at - start) as u64,
                records,
            });
            seg.append(&batches[start..at], &headers[i..j], records)?;
            self.durability.note_write(&seg.log()?);
            i = j;
        }
        Ok((first, pieces))
    }

    /// The name of the kept link to segment `index`'s log file, made on first use: a hard link in
    /// the kept-segments directory, so the bytes outlive the segment's own name (retention,
    /// compaction's rename over it, the topic's deletion). A name taken by another file gets a
    /// suffix; one that is already this file (a restart) is reused.
    pub(crate) fn kept_name(&mut self, kept_dir: &Path, index: usize) -> io::Result<String> {
        use std::os::unix::fs::MetadataExt;
        let seg = &self.segments[index];
        if let Some(name) = &seg.kept_as {
            return Ok(name.clone());
        }
        if !kept_dir.exists() {
            std::fs::create_dir_all(kept_dir)?;
            if let Some(parent) = kept_dir.parent() {
                sync_dir(parent)?;
            }
        }
        let source = FileSegment::path(&self.dir, seg.meta.base_offset, "log");
        let this = std::fs::metadata(&source)?;
        for name in self.kept_names(seg.meta.base_offset) {
            let link = kept_dir.join(&name);
            match std::fs::hard_link(&source, &link) {
                Ok(()) => {
                    if self.durability.policy() != crate::FlushPolicy::Never {
                        sync_dir(kept_dir)?;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    let there = std::fs::metadata(&link)?;
                    if (there.dev(), there.ino()) != (this.dev(), this.ino()) {
                        continue;
                    }
                }
                Err(e) => return Err(e),
            }
            self.segments[index].kept_as = Some(name.clone());
            return Ok(name);
        }
        Err(io::Error::other("no free name for a kept segment"))
    }

    /// The kept link to segment `index`'s log file, if it has one: the name this process gave
    /// it, or — after a restart, which does not know — a kept name for its base offset that is
    /// the same file.
    pub(crate) fn kept_link_of(&self, index: usize) -> Option<PathBuf> {
        use std::os::unix::fs::MetadataExt;
        let kept_dir = self.kept_dir.as_ref()?;
        let seg = &self.segments[index];
        if let Some(name) = &seg.kept_as {
            return Some(kept_dir.join(name));
        }
        let this = std::fs::metadata(FileSegment::path(&self.dir, seg.meta.base_offset, "log")).ok()?;
        for name in self.kept_names(seg.meta.base_offset) {
            let there = std::fs::metadata(kept_dir.join(&name)).ok()?;
            if (there.dev(), there.ino()) == (this.dev(), this.ino()) {
                return Some(kept_dir.join(name));
            }
        }
        None
    }

    /// An empty active segment takes its first record now: it is created at this instant and
    /// based at the log end (a truncation may have left it based lower).
    pub(crate) fn active_mut_created(&mut self, now: Millis) -> io::Result<()> {
        let last = self.segments.len() - 1;
        let end = self.log_end_offset_raw();
        let meta = &mut self.segments[last].meta;
        if meta.records > 0 {
            return Ok(());
        }
        meta.created_at = now;
        if meta.base_offset != end {
            let fresh = FileSegment::create(&self.pool, &self.dir, end, now)?;
            let old = std::mem::replace(&mut self.segments[last], fresh);
            old.delete_files()?;
        }
        Ok(())
    }

    /// The names a kept copy of the segment at `base` may have in `produced/`, in the order they
    /// are tried: `<stem>.log`, then `<stem>.1.log`, … (a clash with another file takes the next).
    fn kept_names(&self, base: Offset) -> impl Iterator<Item = String> {
        let dir_name = self
            .dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let stem = kept_stem(&dir_name, base);
        (0u32..).map(move |n| {
            if n == 0 {
                format!("{stem}.log")
            } else {
                format!("{stem}.{n}.log")
            }
        })
    }
}
