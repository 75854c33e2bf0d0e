//! Writes the seed corpus: one frame per request type the listener serves, encoded by the
//! kafka-protocol crate as a client would, and record batches as a producer sends them.
//! `cargo run --bin seeds` (from `fuzz/`) fills `seeds/decode_request/` and
//! `seeds/produced_batches/`.

use bytes::{Bytes, BytesMut};
use offsetlab_wire::client::encode_request;
use offsetlab_wire::kafka_protocol::messages::*;
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::kafka_protocol::records::{Compression, Record, RecordBatchEncoder, RecordEncodeOptions, TimestampType};

fn batch(n: i64) -> Bytes {
    let records: Vec<Record> = (0..n)
        .map(|i| Record {
            transactional: false,
            control: false,
            delete_horizon: false,
            partition_leader_epoch: -1,
            producer_id: 7,
            producer_epoch: 0,
            timestamp_type: TimestampType::Creation,
            offset: i,
            sequence: i as i32,
            timestamp: 1_767_225_600_000 + i,
            key: Some(Bytes::from(format!("o-{i}"))),
            value: (i % 3 != 2).then(|| Bytes::from(format!("{{\"order_id\":\"o-{i}\"}}"))),
            headers: Default::default(),
        })
        .collect();
    let mut out = BytesMut::new();
    RecordBatchEncoder::encode(&mut out, &records, &RecordEncodeOptions { version: 2, compression: Compression::None })
        .expect("encode");
    out.freeze()
}

fn name(s: &'static str) -> TopicName {
    TopicName(StrBytes::from_static_str(s))
}

