//! Opening a partition's directory: from the snapshot a clean close wrote, or by recovery — every segment scanned, a torn or corrupt tail cut, indexes rebuilt.

use super::*;

impl FileLog {
    pub(crate) fn open_clean(&mut self, s: Snapshot) -> io::Result<()> {
        for meta in s.segments {
            self.segments
                .push(FileSegment::open_trusted(&self.pool, &self.dir, meta)?);
        }
        self.log_start = s.log_start;
        self.hidden = s.hidden;
        self.report.clean = true;
        Ok(())
    }

    pub(crate) fn segment_bases(&self) -> io::Result<Vec<Offset>> {
        let mut bases: Vec<Offset> = std::fs::read_dir(&self.dir)?
            .filter_map(Result::ok)
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                name.strip_suffix(".log")?.parse().ok()
            })
            .collect();
        bases.sort_unstable();
        Ok(bases)
    }

    pub(crate) fn recover(&mut self) -> io::Result<()> {
        let recovery_point = read_offset_file(&self.dir.join("recovery-point")).unwrap_or(0);
        let bases = self.segment_bases()?;
        let mut broken = false;
        for (i, &base) in bases.iter().enumerate() {
            if broken {
                // Everything after a corrupt batch is out of the log, as in Kafka's recovery —
                // moved aside, not deleted.
                self.set_aside(base)?;
                continue;
            }
            // Only a segment wholly below the recovery point is trusted without its CRCs.
            let next_base = bases.get(i + 1).copied().unwrap_or(Offset::MAX);
            let validate = next_base > recovery_point;
            let before = std::fs::metadata(FileSegment::path(&self.dir, base, "log"))?.len();
            let (seg, scan) = FileSegment::recover(&self.pool, &self.dir, base, validate)?;
            if validate {
                self.report.validated_batches += scan.batches;
            }
            self.report.truncated_bytes += before - seg.meta.len;
            self.report.kept_aside.extend(scan.aside);
            if let Some(why) = scan.stopped {
                self.report.notes.push(format!("segment {base}: {why}"));
                broken = true;
            }
            let expected = self.segments.last().map(|s| s.meta.next_offset);
            if expected.is_some_and(|e| seg.meta.base_offset < e) {
                // Overlaps the previous segment: not a log this store wrote.
                seg.forget_files();
                self.set_aside(base)?;
                broken = true;
                continue;
            }
            self.segments.push(seg);
        }
        // A truncation into a gap left the log end past the last record: its note says where.
        if let (Some(end), Some(last)) = (
            read_offset_file(&self.dir.join("log-end-offset")),
            self.segments.last_mut(),
        ) {
            if end > last.meta.next_offset && end >= last.meta.base_offset && self.report.notes.is_empty() {
                last.meta.next_offset = end;
            }
        }
        self.log_start = read_offset_file(&self.dir.join("log-start-offset"))
            .unwrap_or_else(|| self.segments.first().map_or(0, |s| s.meta.base_offset));
        let end = self.log_end_offset_raw();
        if self.log_start > end {
            self.log_start = end;
        }
        if let Some(first) = self.segments.first() {
            self.log_start = self.log_start.max(first.meta.base_offset);
        }
        if self.report.dropped_segments > 0 || !self.report.notes.is_empty() {
            sync_dir(&self.dir)?;
        }
        Ok(())
    }

    /// Segment `base` taken out of the log: its `.log` file kept in `cut/`, its indexes gone.
    fn set_aside(&mut self, base: Offset) -> io::Result<()> {
        let log_file = FileSegment::path(&self.dir, base, "log");
        self.pool.forget(&log_file);
        self.report
            .kept_aside
            .push(crate::aside::move_segment(&self.dir, &log_file, base)?);
        for ext in ["index", "timeindex"] {
            let path = FileSegment::path(&self.dir, base, ext);
            self.pool.forget(&path);
            let _ = std::fs::remove_file(path);
        }
        self.report.dropped_segments += 1;
        Ok(())
    }
}
