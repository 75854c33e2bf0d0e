//! The whole lab on the durable store: every lesson gives the same figures as on the in-memory
//! store — and the same again after the store is closed and its logs reopened from disk.

use offsetlab_engine::log::MemoryStore;
use offsetlab_engine::sink::MemorySinks;
use offsetlab_engine::Lab;
use offsetlab_scenario::command::Command;
use offsetlab_scenario::lessons::LESSONS;
use offsetlab_scenario::Script;
use offsetlab_storage::{FileStore, FlushPolicy};

/// The figures, minus segment sizes in bytes (a batch on disk is not a record in memory).
fn figures(lab: &Lab) -> serde_json::Value {
    let mut v = serde_json::to_value(lab.view().expect("view")).expect("json");
    if let Some(topics) = v["topics"].as_array_mut() {
        for t in topics {
            for p in t["partitions"].as_array_mut().into_iter().flatten() {
                for s in p["segments"].as_array_mut().into_iter().flatten() {
                    s["bytes"] = serde_json::Value::Null;
                }
            }
        }
    }
    v
}

/// (offset, value) of every record of a partition.
type Records = Vec<(i64, Option<Vec<u8>>)>;

fn run(lab: &mut Lab, script: &Script) {
    for line in &script.lines {
        if !matches!(line.command, Command::Expect(_)) {
            line.command
                .apply(lab)
                .unwrap_or_else(|e| panic!("line {}: {e}", line.number));
        }
    }
}

#[test]
fn every_lesson_gives_the_same_figures_on_disk() {
    for lesson in LESSONS {
        let script = Script::parse(lesson.source).expect("lesson parses");
        let mut memory = Lab::new(Box::new(MemoryStore), Box::new(MemorySinks));
        run(&mut memory, &script);
        let dir = tempfile::tempdir().expect("tempdir");
        let store = FileStore::open(dir.path(), FlushPolicy::Never).expect("store");
        let mut disk = Lab::try_new(Box::new(store), Box::new(MemorySinks)).expect("lab");
        run(&mut disk, &script);
        assert_eq!(figures(&memory), figures(&disk), "{}", lesson.file);
        // Every acknowledged record is on disk: reopen the logs and read them back.
        disk.close_logs().expect("close");
        let logs: Vec<(String, i32, Records)> = disk
            .topics()
            .values()
            .flat_map(|t| {
                t.partitions.iter().enumerate().map(|(p, log)| {
                    let mut recs = Vec::new();
                    log.read(0, usize::MAX, &mut |r| {
                        recs.push((r.offset, r.value.map(<[u8]>::to_vec)))
                    });
                    (t.name.clone(), p as i32, recs)
                })
            })
            .collect();
        drop(disk);
        FileStore::mark_clean(dir.path()).expect("mark clean");
        let mut store = FileStore::open(dir.path(), FlushPolicy::Never).expect("reopen");
        assert!(store.was_clean());
        for (topic, p, recs) in logs {
            let config = memory.topic(&topic).expect("topic").config.clone();
            let log = offsetlab_engine::log::LogStore::open(&mut store, &topic, p, &config).expect("log");
            let mut again = Vec::new();
            log.read(0, usize::MAX, &mut |r| {
                again.push((r.offset, r.value.map(<[u8]>::to_vec)))
            });
            assert_eq!(recs, again, "{} {topic}-{p}", lesson.file);
        }
    }
}
