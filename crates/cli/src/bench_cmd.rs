//! `offsetlab bench storage`: the durable log's figures, next to this machine's physical limits
//! measured in the same run. Progress bars show the long phases; `--json` prints the figures
//! for machines.

use crate::exit;
use indicatif::{ProgressBar, ProgressStyle};
use offsetlab_engine::delivery::DeliveryReason;
use offsetlab_engine::log::config::SegmentLimits;
use offsetlab_engine::log::{PartitionLog, TopicConfig};
use offsetlab_engine::record::{NewRecord, TopicPartition};
use offsetlab_engine::sink::{SinkKind, SinkWrite};
use offsetlab_records::ProducedBatches;
use offsetlab_sqlite::SqliteSink;
use offsetlab_storage::{Durability, FileLog, FlushPolicy};
use serde::Serialize;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

/// Records per produce request (and per acknowledgement under `always`).
const BATCH: usize = 4096;

#[derive(Debug, Default, Serialize)]
struct Figures {
    records: u64,
    record_value_bytes: usize,
    /// Machine limits, same run.
    page_cache_write_mb_s: f64,
    fsync_write_mb_s: f64,
    memcpy_gb_s: f64,
    append_never_records_s: f64,
    append_never_mb_s: f64,
    /// Produce requests the producer encoded, validated and written as they are, on one thread.
    append_produced_records_s: f64,
    append_produced_mb_s: f64,
    /// The same, validated on a request handler thread while the log appends.
    append_produced_pipelined_records_s: f64,
    append_produced_pipelined_mb_s: f64,
    append_always_records_s: f64,
    append_always_mb_s: f64,
    append_always_fsyncs: u64,
    /// Four producers on four partitions sharing fsyncs (group commit).
    append_always_4_producers_records_s: f64,
    append_always_4_producers_fsyncs: u64,
    append_always_4_producers_acks: u64,
    log_bytes: u64,
    startup_clean_ms: f64,
    startup_clean_validated_batches: u64,
    startup_unclean_ms: f64,
    startup_unclean_validated_batches: u64,
    replay_warm_records_s: f64,
    replay_cold_records_s: Option<f64>,
    rss_after_replay_mb: f64,
    sqlite_rebuild_rows_s: f64,
}

pub(crate) fn bar(len: u64, what: &str, quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let b = ProgressBar::new(len);
    b.set_style(
        ProgressStyle::with_template("{msg:>28} [{bar:40}] {human_pos}/{human_len} ({per_sec}, {eta})")
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
    );
    b.set_message(what.to_string());
    b
}

fn limits() -> SegmentLimits {
    TopicConfig::default().segment_limits()
}

pub(crate) fn rss_mb() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<f64>().ok())
        })
        .map_or(0.0, |kb| kb / 1024.0)
}

fn drop_caches() -> bool {
    // Needs root; without it the cold replay is reported as not measured.
    std::fs::write("/proc/sys/vm/drop_caches", "1").is_ok()
}

/// Sequential 1 MiB writes of `bytes` through the page cache, then the same with one fdatasync.
fn machine_limits(dir: &Path, bytes: usize) -> std::io::Result<(f64, f64, f64)> {
    let chunk = vec![0x5au8; 1 << 20];
    let path = dir.join("limits.bin");
    let measure = |sync: bool| -> std::io::Result<f64> {
        let _ = std::fs::remove_file(&path);
        let mut f = std::fs::File::create(&path)?;
        let t = Instant::now();
        for _ in 0..bytes / chunk.len() {
            f.write_all(&chunk)?;
        }
        if sync {
            f.sync_data()?;
        }
        Ok(bytes as f64 / t.elapsed().as_secs_f64() / 1e6)
    };
    // The best of three: writeback of earlier runs and the VM's neighbours make single runs noisy.
    let mut cache: f64 = 0.0;
    let mut synced: f64 = 0.0;
    for _ in 0..3 {
        cache = cache.max(measure(false)?);
        synced = synced.max(measure(true)?);
    }
    let _ = std::fs::remove_file(&path);
    let src = vec![7u8; 256 << 20];
    let mut dst = vec![0u8; 256 << 20];
    let t = Instant::now();
    for _ in 0..4 {
        dst.copy_from_slice(&src);
        std::hint::black_box(&dst);
    }
    let memcpy = 4.0 * src.len() as f64 / t.elapsed().as_secs_f64() / 1e9;
    Ok((cache, synced, memcpy))
}

