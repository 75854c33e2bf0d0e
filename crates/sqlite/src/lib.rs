//! # offsetlab-sqlite
//!
//! The lab's sinks as a real database: one SQLite file per consumer group, with a `rows` table
//! a learner can open with `sqlite3` and an `offsets` table that the transactional sink writes
//! in the same transaction as its rows.
//!
//! ```sql
//! CREATE TABLE rows (row_id INTEGER PRIMARY KEY AUTOINCREMENT, order_id TEXT NOT NULL,
//!                    topic TEXT NOT NULL, partition INTEGER NOT NULL, source_offset INTEGER NOT NULL,
//!                    value TEXT NOT NULL, consumer TEXT NOT NULL, incarnation INTEGER NOT NULL,
//!                    reason TEXT NOT NULL, applied_at INTEGER NOT NULL, writes INTEGER NOT NULL);
//! CREATE TABLE offsets (topic TEXT NOT NULL, partition INTEGER NOT NULL, next_offset INTEGER NOT NULL,
//!                       generation INTEGER NOT NULL, PRIMARY KEY (topic, partition));
//! ```
//!
//! The upsert sink adds a unique index on `order_id` and overwrites an order's row in place (its id
//! kept, and no id taken for a row that never existed);
//! the append and transactional sinks insert a row per write. A key or value that is UTF-8 is
//! stored as `TEXT`, any other bytes as a `BLOB` ([`column`]): SQLite compares the two as
//! different values, so distinct binary keys stay distinct rows and `sqlite3` shows text as text.

