//! Reads that do not wait behind writes: a Fetch, a Metadata, a ListOffsets and an OffsetFetch
//! answered — through the dispatcher, as a connection's request is — while another thread holds
//! the lab's write path in the middle of a change, as a long scenario line or a Produce's save
//! holds it; and answered with what the lab held before that change, none of what it appended.
//!
//! Nothing here waits for time: the holder keeps the write path until it is told the reads were
//! answered, so a read that waited for it would never be answered — the timeouts only turn such
//! a hang into a failure.

use crate::apis::{dispatch, Client};
use crate::broker::Broker;
use crate::testing::{broker, name};
use offsetlab_lab::LabHandle;
use offsetlab_records::Batch;
use offsetlab_wire::error::NONE;
use offsetlab_wire::kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use offsetlab_wire::kafka_protocol::messages::list_offsets_request::{
    ListOffsetsPartition, ListOffsetsTopic,
};
use offsetlab_wire::kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use offsetlab_wire::kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup;
use offsetlab_wire::kafka_protocol::messages::{
    FetchRequest, GroupId, ListOffsetsRequest, MetadataRequest, OffsetFetchRequest, RequestKind,
    ResponseKind, TopicName,
};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

/// Long enough for any read on any machine; a read that waits for the write path never ends.
const HANG: Duration = Duration::from_secs(30);

/// A thread holding the write path: the lab locked, `lines` applied and not yet let go.
struct Holder {
    release: mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Holder {
    fn start(lab: &LabHandle, lines: &[&str]) -> Self {
        let lab = lab.clone();
        let lines: Vec<String> = lines.iter().map(ToString::to_string).collect();
        let (held, holding) = mpsc::channel();
        let (release, released) = mpsc::channel::<()>();
        let thread = std::thread::spawn(move || {
            let mut s = lab.lock_for_change();
            s.apply_lines(&lines).expect("the lines apply");
            held.send(()).expect("the test waits");
            let _ = released.recv();
            lab.changed(&mut s).expect("saved");
        });
        holding.recv().expect("the holder holds the write path");
        Self { release, thread }
    }

    /// Lets the write path go: the change is saved and published.
    fn release(self) {
        let _ = self.release.send(());
        self.thread.join().expect("the holder let go");
    }
}

async fn ask(b: &Arc<Broker>, body: RequestKind, version: i16) -> ResponseKind {
    let client = Client {
        connection: 0,
        host: "/127.0.0.1",
        sasl: Default::default(),
    };
    tokio::time::timeout(HANG, dispatch(body, version, b, &client, "reader".to_string()))
        .await
        .expect("answered while the write path is held")
        .expect("an answer")
}

fn fetch(offset: i64) -> RequestKind {
    RequestKind::Fetch(
        FetchRequest::default()
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(1 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(name("orders")))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(offset)
                    .with_partition_max_bytes(1 << 20)])]),
    )
}

/// The high watermark and the offsets of the records a Fetch of `orders-0` carried.
fn fetched(r: &ResponseKind) -> (i64, Vec<i64>) {
    let ResponseKind::Fetch(r) = r else {
        panic!("not a fetch response: {r:?}");
    };
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, NONE);
    let mut bytes = p.records.as_deref().unwrap_or_default();
    let mut offsets = Vec::new();
    while !bytes.is_empty() {
        let b = Batch::parse(bytes).expect("a whole batch");
        offsets.extend(b.records().map(|r| r.offset));
        bytes = &bytes[b.header.total_len..];
    }
    (p.high_watermark, offsets)
}