/// The next `count` order keys, `o-0000000042`, counted up in place like an odometer: the bench
/// measures the log, not the formatting of keys.
struct Keys([u8; 12]);

impl Keys {
    fn from(first: u64) -> Self {
        let mut key = *b"o-0000000000";
        for (d, c) in key[2..].iter_mut().rev().zip(first.to_string().bytes().rev()) {
            *d = c;
        }
        Self(key)
    }

    fn fill(&mut self, arena: &mut Vec<u8>, count: usize) {
        arena.clear();
        for _ in 0..count {
            arena.extend_from_slice(&self.0);
            for d in self.0[2..].iter_mut().rev() {
                if *d == b'9' {
                    *d = b'0';
                } else {
                    *d += 1;
                    break;
                }
            }
        }
    }
}

fn orders<'a>(arena: &'a [u8], value: &'a [u8], timestamp: i64) -> Vec<NewRecord<'a>> {
    arena
        .chunks_exact(12)
        .map(|key| NewRecord::new(timestamp, Some(key), Some(value)))
        .collect()
}

/// Produce requests of [`BATCH`] orders as a producer sends them: record batches of 512 records
/// (about 62 KiB, librdkafka's and the log's own batch size class) back to back, numbered from 0.
fn produce_requests(count: usize) -> Vec<Vec<u8>> {
    let value = [b'v'; 100];
    let mut keys = Keys::from(0);
    let mut arena = Vec::with_capacity(BATCH * 12);
    (0..count)
        .map(|r| {
            keys.fill(&mut arena, BATCH);
            let records = orders(&arena, &value, (r * BATCH) as i64);
            let mut request = Vec::with_capacity(BATCH * 130);
            for chunk in records.chunks(512) {
                offsetlab_records::batch::encode_consecutive(&mut request, 0, chunk, -1);
            }
            request
        })
        .collect()
}

/// Requests the "producer" encodes beforehand and sends round and round: 1 M records, more than
/// the CPU caches hold, so the log reads them from memory as it would a socket's buffers.
const POOL: usize = 256;

/// Appends `n` orders as produce requests, each validated and then appended on this thread.
/// Returns the records appended (`n` rounded up to whole requests) and the seconds it took.
fn fill_produced(log: &mut FileLog, n: u64, progress: &ProgressBar) -> anyhow::Result<(u64, f64)> {
    let mut pool = produce_requests((n as usize).div_ceil(BATCH).min(POOL));
    let t = Instant::now();
    let (mut done, mut next) = (0u64, 0);
    while done < n {
        let pool_len = pool.len();
        log.append_wire(&mut pool[next], done as i64)?;
        next = (next + 1) % pool_len;
        done += BATCH as u64;
        progress.inc(BATCH as u64);
    }
    Ok((done, t.elapsed().as_secs_f64()))
}

/// The same appends with the work split as a broker splits it: a request handler thread
/// validates each request (CRC, every record) while the log appends the ones before it.
fn fill_produced_pipelined(log: &mut FileLog, n: u64, progress: &ProgressBar) -> anyhow::Result<(u64, f64)> {
    let pool = produce_requests((n as usize).div_ceil(BATCH).min(POOL));
    let (to_log, validated) = std::sync::mpsc::sync_channel::<ProducedBatches>(4);
    let (give_back, returned) = std::sync::mpsc::channel::<Vec<u8>>();
    let t = Instant::now();
    let done = std::thread::scope(|scope| -> anyhow::Result<u64> {
        let handler = scope.spawn(move || -> anyhow::Result<()> {
            let mut fresh = pool.into_iter();
            let mut sent = 0u64;
            while sent < n {
                let Some(bytes) = fresh.next().or_else(|| returned.recv().ok()) else {
                    break;
                };
                let request = ProducedBatches::validate(bytes)?;
                sent += request.records() as u64;
                if to_log.send(request).is_err() {
                    break;
                }
            }
            Ok(())
        });
        let mut done = 0u64;
        for mut request in validated {
            log.append_produced(&mut request, done as i64)?;
            done += request.records() as u64;
            progress.inc(request.records() as u64);
            let _ = give_back.send(request.into_bytes());
        }
        handler
            .join()
            .map_err(|_| anyhow::anyhow!("the request handler thread panicked"))??;
        Ok(done)
    })?;
    Ok((done, t.elapsed().as_secs_f64()))
}