use offsetlab_engine::delivery::DeliveryReason;
use offsetlab_engine::record::{Offset, RecordBytes, TopicPartition};
use offsetlab_engine::sink::{
    Sink, SinkError, SinkFactory, SinkKind, SinkRow, SinkStats, SinkWrite, WriteOutcome,
};
use rusqlite::{params, Connection, OptionalExtension};
use std::path::{Path, PathBuf};

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS rows (
    row_id INTEGER PRIMARY KEY AUTOINCREMENT,
    order_id TEXT NOT NULL,
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    source_offset INTEGER NOT NULL,
    value TEXT NOT NULL,
    consumer TEXT NOT NULL,
    incarnation INTEGER NOT NULL,
    reason TEXT NOT NULL,
    applied_at INTEGER NOT NULL,
    writes INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX IF NOT EXISTS rows_by_source ON rows (topic, partition, source_offset);
CREATE TABLE IF NOT EXISTS offsets (
    topic TEXT NOT NULL,
    partition INTEGER NOT NULL,
    next_offset INTEGER NOT NULL,
    generation INTEGER NOT NULL,
    PRIMARY KEY (topic, partition)
);
";

fn backend(e: rusqlite::Error) -> SinkError {
    if e.sqlite_error_code() == Some(rusqlite::ErrorCode::DiskFull) {
        SinkError::Full(e.to_string())
    } else {
        SinkError::Backend(e.to_string())
    }
}

/// A group's sink in SQLite.
pub struct SqliteSink {
    kind: SinkKind,
    conn: Connection,
}

impl SqliteSink {
    /// Opens (creating or emptying) the sink database at `path`.
    pub fn create(path: &Path, kind: SinkKind) -> Result<Self, SinkError> {
        let conn = Connection::open(path).map_err(backend)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(backend)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend)?;
        Self::init(conn, kind)
    }

    /// Opens the sink database at `path` as it is, rows included. A missing file, or one that
    /// holds another kind of sink, is an error naming the file: the rows a restored lab counts
    /// are never replaced by an empty sink.
    pub fn open_existing(path: &Path, kind: SinkKind) -> Result<Self, SinkError> {
        if !path.exists() {
            return Err(SinkError::Backend(format!(
                "{}: the sink's database is missing",
                path.display()
            )));
        }
        let conn = Connection::open(path).map_err(backend)?;
        conn.pragma_update(None, "journal_mode", "WAL").map_err(backend)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend)?;
        let stored =
            meta(&conn, "sink_kind").map_err(|e| SinkError::Backend(format!("{}: {e}", path.display())))?;
        if stored.as_deref() != Some(kind.name()) {
            return Err(SinkError::Backend(format!(
                "{}: holds {} sink, the lab expects {}",
                path.display(),
                stored.map_or("no".to_string(), |k| format!("the {k}")),
                kind.name()
            )));
        }
        Ok(Self { kind, conn })
    }

    /// Records which group the database belongs to (see [`SqliteSinks::path_for`]).
    fn set_group(&self, group: &str) -> Result<(), SinkError> {
        self.conn
            .execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('group', ?1)",
                params![group],
            )
            .map(|_| ())
            .map_err(backend)
    }

    /// Applies many writes in one SQLite transaction: the bulk path for rebuilding a projection
    /// from a log (append and upsert sinks; a transactional sink applies them one by one, each
    /// with its offset check).
    pub fn apply_many(&mut self, writes: &[SinkWrite<'_>]) -> Result<(), SinkError> {
        if matches!(self.kind, SinkKind::Transactional) {
            for w in writes {
                self.apply(w)?;
            }
            return Ok(());
        }
        let upsert = self.kind == SinkKind::Upsert;
        // A projection of millions of keys: keep its index's pages in memory (128 MiB), and let
        // the batch's commit skip the WAL sync — a rebuild that dies is rebuilt from the log.
        self.conn
            .pragma_update(None, "cache_size", -131_072)
            .map_err(backend)?;
        self.conn
            .pragma_update(None, "synchronous", "OFF")
            .map_err(backend)?;
        let tx = self.conn.transaction().map_err(backend)?;
        {
            // The statements prepared once for the whole batch.
            let mut insert = tx.prepare(INSERT_SQL).map_err(backend)?;
            let mut update = tx.prepare(UPDATE_SQL).map_err(backend)?;
            for w in writes {
                if upsert {
                    Self::upsert_with(&mut update, &mut insert, w).map_err(backend)?;
                } else {
                    Self::insert_with(&mut insert, w).map_err(backend)?;
                }
            }
        }
        tx.commit().map_err(backend)?;
        self.conn
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(backend)
    }

    /// A sink in a private in-memory database (tests).
    pub fn in_memory(kind: SinkKind) -> Result<Self, SinkError> {
        Self::init(Connection::open_in_memory().map_err(backend)?, kind)
    }

    fn init(conn: Connection, kind: SinkKind) -> Result<Self, SinkError> {
        conn.execute_batch(
            "DROP TABLE IF EXISTS rows; DROP TABLE IF EXISTS offsets; DROP TABLE IF EXISTS meta;",
        )
        .map_err(backend)?;
        conn.execute_batch(SCHEMA).map_err(backend)?;
        if kind == SinkKind::Upsert {
            conn.execute_batch("CREATE UNIQUE INDEX IF NOT EXISTS rows_by_order ON rows (order_id);")
                .map_err(backend)?;
        }
        conn.execute(
            "INSERT INTO meta (key, value) VALUES ('sink_kind', ?1)",
            params![kind.name()],
        )
        .map_err(backend)?;
        Ok(Self { kind, conn })
    }

    fn insert(conn: &Connection, w: &SinkWrite<'_>, upsert: bool) -> Result<(), rusqlite::Error> {
        let mut insert = conn.prepare_cached(INSERT_SQL)?;
        if upsert {
            let mut update = conn.prepare_cached(UPDATE_SQL)?;
            Self::upsert_with(&mut update, &mut insert, w)
        } else {
            Self::insert_with(&mut insert, w)
        }
    }

    /// An upsert as an update of the order's row, or — when it has none yet — an insert. (An
    /// `INSERT … ON CONFLICT DO UPDATE` would be one statement, but with `AUTOINCREMENT` every
    /// conflicting insert still takes a row id, so the table's ids would skip numbers for rows
    /// that never existed.)
    fn upsert_with(
        update: &mut rusqlite::Statement<'_>,
        insert: &mut rusqlite::Statement<'_>,
        w: &SinkWrite<'_>,
    ) -> Result<(), rusqlite::Error> {
        if Self::execute(update, w)? == 0 {
            Self::execute(insert, w)?;
        }
        Ok(())
    }

    fn insert_with(stmt: &mut rusqlite::Statement<'_>, w: &SinkWrite<'_>) -> Result<(), rusqlite::Error> {
        Self::execute(stmt, w).map(|_| ())
    }

    /// Runs `stmt` with a write's nine columns bound to `?1`..`?9` (the insert and the update
    /// name them alike); the rows it changed.
    fn execute(stmt: &mut rusqlite::Statement<'_>, w: &SinkWrite<'_>) -> Result<usize, rusqlite::Error> {
        stmt.execute(params![
            column(w.key),
            w.tp.topic,
            w.tp.partition,
            w.offset,
            column(w.value),
            w.consumer,
            w.incarnation,
            w.reason.name(),
            w.at
        ])
    }
}

