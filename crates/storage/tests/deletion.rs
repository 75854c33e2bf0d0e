//! A deleted partition's files go only once the deletion is saved: `LogStore::remove` renames
//! the directory aside, a crash before the save brings it back at the next open, and
//! `FileStore::purge_deleted` removes it for good.

use offsetlab_engine::log::{LogStore, TopicConfig};
use offsetlab_engine::record::NewRecord;
use offsetlab_storage::{FileStore, FlushPolicy};

fn record(value: &str) -> NewRecord<'_> {
    NewRecord::new(0, None, Some(value.as_bytes()))
}

#[test]
fn a_deleted_partition_comes_back_until_its_deletion_is_saved() {
    let dir = tempfile::tempdir().expect("dir");
    let root = dir.path().join("logs");
    let config = TopicConfig::default();
    let mut store = FileStore::open(&root, FlushPolicy::Never).expect("store");
    let mut log = store.open("scratch", 0, &config).expect("log");
    log.append(record("kept until saved"), 0);
    drop(log);
    store.remove("scratch", 0).expect("removed");
    assert!(!root.join("scratch-0").exists(), "gone from the store's view");

    // A crash before the deletion was saved: the next open brings the partition back.
    let mut store = FileStore::open(&root, FlushPolicy::Never).expect("store");
    let log = store.open("scratch", 0, &config).expect("log");
    assert_eq!(log.log_end_offset(), 1, "its records with it");
    drop(log);

    // Deleted twice before a save (deleted, created again, deleted): the first comes back.
    store.remove("scratch", 0).expect("removed");
    let mut again = store.open("scratch", 0, &config).expect("a new log");
    assert_eq!(again.log_end_offset(), 0, "a topic created again starts empty");
    again.append(record("second life"), 0);
    again.append(record("second life"), 0);
    drop(again);
    store.remove("scratch", 0).expect("removed");
    let mut store = FileStore::open(&root, FlushPolicy::Never).expect("store");
    let log = store.open("scratch", 0, &config).expect("log");
    assert_eq!(log.log_end_offset(), 1, "the partition the saved lab knew");
    drop(log);

    // Saved: the files go for good.
    store.remove("scratch", 0).expect("removed");
    FileStore::purge_deleted(&root).expect("purged");
    let leftovers: Vec<String> = std::fs::read_dir(&root)
        .expect("dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("scratch"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
    let mut store = FileStore::open(&root, FlushPolicy::Never).expect("store");
    assert_eq!(
        store.open("scratch", 0, &config).expect("log").log_end_offset(),
        0
    );
}