/// Appends `n` orders with 100-byte values in produce-sized batches; with `ack`, every batch is
/// synced before the next (the produce request's acknowledgement).
fn fill(
    log: &mut FileLog,
    n: u64,
    first: u64,
    durability: Option<&Durability>,
    progress: &ProgressBar,
) -> std::io::Result<()> {
    let value = [b'v'; 100];
    // Every record its own order id.
    let mut keys = Keys::from(first);
    let mut arena: Vec<u8> = Vec::with_capacity(BATCH * 12);
    let mut i = 0u64;
    while i < n {
        let k = (n - i).min(BATCH as u64) as usize;
        keys.fill(&mut arena, k);
        let batch = orders(&arena, &value, (first + i) as i64);
        log.try_append_batch(&batch, (first + i) as i64)?;
        if let Some(d) = durability {
            d.sync_upto(d.written())?;
        }
        i += k as u64;
        progress.inc(k as u64);
    }
    Ok(())
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn run(records: u64, dir: &Path, quiet: bool) -> anyhow::Result<Figures> {
    let mut f = Figures {
        records,
        record_value_bytes: 100,
        ..Figures::default()
    };
    if !quiet {
        eprintln!("machine limits: sequential writes of 1 GiB (best of 3), memcpy of 256 MiB");
    }
    std::fs::create_dir_all(dir)?;
    (f.page_cache_write_mb_s, f.fsync_write_mb_s, f.memcpy_gb_s) = machine_limits(dir, 1 << 30)?;
    let stage = Stage { dir, records, quiet };
    let (log, durability) = stage.append_never(&mut f)?;
    stage.append_produced(&mut f, &durability)?;
    let log = stage.startup(&mut f, log, &durability)?;
    stage.replay(&mut f, &log);
    stage.rebuild_projection(&mut f, &log)?;
    drop(log);
    stage.append_always(&mut f)?;
    stage.group_commit(&mut f)?;
    Ok(f)
}

/// One run of the storage bench: where, how many records, and whether to show progress.
struct Stage<'a> {
    dir: &'a Path,
    records: u64,
    quiet: bool,
}