const INSERT_SQL: &str =
    "INSERT INTO rows (order_id, topic, partition, source_offset, value, consumer, incarnation, reason, applied_at)
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)";

/// The upsert sink's overwrite of an order's row (its id and position kept).
const UPDATE_SQL: &str =
    "UPDATE rows SET topic = ?2, partition = ?3, source_offset = ?4, value = ?5, consumer = ?6,
         incarnation = ?7, reason = ?8, applied_at = ?9, writes = writes + 1
     WHERE order_id = ?1";

/// A key or value as its column holds it: `TEXT` when UTF-8 (every sink written before binary
/// records were kept holds text), a `BLOB` otherwise.
fn column(bytes: &[u8]) -> rusqlite::types::ToSqlOutput<'_> {
    use rusqlite::types::{ToSqlOutput, ValueRef};
    ToSqlOutput::Borrowed(match std::str::from_utf8(bytes) {
        Ok(_) => ValueRef::Text(bytes),
        Err(_) => ValueRef::Blob(bytes),
    })
}

/// A key or value column read back as the bytes written.
fn read_column(r: &rusqlite::Row<'_>, i: usize) -> Result<RecordBytes, rusqlite::Error> {
    match r.get_ref(i)? {
        rusqlite::types::ValueRef::Text(b) | rusqlite::types::ValueRef::Blob(b) => Ok(b.into()),
        other => Err(rusqlite::Error::InvalidColumnType(
            i,
            "a key or value".into(),
            other.data_type(),
        )),
    }
}

impl Sink for SqliteSink {
    fn kind(&self) -> SinkKind {
        self.kind
    }

    fn apply(&mut self, w: &SinkWrite<'_>) -> Result<WriteOutcome, SinkError> {
        match self.kind {
            SinkKind::Append | SinkKind::KafkaTx => Self::insert(&self.conn, w, false).map_err(backend)?,
            SinkKind::Upsert => Self::insert(&self.conn, w, true).map_err(backend)?,
            SinkKind::Transactional => {
                // The check, the row and the next offset commit together or not at all.
                let tx = self.conn.transaction().map_err(backend)?;
                let stored: Option<(i64, i32)> = tx
                    .prepare_cached(
                        "SELECT next_offset, generation FROM offsets WHERE topic = ?1 AND partition = ?2",
                    )
                    .and_then(|mut s| {
                        s.query_row(params![w.tp.topic, w.tp.partition], |r| {
                            Ok((r.get(0)?, r.get(1)?))
                        })
                        .optional()
                    })
                    .map_err(backend)?;
                if let Some((next_offset, generation)) = stored {
                    if w.offset < next_offset || w.generation < generation {
                        return Ok(WriteOutcome::Fenced {
                            next_offset,
                            generation,
                        });
                    }
                }
                Self::insert(&tx, w, false).map_err(backend)?;
                tx.prepare_cached(
                    "INSERT INTO offsets (topic, partition, next_offset, generation) VALUES (?1, ?2, ?3, ?4)
                     ON CONFLICT (topic, partition) DO UPDATE SET next_offset = excluded.next_offset, generation = excluded.generation",
                )
                .and_then(|mut s| s.execute(params![w.tp.topic, w.tp.partition, w.offset + 1, w.generation]))
                .map_err(backend)?;
                tx.commit().map_err(backend)?;
            }
        }
        Ok(WriteOutcome::Applied)
    }

