//! What removes records: retention and DeleteRecords moving the log start offset, a restart's truncation, and the cleaner compacting closed segments.

use super::*;

/// A record the cleaner keeps, copied out of the segment it is rewriting.
pub(crate) struct KeptRecord {
    offset: Offset,
    timestamp: i64,
    key: Option<Vec<u8>>,
    value: Option<Vec<u8>>,
    control: bool,
    headers: Vec<u8>,
}

impl KeptRecord {
    fn of(r: &RecordRef<'_>) -> Self {
        Self {
            offset: r.offset,
            timestamp: r.timestamp,
            key: r.key.map(<[u8]>::to_vec),
            value: r.value.map(<[u8]>::to_vec),
            control: r.control,
            headers: r.headers.to_vec(),
        }
    }
}

/// Kept records as records to write back, at their own offsets.
pub(crate) fn as_new_records(kept: &[KeptRecord]) -> Vec<(Offset, NewRecord<'_>)> {
    kept.iter()
        .map(|r| {
            (
                r.offset,
                NewRecord {
                    timestamp: r.timestamp,
                    key: r.key.as_deref(),
                    value: r.value.as_deref(),
                    control: r.control,
                    headers: &r.headers,
                },
            )
        })
        .collect()
}

impl FileLog {
    /// Moves the log start up to the first record still present (after compaction or segment
    /// deletion), never back; persists it when it moved.
    pub(crate) fn advance_log_start(&mut self) {
        let first = self
            .segments
            .iter()
            .filter(|s| s.meta.records > 0)
            .find_map(|s| {
                let mut head = [0u8; batch::HEADER_LEN];
                std::os::unix::fs::FileExt::read_exact_at(&*s.log().ok()?, &mut head, 0).ok()?;
                BatchHeader::parse(&head).ok().map(|h| h.base_offset)
            })
            .unwrap_or(self.log_end_offset_raw());
        if first > self.log_start {
            self.log_start = first;
            let _ = write_synced(
                &self.dir.join("log-start-offset"),
                self.log_start.to_string().as_bytes(),
            );
        }
    }

    pub(crate) fn recompute_hidden(&mut self) {
        let start = self.log_start;
        self.hidden = 0;
        if let Some(first) = self.segments.first() {
            if start > first.meta.base_offset {
                let mut n = 0;
                let Ok(mut cursor) = first.cursor_for(first.meta.base_offset, READ_CHUNK) else {
                    return;
                };
                while let Ok(Some((_, b))) = cursor.next_batch() {
                    n += b.records().filter(|r| r.offset < start).count();
                    if b.header.last_offset() >= start {
                        break;
                    }
                }
                self.hidden = n;
            }
        }
    }

    /// Deletes whole segments that end at or before `offset`, never the active one.
    /// A kept link to a deleted segment is named to the store's owner, which replaces it by the
    /// segment's shape ([`crate::shape`]): the disk retention frees is freed.
    pub(crate) fn remove_segments_upto(&mut self, offset: Offset) {
        while self.segments.len() > 1 && self.next_offset_of(0) <= offset {
            let kept = self.kept_link_of(0);
            let seg = self.segments.remove(0);
            match seg.delete_files() {
                Err(e) => self.fault("delete a segment in", &e),
                Ok(()) => {
                    if let Some(kept) = kept {
                        self.health.note_unlinked(kept);
                    }
                }
            }
        }
    }

    pub(crate) fn persist_log_start(&self) {
        if let Err(e) = write_synced(
            &self.dir.join("log-start-offset"),
            self.log_start.to_string().as_bytes(),
        ) {
            self.fault("record the log start in", &e);
        }
    }