/// The latest offset of `orders-0` as ListOffsets answers it.
fn latest(r: &ResponseKind) -> i64 {
    let ResponseKind::ListOffsets(r) = r else {
        panic!("not a ListOffsets response: {r:?}");
    };
    r.topics[0].partitions[0].offset
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_is_served_while_a_long_line_holds_the_write_path() {
    let b = Arc::new(broker());
    // The seed's `orders` holds 12 records; a change in progress appends 5 more, creates a
    // topic and commits for a group, and holds the write path until the reads are answered.
    let holder = Holder::start(
        &b.lab,
        &[
            "produce orders count=5 partition=0",
            "topic clicks",
            "alter-offsets audit offsets=orders:0=7",
        ],
    );
    let (hw, offsets) = fetched(&ask(&b, fetch(0), 11).await);
    assert_eq!(hw, 12, "the high watermark before the change");
    assert!(
        offsets.contains(&11) && offsets.iter().all(|&o| o < 12),
        "the records before the change, none of the change's: {offsets:?}"
    );
    let metadata = ask(
        &b,
        RequestKind::Metadata(MetadataRequest::default().with_topics(None)),
        9,
    )
    .await;
    let ResponseKind::Metadata(metadata) = metadata else {
        panic!("not a metadata response");
    };
    let names: Vec<&str> = metadata
        .topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.0.as_str()))
        .collect();
    assert!(
        names.contains(&"orders") && !names.contains(&"clicks"),
        "the topics before the change: {names:?}"
    );
    let list = |spec: i64| {
        RequestKind::ListOffsets(
            ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
                .with_name(TopicName(name("orders")))
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(spec)])]),
        )
    };
    assert_eq!(latest(&ask(&b, list(-1), 9).await), 12);
    let offsets_of = |group: &str| {
        RequestKind::OffsetFetch(OffsetFetchRequest::default().with_groups(vec![
            OffsetFetchRequestGroup::default()
                .with_group_id(GroupId(name(group)))
                .with_topics(None),
        ]))
    };
    let ResponseKind::OffsetFetch(committed) = ask(&b, offsets_of("audit"), 8).await else {
        panic!("not an OffsetFetch response");
    };
    assert!(
        committed.groups[0].topics.is_empty(),
        "no commit of the change yet: {committed:?}"
    );
    // Let go: the change is saved, published and read at once.
    holder.release();
    let (hw, offsets) = fetched(&ask(&b, fetch(12), 11).await);
    assert_eq!((hw, offsets.last()), (17, Some(&16)));
    assert_eq!(latest(&ask(&b, list(-1), 9).await), 17);
    let ResponseKind::OffsetFetch(committed) = ask(&b, offsets_of("audit"), 8).await else {
        panic!("not an OffsetFetch response");
    };
    assert_eq!(committed.groups[0].topics[0].partitions[0].committed_offset, 7);
}

/// A batch that fails is taken back whole (the lab rebuilt without it) before the write path is
/// let go: no reader sees its records — while the path is held they read the lab as it was before
/// the change began, and after it the lab without the failed batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_taken_back_is_never_read() {
    let b = Arc::new(broker());
    let lab = b.lab.clone();
    let (held, holding) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        let mut s = lab.lock_for_change();
        s.apply_lines(&["produce orders count=5 partition=0".to_string()])
            .expect("the produce applies");
        held.send(()).expect("the test waits");
        let _ = released.recv();
        // A second batch of the same hold fails at its last line: undone by replay.
        let failing = [
            "produce orders count=3 partition=0".to_string(),
            "expect group=analytics-prod lost=99".to_string(),
        ];
        assert!(s.apply_lines(&failing).is_err());
        lab.changed(&mut s).expect("the first batch saved");
    });
    holding.recv().expect("held");
    assert_eq!(
        fetched(&ask(&b, fetch(0), 11).await).0,
        12,
        "while held: the lab before the change"
    );
    let _ = release.send(());
    thread.join().expect("let go");
    let (hw, offsets) = fetched(&ask(&b, fetch(12), 11).await);
    assert_eq!(hw, 17, "the first batch, not the one taken back");
    assert_eq!(offsets, (12..17).collect::<Vec<_>>());
    // Metadata by name, from the view of the rebuilt lab.
    let by_name = RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![
        MetadataRequestTopic::default().with_name(Some(TopicName(name("orders")))),
    ])));
    let ResponseKind::Metadata(m) = ask(&b, by_name, 9).await else {
        panic!("not a metadata response");
    };
    assert_eq!((m.topics[0].error_code, m.topics[0].partitions.len()), (NONE, 1));
}
