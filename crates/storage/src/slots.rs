//! A small file rewritten after every change without a rename: two slot files written in turn.
//!
//! Replacing a file by renaming a fresh copy over it is atomic, but on ext4 each rename over an
//! existing file also forces the new file's blocks to be allocated and written out (the
//! `auto_da_alloc` heuristic) — a cost paid on every Kafka request the lab acknowledges. Two
//! slots avoid it: each save overwrites the older slot in place with
//! `[sequence u64][length u32][crc32c u32][bytes]`, and a reader takes the newest slot whose
//! checksum holds. A save torn by a crash fails its checksum, and the other slot — the previous
//! save — is read instead, exactly what a rename would have left.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const HEADER: usize = 16;

/// The two slots of one small file, `NAME.0` and `NAME.1`.
#[derive(Debug)]
pub struct SlotFile {
    files: [File; 2],
    /// The sequence number of the newest save.
    sequence: u64,
}

impl SlotFile {
    fn paths(dir: &Path, name: &str) -> [PathBuf; 2] {
        [dir.join(format!("{name}.0")), dir.join(format!("{name}.1"))]
    }

    /// Whether `dir` holds slots for `name`.
    pub fn exists(dir: &Path, name: &str) -> bool {
        Self::paths(dir, name).iter().any(|p| p.exists())
    }

    /// The newest save the slots of `name` in `dir` hold, read without changing anything (no
    /// slot is created): `None` when there are no slots or none holds a whole save.
    pub fn read(dir: &Path, name: &str) -> io::Result<Option<Vec<u8>>> {
        let mut newest: Option<(u64, Vec<u8>)> = None;
        for path in Self::paths(dir, name) {
            let file = match File::open(&path) {
                Ok(f) => f,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if let Some((sequence, bytes)) = read_slot(&file)? {
                if newest.as_ref().is_none_or(|(s, _)| sequence > *s) {
                    newest = Some((sequence, bytes));
                }
            }
        }
        Ok(newest.map(|(_, bytes)| bytes))
    }

    /// Opens (creating if need be) the slots of `name` in `dir`, and the newest save they hold.
    pub fn open(dir: &Path, name: &str) -> io::Result<(Self, Option<Vec<u8>>)> {
        let [a, b] = Self::paths(dir, name).map(|p| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .create(true)
                .truncate(false)
                .open(p)
        });
        let files = [a?, b?];
        let newest = files
            .iter()
            .filter_map(|f| read_slot(f).transpose())
            .collect::<io::Result<Vec<_>>>()?
            .into_iter()
            .max_by_key(|(sequence, _)| *sequence);
        let sequence = newest.as_ref().map_or(0, |(s, _)| *s);
        Ok((Self { files, sequence }, newest.map(|(_, bytes)| bytes)))
    }

    /// Overwrites the older slot with `bytes` (synced with `sync`): from now on the newest.
    pub fn write(&mut self, bytes: &[u8], sync: bool) -> io::Result<()> {
        let sequence = self.sequence + 1;
        let file = &self.files[(sequence % 2) as usize];
        let len = u32::try_from(bytes.len()).map_err(|_| io::Error::other("a slot holds at most 4 GiB"))?;
        let mut buf = Vec::with_capacity(HEADER + bytes.len());
        buf.extend_from_slice(&sequence.to_be_bytes());
        buf.extend_from_slice(&len.to_be_bytes());
        buf.extend_from_slice(
            &crc32c::crc32c_append(crc32c::crc32c(&sequence.to_be_bytes()), bytes).to_be_bytes(),
        );
        buf.extend_from_slice(bytes);
        file.write_all_at(&buf, 0)?;
        if sync {
            file.sync_data()?;
        }
        self.sequence = sequence;
        Ok(())
    }
}

/// A slot's (sequence, bytes), or `None` when it is empty, torn or corrupt.
fn read_slot(file: &File) -> io::Result<Option<(u64, Vec<u8>)>> {
    let size = file.metadata()?.len();
    if size < HEADER as u64 {
        return Ok(None);
    }
    let mut header = [0u8; HEADER];
    file.read_exact_at(&mut header, 0)?;
    let sequence = u64::from_be_bytes(header[..8].try_into().unwrap_or_default());
    let len = u32::from_be_bytes(header[8..12].try_into().unwrap_or_default());
    let crc = u32::from_be_bytes(header[12..].try_into().unwrap_or_default());
    if u64::from(len) > size - HEADER as u64 {
        return Ok(None);
    }
    let mut bytes = vec![0u8; len as usize];
    file.read_exact_at(&mut bytes, HEADER as u64)?;
    let ok = crc32c::crc32c_append(crc32c::crc32c(&sequence.to_be_bytes()), &bytes) == crc;
    Ok(ok.then_some((sequence, bytes)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_whole_save_wins() {
        let dir = tempfile::tempdir().expect("dir");
        let (mut slots, saved) = SlotFile::open(dir.path(), "lab").expect("open");
        assert_eq!(saved, None);
        slots.write(b"first, a long one", false).expect("write");
        slots.write(b"second", true).expect("write");
        assert_eq!(
            SlotFile::open(dir.path(), "lab").expect("open").1.as_deref(),
            Some(&b"second"[..])
        );
        slots.write(b"third", false).expect("write");
        let (mut again, saved) = SlotFile::open(dir.path(), "lab").expect("open");
        assert_eq!(saved.as_deref(), Some(&b"third"[..]));
        // Reopened, it goes on from the newest save.
        again.write(b"fourth", false).expect("write");
        assert_eq!(
            SlotFile::open(dir.path(), "lab").expect("open").1.as_deref(),
            Some(&b"fourth"[..])
        );
    }

    #[test]
    fn a_torn_save_leaves_the_previous_one() {
        let dir = tempfile::tempdir().expect("dir");
        let (mut slots, _) = SlotFile::open(dir.path(), "lab").expect("open");
        slots.write(b"kept", false).expect("write");
        slots.write(b"torn by a crash", false).expect("write");
        // The crash: the newest slot's bytes are cut short.
        let newest = dir.path().join("lab.0");
        let f = OpenOptions::new().write(true).open(&newest).expect("slot");
        f.set_len(HEADER as u64 + 4).expect("cut");
        let (mut reopened, saved) = SlotFile::open(dir.path(), "lab").expect("open");
        assert_eq!(saved.as_deref(), Some(&b"kept"[..]));
        // The next save goes over the torn slot; garbled instead of cut, it is refused the same way.
        reopened.write(b"garbled later", false).expect("write");
        let f = OpenOptions::new().write(true).open(&newest).expect("slot");
        f.write_all_at(b"X", HEADER as u64).expect("garble");
        assert_eq!(
            SlotFile::open(dir.path(), "lab").expect("open").1.as_deref(),
            Some(&b"kept"[..])
        );
    }
}