    pub(crate) fn try_truncate(&mut self, offset: Offset) -> io::Result<usize> {
        let offset = offset.clamp(self.log_start, self.log_end_offset_raw());
        let before = self.record_count();
        while self.segments.len() > 1 && self.segments[self.segments.len() - 1].meta.base_offset >= offset {
            if let Some(seg) = self.segments.pop() {
                seg.delete_files()?;
            }
        }
        let last = self.segments.len() - 1;
        let seg = &self.segments[last];
        let (base, created_at) = (seg.meta.base_offset, seg.meta.created_at);
        // The batch holding `offset`: cut the file there, then write back its records before it.
        // What is read again afterwards starts where the search for it starts (an index entry).
        let rel = (offset - base).clamp(0, i64::from(u32::MAX)) as u32;
        let from = u64::from(seg.index.position_for(rel));
        let mut cut: Option<(u64, Vec<KeptRecord>)> = None;
        let mut cursor = seg.cursor_for(offset, READ_CHUNK)?;
        while let Some((pos, b)) = cursor
            .next_batch()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
        {
            if b.header.last_offset() < offset {
                continue;
            }
            let keep = b
                .records()
                .filter(|r| r.offset < offset)
                .map(|r| KeptRecord::of(&r))
                .collect();
            cut = Some((pos, keep));
            break;
        }
        if let Some((pos, keep)) = cut {
            // The kept part of a straddling batch is written over it first and the file cut
            // after it: a crash in between leaves a valid batch and a tail recovery truncates.
            let mut rewritten = Vec::new();
            let log = seg.log()?;
            let records_from = seg.records_from(from)?;
            if !keep.is_empty() {
                let recs = as_new_records(&keep);
                batch::encode(&mut rewritten, &recs, -1);
                std::os::unix::fs::FileExt::write_all_at(&*log, &rewritten, pos)?;
                log.sync_data()?;
            }
            log.set_len(pos + rewritten.len() as u64)?;
            log.sync_data()?;
            let seg = &mut self.segments[last];
            seg.refresh_after_cut(from, records_from)?;
            seg.meta.created_at = created_at;
            self.durability.note_write(&log);
        }
        // Bytes written from here on are new: the recovery point must not vouch for them.
        let point = self.dir.join("recovery-point");
        if read_offset_file(&point).is_some_and(|p| p > offset) {
            write_synced(&point, offset.to_string().as_bytes())?;
        }
        // The log end moves back to `offset` even where no record sat at it (a compacted gap);
        // noted on disk, since no batch says so.
        let meta = &mut self.segments[last].meta;
        meta.next_offset = offset.max(meta.base_offset);
        write_synced(
            &self.dir.join("log-end-offset"),
            meta.next_offset.to_string().as_bytes(),
        )?;
        self.recompute_hidden();
        Ok(before - self.record_count())
    }

    pub(crate) fn try_compact(&mut self, keep: &mut dyn FnMut(RecordRef<'_>) -> bool) -> io::Result<usize> {
        let last = self.segments.len() - 1;
        let mut removed = 0;
        for i in 0..last {
            let seg = &self.segments[i];
            let (base, created_at) = (seg.meta.base_offset, seg.meta.created_at);
            // Read the kept records (owned: the segment is about to be replaced).
            let mut kept: Vec<KeptRecord> = Vec::new();
            let mut total = 0;
            let mut cursor = seg.cursor_for(base, 1 << 20)?;
            while let Some((_, b)) = cursor
                .next_batch()
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?
            {
                for r in b.records() {
                    total += 1;
                    if keep(r) {
                        kept.push(KeptRecord::of(&r));
                    }
                }
            }
            if kept.len() == total {
                continue;
            }
            removed += total - kept.len();
            // The cleaner's rewrite: a new file beside the old, synced, renamed over it.
            let cleaned_dir = self.dir.join(".cleaning");
            std::fs::create_dir_all(&cleaned_dir)?;
            let mut fresh = FileSegment::create(&self.pool, &cleaned_dir, base, created_at)?;
            let mut buf = Vec::new();
            let mut headers = Vec::new();
            let recs = as_new_records(&kept);
            let mut start = 0;
            for n in layout::plan_cleaned(&recs) {
                let at = buf.len();
                batch::encode(&mut buf, &recs[start..start + n], -1);
                headers.push(
                    BatchHeader::parse(&buf[at..])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.to_string()))?,
                );
                start += n;
            }
            fresh.append(&buf, &headers, kept.len())?;
            // The segment keeps its place in the offset space even where its tail was cleaned.
            fresh.meta.next_offset = self.segments[i].meta.next_offset;
            fresh.log()?.sync_all()?;
            let fresh_meta = fresh.meta.clone();
            fresh.forget_files();
            drop(fresh);
            // What the pool holds of the old segment's files is about to be renamed over.
            self.segments[i].forget_files();
            for ext in ["log", "index", "timeindex"] {
                std::fs::rename(
                    FileSegment::path(&cleaned_dir, base, ext),
                    FileSegment::path(&self.dir, base, ext),
                )?;
            }
            sync_dir(&self.dir)?;
            let reopened = FileSegment::open_trusted(&self.pool, &self.dir, fresh_meta)?;
            self.segments[i] = reopened;
        }
        let _ = std::fs::remove_dir_all(self.dir.join(".cleaning"));
        Ok(removed)
    }
}