impl Stage<'_> {
    /// Appends under `--flush never`; the log and its durability go on to the next stages.
    fn append_never(&self, f: &mut Figures) -> anyhow::Result<(FileLog, Arc<Durability>)> {
        let (dir, records, quiet) = (self.dir, self.records, self.quiet);
        // Appends, flush=never.
        let never_dir = dir.join("orders-never");
        let _ = std::fs::remove_dir_all(&never_dir);
        let durability = Durability::new(FlushPolicy::Never);
        let mut log = FileLog::open(&never_dir, limits(), Arc::clone(&durability), false)?;
        let b = bar(records, "append, --flush never", quiet);
        let t = Instant::now();
        fill(&mut log, records, 0, None, &b)?;
        let secs = t.elapsed().as_secs_f64();
        b.finish_and_clear();
        f.log_bytes = dir_bytes(&never_dir);
        f.append_never_records_s = records as f64 / secs;
        f.append_never_mb_s = f.log_bytes as f64 / secs / 1e6;

        Ok((log, durability))
    }

    fn append_produced(&self, f: &mut Figures, durability: &Arc<Durability>) -> anyhow::Result<()> {
        let (dir, records, quiet) = (self.dir, self.records, self.quiet);
        // Appends of batches as the producer encoded them (the Produce path), flush=never.
        let produced_dir = dir.join("orders-produced");
        let _ = std::fs::remove_dir_all(&produced_dir);
        {
            let mut produced = FileLog::open(&produced_dir, limits(), Arc::clone(durability), false)?;
            let b = bar(records, "append produced batches", quiet);
            let (appended, secs) = fill_produced(&mut produced, records, &b)?;
            b.finish_and_clear();
            f.append_produced_records_s = appended as f64 / secs;
            f.append_produced_mb_s = dir_bytes(&produced_dir) as f64 / secs / 1e6;
        }
        let _ = std::fs::remove_dir_all(&produced_dir);
        {
            let mut produced = FileLog::open(&produced_dir, limits(), Arc::clone(durability), false)?;
            let b = bar(records, "append produced, 2 threads", quiet);
            let (appended, secs) = fill_produced_pipelined(&mut produced, records, &b)?;
            b.finish_and_clear();
            f.append_produced_pipelined_records_s = appended as f64 / secs;
            f.append_produced_pipelined_mb_s = dir_bytes(&produced_dir) as f64 / secs / 1e6;
        }
        let _ = std::fs::remove_dir_all(&produced_dir);

        Ok(())
    }

    fn startup(
        &self,
        f: &mut Figures,
        mut log: FileLog,
        durability: &Arc<Durability>,
    ) -> anyhow::Result<FileLog> {
        let never_dir = self.dir.join("orders-never");
        // Startup after a clean close, then after an unclean stop (drop without close).
        log.close_files()?;
        drop(log);
        let t = Instant::now();
        let log = FileLog::open(&never_dir, limits(), Arc::clone(durability), true)?;
        f.startup_clean_ms = t.elapsed().as_secs_f64() * 1e3;
        f.startup_clean_validated_batches = log.open_report().validated_batches;
        drop(log);
        let t = Instant::now();
        let log = FileLog::open(&never_dir, limits(), Arc::clone(durability), false)?;
        f.startup_unclean_ms = t.elapsed().as_secs_f64() * 1e3;
        f.startup_unclean_validated_batches = log.open_report().validated_batches;

        Ok(log)
    }

    fn replay(&self, f: &mut Figures, log: &FileLog) {
        let (records, quiet) = (self.records, self.quiet);
        // Replay from offset 0: warm (the page cache holds the log), then cold.
        let replay = |log: &FileLog, label: &str| -> f64 {
            let b = bar(records, label, quiet);
            let t = Instant::now();
            let mut from = 0;
            let mut n = 0u64;
            loop {
                let mut last = None;
                let got = log.read(from, 500, &mut |r| {
                    last = Some(r.offset);
                    std::hint::black_box(r.value);
                });
                if got == 0 {
                    break;
                }
                n += got as u64;
                b.inc(got as u64);
                from = last.map_or(from, |o| o + 1);
            }
            b.finish_and_clear();
            n as f64 / t.elapsed().as_secs_f64()
        };
        f.replay_warm_records_s = replay(log, "replay from 0, warm");
        f.rss_after_replay_mb = rss_mb();
        if drop_caches() {
            f.replay_cold_records_s = Some(replay(log, "replay from 0, cold"));
        }
    }

    fn rebuild_projection(&self, f: &mut Figures, log: &FileLog) -> anyhow::Result<()> {
        let (dir, records, quiet) = (self.dir, self.records, self.quiet);
        // An upsert projection of every order, rebuilt from offset 0 into SQLite.
        let db = dir.join("projection.sqlite");
        let _ = std::fs::remove_file(&db);
        let mut sink = SqliteSink::create(&db, SinkKind::Upsert)?;
        let tp = TopicPartition::new("orders", 0);
        let b = bar(records, "rebuild upsert projection", quiet);
        let t = Instant::now();
        let mut from = 0;
        loop {
            let mut owned: Vec<(i64, Vec<u8>, Vec<u8>)> = Vec::with_capacity(50_000);
            log.read(from, 50_000, &mut |r| {
                owned.push((
                    r.offset,
                    r.key.unwrap_or_default().to_vec(),
                    r.value.unwrap_or_default().to_vec(),
                ));
            });
            let Some(last) = owned.last().map(|r| r.0) else {
                break;
            };
            let writes: Vec<SinkWrite<'_>> = owned
                .iter()
                .map(|(offset, key, value)| SinkWrite {
                    tp: &tp,
                    offset: *offset,
                    key,
                    value,
                    consumer: "rebuild",
                    incarnation: 1,
                    generation: 1,
                    reason: DeliveryReason::First,
                    at: 0,
                })
                .collect();
            sink.apply_many(&writes)?;
            b.inc(owned.len() as u64);
            from = last + 1;
        }
        b.finish_and_clear();
        f.sqlite_rebuild_rows_s = records as f64 / t.elapsed().as_secs_f64();

        Ok(())
    }

    fn append_always(&self, f: &mut Figures) -> anyhow::Result<()> {
        let (dir, records, quiet) = (self.dir, self.records, self.quiet);
        // Appends, flush=always: each produce batch synced before the next is sent.
        let always_dir = dir.join("orders-always");
        let _ = std::fs::remove_dir_all(&always_dir);
        let durability = Durability::new(FlushPolicy::Always);
        let n_always = records.min(2_000_000);
        let mut log = FileLog::open(&always_dir, limits(), Arc::clone(&durability), false)?;
        let b = bar(n_always, "append, --flush always", quiet);
        let t = Instant::now();
        fill(&mut log, n_always, 0, Some(&durability), &b)?;
        let secs = t.elapsed().as_secs_f64();
        b.finish_and_clear();
        f.append_always_records_s = n_always as f64 / secs;
        f.append_always_mb_s = dir_bytes(&always_dir) as f64 / secs / 1e6;
        f.append_always_fsyncs = durability.syncs();
        drop(log);

        Ok(())
    }

    fn group_commit(&self, f: &mut Figures) -> anyhow::Result<()> {
        let (dir, quiet) = (self.dir, self.quiet);
        let n_always = self.records.min(2_000_000);
        // Four producers, four partitions, one fsync shared by whoever is waiting (group commit).
        let durability = Durability::new(FlushPolicy::Always);
        let per = n_always / 4;
        let b = bar(per * 4, "4 producers, --flush always", quiet);
        let t = Instant::now();
        let handles: Vec<_> = (0..4)
            .map(|p| {
                let d = Arc::clone(&durability);
                let pdir = dir.join(format!("orders-group-{p}"));
                let b = b.clone();
                std::thread::spawn(move || -> std::io::Result<u64> {
                    let _ = std::fs::remove_dir_all(&pdir);
                    let mut log = FileLog::open(&pdir, limits(), Arc::clone(&d), false)?;
                    let mut acks = 0;
                    let value = [b'v'; 100];
                    let keys: Vec<String> = (0..256).map(|j| format!("o-{p}-{j}")).collect();
                    let mut i = 0;
                    while i < per {
                        let batch: Vec<NewRecord<'_>> = keys
                            .iter()
                            .map(|k| NewRecord::new(0, Some(k.as_bytes()), Some(&value)))
                            .collect();
                        log.try_append_batch(&batch, 0)?;
                        d.sync_upto(d.written())?;
                        acks += 1;
                        i += batch.len() as u64;
                        b.inc(batch.len() as u64);
                    }
                    let _ = std::fs::remove_dir_all(&pdir);
                    Ok(acks)
                })
            })
            .collect();
        let mut acks = 0;
        for h in handles {
            acks += h
                .join()
                .map_err(|_| anyhow::anyhow!("a producer thread panicked"))??;
        }
        b.finish_and_clear();
        f.append_always_4_producers_records_s = (per * 4) as f64 / t.elapsed().as_secs_f64();
        f.append_always_4_producers_fsyncs = durability.syncs();
        f.append_always_4_producers_acks = acks;
        Ok(())
    }
}

