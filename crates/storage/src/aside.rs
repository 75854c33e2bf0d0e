//! What a recovery cuts off a log is kept aside, not deleted: a torn or corrupt tail may still
//! hold bytes a person can read back (a batch with one bad byte, the whole segments after it),
//! and a recovery must never discard a user's data to get the log going again. The cut bytes go
//! to `<partition dir>/cut/`, named by the segment's base offset and the byte position they were
//! cut at (`00000000000000000000-4130.log`); a whole segment that followed a corrupt one is moved
//! there as it was. The log never reads that directory again: its size is bounded by the damage
//! recoveries found, and the report of the start names each file.

use offsetlab_engine::record::Offset;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The directory, inside a partition's directory, where recoveries keep what they cut.
pub const CUT_DIR: &str = "cut";

/// A free name in `<dir>/cut/` for bytes cut from segment `base` at byte `from`.
fn free_name(dir: &Path, base: Offset, from: u64) -> io::Result<PathBuf> {
    let cut = dir.join(CUT_DIR);
    std::fs::create_dir_all(&cut)?;
    let stem = format!("{base:020}-{from}");
    let mut path = cut.join(format!("{stem}.log"));
    let mut n = 1u32;
    while path.exists() {
        path = cut.join(format!("{stem}.{n}.log"));
        n += 1;
    }
    Ok(path)
}

/// Copies bytes `from..len` of segment `base` (open as `file`) into a file of their own in
/// `<dir>/cut/`, synced with its directory, before the caller cuts them off the segment.
pub(crate) fn keep_tail(file: &File, dir: &Path, base: Offset, from: u64, len: u64) -> io::Result<PathBuf> {
    let path = free_name(dir, base, from)?;
    let out = File::create(&path)?;
    let mut buf = vec![0u8; (len - from).min(1 << 20) as usize];
    let mut at = from;
    while at < len {
        let n = buf.len().min((len - at) as usize);
        file.read_exact_at(&mut buf[..n], at)?;
        out.write_all_at(&buf[..n], at - from)?;
        at += n as u64;
    }
    out.sync_all()?;
    File::open(path.parent().unwrap_or(dir))?.sync_all()?;
    Ok(path)
}

/// Moves the `.log` file of segment `base` into `<dir>/cut/` whole (its index files, which a
/// reader can rebuild, are removed): a segment that followed a corrupt one.
pub(crate) fn move_segment(dir: &Path, log_file: &Path, base: Offset) -> io::Result<PathBuf> {
    let path = free_name(dir, base, 0)?;
    std::fs::rename(log_file, &path)?;
    File::open(path.parent().unwrap_or(dir))?.sync_all()?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_tail_reads_back_as_it_was_and_names_never_collide() {
        let dir = tempfile::tempdir().expect("test io");
        let segment = dir.path().join("seg.log");
        let bytes: Vec<u8> = (0..3_000_000u32).map(|i| (i % 251) as u8).collect();
        std::fs::write(&segment, &bytes).expect("test io");
        let file = File::open(&segment).expect("test io");
        let first = keep_tail(&file, dir.path(), 300, 1_000, bytes.len() as u64).expect("test io");
        let second = keep_tail(&file, dir.path(), 300, 1_000, bytes.len() as u64).expect("test io");
        assert_ne!(first, second);
        assert_eq!(std::fs::read(&first).expect("test io"), bytes[1_000..]);
        assert_eq!(std::fs::read(&second).expect("test io"), bytes[1_000..]);
        assert!(
            first.ends_with("cut/00000000000000000300-1000.log"),
            "{}",
            first.display()
        );
        let moved = move_segment(dir.path(), &segment, 512).expect("test io");
        assert!(!segment.exists());
        assert_eq!(std::fs::read(moved).expect("test io"), bytes);
    }
}