    fn stored_offset(&self, tp: &TopicPartition) -> Result<Option<Offset>, SinkError> {
        self.conn
            .prepare_cached("SELECT next_offset FROM offsets WHERE topic = ?1 AND partition = ?2")
            .and_then(|mut s| {
                s.query_row(params![tp.topic, tp.partition], |r| r.get(0))
                    .optional()
            })
            .map_err(backend)
    }

    fn stats(&self) -> Result<SinkStats, SinkError> {
        self.conn
            .query_row(
                "SELECT COUNT(*), COUNT(DISTINCT order_id),
                        COUNT(*) - (SELECT COUNT(*) FROM (SELECT DISTINCT topic, partition, source_offset FROM rows))
                 FROM rows",
                [],
                |r| {
                    Ok(SinkStats {
                        rows: r.get::<_, i64>(0)? as u64,
                        distinct_keys: r.get::<_, i64>(1)? as u64,
                        duplicate_rows: r.get::<_, i64>(2)? as u64,
                    })
                },
            )
            .map_err(backend)
    }

    fn rows(&self, from: usize, limit: usize) -> Result<Vec<SinkRow>, SinkError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT row_id, order_id, topic, partition, source_offset, value, consumer, incarnation, reason,
                        applied_at, writes,
                        EXISTS (SELECT 1 FROM rows e WHERE e.topic = r.topic AND e.partition = r.partition
                                AND e.source_offset = r.source_offset AND e.row_id < r.row_id)
                 FROM rows r ORDER BY row_id LIMIT ?1 OFFSET ?2",
            )
            .map_err(backend)?;
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let from = i64::try_from(from).unwrap_or(i64::MAX);
        let rows = stmt
            .query_map(params![limit, from], |r| {
                let reason: String = r.get(8)?;
                Ok(SinkRow {
                    row_id: r.get::<_, i64>(0)? as u64,
                    key: read_column(r, 1)?,
                    topic: r.get(2)?,
                    partition: r.get(3)?,
                    offset: r.get(4)?,
                    value: read_column(r, 5)?,
                    consumer: r.get(6)?,
                    incarnation: r.get(7)?,
                    reason: DeliveryReason::from_name(&reason).unwrap_or(DeliveryReason::First),
                    applied_at: r.get(9)?,
                    writes: r.get(10)?,
                    duplicate: r.get(11)?,
                })
            })
            .map_err(backend)?;
        rows.collect::<Result<Vec<_>, _>>().map_err(backend)
    }
}

/// A value of the `meta` table.
fn meta(conn: &Connection, key: &str) -> Result<Option<String>, rusqlite::Error> {
    conn.query_row("SELECT value FROM meta WHERE key = ?1", params![key], |r| {
        r.get(0)
    })
    .optional()
}

/// Opens one SQLite file per group in a directory: `<dir>/sink-<group>.sqlite` for a group id
/// that is a plain name, `<dir>/sink-~<checksum>-<n>.sqlite` for any other (a group id is any
/// string a client sends: spaces, `/`, `..`, thousands of bytes). The file records its group in
/// `meta`, so two group ids with one checksum get two files.
pub struct SqliteSinks {
    dir: PathBuf,
}