pub fn storage(records: u64, dir: Option<PathBuf>, json: bool) -> u8 {
    let temp = match &dir {
        Some(_) => None,
        None => match tempfile::Builder::new().prefix("offsetlab-bench").tempdir_in(".") {
            Ok(t) => Some(t),
            Err(e) => {
                crate::style::say_error!("cannot create a directory for the bench: {e}");
                return exit::IO_ERROR;
            }
        },
    };
    let path = dir.unwrap_or_else(|| temp.as_ref().map(|t| t.path().to_path_buf()).unwrap_or_default());
    let f = match run(records, &path, json) {
        Ok(f) => f,
        Err(e) => {
            crate::style::say_error!("{e}");
            return exit::IO_ERROR;
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&f).unwrap_or_default());
    } else {
        print_figures(&f, &path);
    }
    exit::OK
}

/// The figures for people.
fn print_figures(f: &Figures, path: &Path) {
    let per_record = f.log_bytes as f64 / f.records as f64;
    println!(
        "offsetlab bench storage — {} records of {} bytes, in {}",
        f.records,
        f.record_value_bytes,
        path.display()
    );
    println!();
    println!("machine limits (same run)");
    println!(
        "  sequential write, page cache        {:>10.0} MB/s",
        f.page_cache_write_mb_s
    );
    println!(
        "  sequential write + fdatasync        {:>10.0} MB/s",
        f.fsync_write_mb_s
    );
    println!(
        "  memcpy                              {:>10.1} GB/s",
        f.memcpy_gb_s
    );
    println!();
    println!("the durable log ({per_record:.1} bytes on disk per record, batches of {BATCH})");
    println!(
        "  append, --flush never               {:>10.0} records/s  {:>6.0} MB/s ({:.0}% of the page-cache limit)",
        f.append_never_records_s,
        f.append_never_mb_s,
        100.0 * f.append_never_mb_s / f.page_cache_write_mb_s
    );
    println!(
        "  append produced batches, never      {:>10.0} records/s  {:>6.0} MB/s ({:.0}% of the page-cache limit)",
        f.append_produced_records_s,
        f.append_produced_mb_s,
        100.0 * f.append_produced_mb_s / f.page_cache_write_mb_s
    );
    println!(
        "    validated on a handler thread     {:>10.0} records/s  {:>6.0} MB/s ({:.0}% of the page-cache limit)",
        f.append_produced_pipelined_records_s,
        f.append_produced_pipelined_mb_s,
        100.0 * f.append_produced_pipelined_mb_s / f.page_cache_write_mb_s
    );
    println!(
        "  append, --flush always              {:>10.0} records/s  {:>6.0} MB/s ({} fsyncs)",
        f.append_always_records_s, f.append_always_mb_s, f.append_always_fsyncs
    );
    println!(
        "  4 producers, --flush always         {:>10.0} records/s  ({} acks shared {} fsyncs)",
        f.append_always_4_producers_records_s,
        f.append_always_4_producers_acks,
        f.append_always_4_producers_fsyncs
    );
    println!(
        "  replay from offset 0, warm          {:>10.0} records/s",
        f.replay_warm_records_s
    );
    match f.replay_cold_records_s {
        Some(c) => println!("  replay from offset 0, cold          {c:>10.0} records/s"),
        None => println!(
            "  replay from offset 0, cold          not measured (dropping the page cache needs root)"
        ),
    }
    println!(
        "  resident set after the replay       {:>10.0} MB",
        f.rss_after_replay_mb
    );
    println!(
        "  startup after a clean stop          {:>10.1} ms ({} batches read)",
        f.startup_clean_ms, f.startup_clean_validated_batches
    );
    println!(
        "  startup after an unclean stop       {:>10.1} ms ({} batches validated)",
        f.startup_unclean_ms, f.startup_unclean_validated_batches
    );
    println!(
        "  SQLite upsert projection rebuild    {:>10.0} rows/s",
        f.sqlite_rebuild_rows_s
    );
}