fn main() -> std::io::Result<()> {
    let requests: Vec<(&str, ApiKey, i16, RequestKind)> = vec![
        ("api_versions_v3", ApiKey::ApiVersions, 3, RequestKind::ApiVersions(ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("librdkafka"))
            .with_client_software_version(StrBytes::from_static_str("2.0.2")))),
        ("metadata_v1", ApiKey::Metadata, 1, RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![
            metadata_request::MetadataRequestTopic::default().with_name(Some(name("orders")))])))),
        ("metadata_v9", ApiKey::Metadata, 9, RequestKind::Metadata(MetadataRequest::default().with_allow_auto_topic_creation(true).with_topics(Some(vec![
            metadata_request::MetadataRequestTopic::default().with_name(Some(name("orders")))])))),
        ("produce_v7", ApiKey::Produce, 7, RequestKind::Produce(ProduceRequest::default().with_acks(-1).with_timeout_ms(5000).with_topic_data(vec![
            produce_request::TopicProduceData::default().with_name(name("orders")).with_partition_data(vec![
                produce_request::PartitionProduceData::default().with_index(0).with_records(Some(batch(4)))])]))),
        ("fetch_v11", ApiKey::Fetch, 11, RequestKind::Fetch(FetchRequest::default().with_replica_id((-1).into()).with_max_wait_ms(500).with_min_bytes(1).with_max_bytes(1 << 20).with_isolation_level(1).with_topics(vec![
            fetch_request::FetchTopic::default().with_topic(name("orders")).with_partitions(vec![
                fetch_request::FetchPartition::default().with_partition(0).with_fetch_offset(3).with_partition_max_bytes(1 << 20)])]))),
        ("list_offsets_v5", ApiKey::ListOffsets, 5, RequestKind::ListOffsets(ListOffsetsRequest::default().with_replica_id((-1).into()).with_topics(vec![
            list_offsets_request::ListOffsetsTopic::default().with_name(name("orders")).with_partitions(vec![
                list_offsets_request::ListOffsetsPartition::default().with_partition_index(0).with_timestamp(-2)])]))),
        ("offset_commit_v7", ApiKey::OffsetCommit, 7, RequestKind::OffsetCommit(OffsetCommitRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g"))).with_generation_id_or_member_epoch(-1).with_topics(vec![
            offset_commit_request::OffsetCommitRequestTopic::default().with_name(name("orders")).with_partitions(vec![
                offset_commit_request::OffsetCommitRequestPartition::default().with_partition_index(0).with_committed_offset(5)])]))),
        ("offset_fetch_v7", ApiKey::OffsetFetch, 7, RequestKind::OffsetFetch(OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_static_str("g"))).with_topics(None))),
        ("describe_groups_v5", ApiKey::DescribeGroups, 5, RequestKind::DescribeGroups(DescribeGroupsRequest::default()
            .with_groups(vec![GroupId(StrBytes::from_static_str("g"))]))),
        ("create_topics_v5", ApiKey::CreateTopics, 5, RequestKind::CreateTopics(CreateTopicsRequest::default().with_timeout_ms(5000).with_topics(vec![
            create_topics_request::CreatableTopic::default().with_name(name("audit")).with_num_partitions(3).with_replication_factor(1).with_configs(vec![
                create_topics_request::CreatableTopicConfig::default().with_name(StrBytes::from_static_str("cleanup.policy")).with_value(Some(StrBytes::from_static_str("compact")))])]))),
        ("delete_records_v1", ApiKey::DeleteRecords, 1, RequestKind::DeleteRecords(DeleteRecordsRequest::default().with_timeout_ms(5000).with_topics(vec![
            delete_records_request::DeleteRecordsTopic::default().with_name(name("orders")).with_partitions(vec![
                delete_records_request::DeleteRecordsPartition::default().with_partition_index(0).with_offset(4)])]))),
        ("describe_configs_v4", ApiKey::DescribeConfigs, 4, RequestKind::DescribeConfigs(DescribeConfigsRequest::default().with_resources(vec![
            describe_configs_request::DescribeConfigsResource::default().with_resource_type(2).with_resource_name(StrBytes::from_static_str("orders"))]))),
        ("init_producer_id_v4", ApiKey::InitProducerId, 4, RequestKind::InitProducerId(InitProducerIdRequest::default()
            .with_transactional_id(None).with_transaction_timeout_ms(60_000))),
    ];
    let dir = std::path::Path::new("seeds/decode_request");
    std::fs::create_dir_all(dir)?;
    for (file, key, version, body) in &requests {
        let frame = encode_request(*key, *version, 1, "rdkafka", body).expect("encode");
        std::fs::write(dir.join(file), &frame[4..])?; // size prefix removed, as the listener sees it
    }
    let dir = std::path::Path::new("seeds/produced_batches");
    std::fs::create_dir_all(dir)?;
    std::fs::write(dir.join("one_batch_of_4"), batch(4))?;
    let mut two = BytesMut::from(&batch(2)[..]);
    two.extend_from_slice(&batch(3));
    std::fs::write(dir.join("two_batches"), two)?;
    // Compressed records for the decompress target: the first byte picks the codec.
    let dir = std::path::Path::new("seeds/decompress");
    std::fs::create_dir_all(dir)?;
    let plain = batch(50);
    let mut gz = flate2::write::GzEncoder::new(vec![0u8], flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &plain)?;
    std::fs::write(dir.join("gzip"), gz.finish()?)?;
    let mut sn = vec![1u8];
    sn.extend(snap::raw::Encoder::new().compress_vec(&plain).expect("snappy"));
    std::fs::write(dir.join("snappy_raw"), sn)?;
    let mut lz = lz4_flex::frame::FrameEncoder::new(vec![2u8]);
    std::io::Write::write_all(&mut lz, &plain)?;
    std::fs::write(dir.join("lz4"), lz.finish().expect("lz4"))?;
    let mut zs = vec![3u8];
    zs.extend(ruzstd::encoding::compress_to_vec(&plain[..], ruzstd::encoding::CompressionLevel::Fastest));
    std::fs::write(dir.join("zstd"), zs)?;
    println!("{} request seeds, 2 batch seeds, 4 compressed seeds", requests.len());
    Ok(())
}