/// Group ids used as they are in a file name: `[a-zA-Z0-9._-]` (the names older labs allowed,
/// so their files keep their names), as long as `sink-<group>.sqlite` fits 255 bytes.
fn plain_group(group: &str) -> bool {
    !group.is_empty()
        && group.len() <= 255 - "sink-.sqlite".len()
        && group
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

impl SqliteSinks {
    pub fn new(dir: impl Into<PathBuf>) -> Result<Self, SinkError> {
        let dir = dir.into();
        std::fs::create_dir_all(&dir)
            .map_err(|e| SinkError::Backend(format!("cannot create {}: {e}", dir.display())))?;
        Ok(Self { dir })
    }

    /// The database file of `group`: the one that records it, or the first free name.
    pub fn path_for(&self, group: &str) -> Result<PathBuf, SinkError> {
        if plain_group(group) {
            return Ok(self.dir.join(format!("sink-{group}.sqlite")));
        }
        let sum = crc32c::crc32c(group.as_bytes());
        for n in 0u32.. {
            let path = self.dir.join(format!("sink-~{sum:08x}-{n}.sqlite"));
            if !path.exists() {
                return Ok(path);
            }
            let owner = Connection::open(&path)
                .and_then(|c| meta(&c, "group"))
                .map_err(|e| SinkError::Backend(format!("{}: {e}", path.display())))?;
            if owner.as_deref() == Some(group) {
                return Ok(path);
            }
        }
        Err(SinkError::Backend("no free file name for a sink".to_string()))
    }
}

impl SinkFactory for SqliteSinks {
    fn open(&mut self, group: &str, kind: SinkKind) -> Result<Box<dyn Sink>, SinkError> {
        let sink = SqliteSink::create(&self.path_for(group)?, kind)?;
        sink.set_group(group)?;
        Ok(Box::new(sink))
    }

    fn reopen(&mut self, group: &str, kind: SinkKind) -> Result<Box<dyn Sink>, SinkError> {
        Ok(Box::new(SqliteSink::open_existing(&self.path_for(group)?, kind)?))
    }

    fn describe(&self) -> String {
        format!("SQLite files in {}", self.dir.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlite_sinks_pass_the_conformance_suite_in_memory() {
        offsetlab_engine::sink::conformance::run(&mut |kind| {
            Box::new(SqliteSink::in_memory(kind).expect("in-memory sqlite"))
        });
    }

    #[test]
    fn sqlite_sinks_pass_the_conformance_suite_on_disk() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut sinks = SqliteSinks::new(dir.path()).expect("dir");
        let mut n = 0;
        offsetlab_engine::sink::conformance::run(&mut |kind| {
            n += 1;
            sinks.open(&format!("g{n}"), kind).expect("open")
        });
        assert!(sinks.path_for("g1").expect("path").exists());
    }

    #[test]
    fn any_group_id_gets_a_file_of_its_own() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut sinks = SqliteSinks::new(dir.path()).expect("dir");
        let long = "ü".repeat(2000);
        let groups = [
            "plain",
            "a b",
            "../up",
            "/abs",
            ".",
            "..",
            "#=",
            long.as_str(),
            ".hidden",
        ];
        for g in groups {
            sinks.open(g, SinkKind::Append).expect(g);
        }
        let mut paths: Vec<PathBuf> = groups.iter().map(|g| sinks.path_for(g).expect("path")).collect();
        for p in &paths {
            assert_eq!(p.parent(), Some(dir.path()), "{}", p.display());
            assert!(p.file_name().is_some_and(|n| n.len() <= 255));
            assert!(p.exists());
        }
        paths.sort();
        paths.dedup();
        assert_eq!(paths.len(), groups.len(), "one file per group");
        for g in groups {
            sinks.reopen(g, SinkKind::Append).expect(g);
        }
    }

    #[test]
    fn a_missing_or_other_sink_is_an_error_not_an_empty_sink() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut sinks = SqliteSinks::new(dir.path()).expect("dir");
        assert!(sinks.reopen("never", SinkKind::Append).is_err());
        sinks.open("g", SinkKind::Upsert).expect("open");
        let err = sinks.reopen("g", SinkKind::Append).err().map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("holds the upsert sink")));
    }

    #[test]
    fn the_database_file_is_plain_sqlite_a_learner_can_query() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("sink.sqlite");
        let mut sink = SqliteSink::create(&path, SinkKind::Transactional).expect("create");
        let tp = TopicPartition::new("orders", 0);
        sink.apply(&SinkWrite {
            tp: &tp,
            offset: 7,
            key: b"o-8",
            value: b"{}",
            consumer: "c1",
            incarnation: 2,
            generation: 1,
            reason: DeliveryReason::CrashRedelivery,
            at: 0,
        })
        .expect("apply");
        drop(sink);
        let conn = Connection::open(&path).expect("open");
        let (order, reason): (String, String) = conn
            .query_row("SELECT order_id, reason FROM rows", [], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .expect("row");
        assert_eq!((order.as_str(), reason.as_str()), ("o-8", "crash-redelivery"));
        let next: i64 = conn
            .query_row("SELECT next_offset FROM offsets", [], |r| r.get(0))
            .expect("offset");
        assert_eq!(next, 8);
    }
}
