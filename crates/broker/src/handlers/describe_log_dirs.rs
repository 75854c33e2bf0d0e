//! DescribeLogDirs (`kafka-log-dirs.sh --describe`): the broker's one log directory — the lab's
//! `logs/` in its data directory, or `(memory)` for a lab that keeps none — with each partition's
//! size in bytes (its segments), no lag (there is no replica to catch up) and no future replica.
//! The volume's total and usable bytes are not measured: −1, the protocol's "unknown".

use crate::broker::Broker;
use crate::str_bytes;
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::NONE;
use offsetlab_wire::kafka_protocol::messages::describe_log_dirs_response::{
    DescribeLogDirsPartition, DescribeLogDirsResult, DescribeLogDirsTopic,
};
use offsetlab_wire::kafka_protocol::messages::{DescribeLogDirsRequest, DescribeLogDirsResponse, TopicName};

/// The lab's one log directory (its generation's `logs`; `(memory)` for a lab in memory).
pub(crate) fn log_dir(s: &offsetlab_lab::Session) -> String {
    s.generation_dir()
        .map_or("(memory)".to_string(), |g| g.join("logs").display().to_string())
}

pub(crate) fn handle(broker: &Broker, r: &DescribeLogDirsRequest) -> DescribeLogDirsResponse {
    let s = broker.lab.lock();
    let lab = s.lab();
    // Every partition when no topic is named; else the named ones the lab has.
    let wanted: Vec<(String, Vec<i32>)> = match &r.topics {
        None => lab
            .topics()
            .values()
            .map(|t| (t.name.clone(), (0..t.partitions.len() as i32).collect()))
            .collect(),
        Some(topics) => topics
            .iter()
            .map(|t| (t.topic.0.to_string(), t.partitions.clone()))
            .collect(),
    };
    let topics = wanted
        .into_iter()
        .filter_map(|(topic, partitions)| {
            let described: Vec<DescribeLogDirsPartition> = partitions
                .into_iter()
                .filter_map(|p| {
                    let log = lab.partition_log(&TopicPartition::new(topic.clone(), p)).ok()?;
                    let size: usize = log.segments().iter().map(|s| s.bytes).sum();
                    Some(
                        DescribeLogDirsPartition::default()
                            .with_partition_index(p)
                            .with_partition_size(size as i64)
                            .with_offset_lag(0)
                            .with_is_future_key(false),
                    )
                })
                .collect();
            (!described.is_empty()).then(|| {
                DescribeLogDirsTopic::default()
                    .with_name(TopicName(str_bytes(&topic)))
                    .with_partitions(described)
            })
        })
        .collect();
    let dir = log_dir(&s);
    DescribeLogDirsResponse::default().with_results(vec![DescribeLogDirsResult::default()
        .with_error_code(NONE)
        .with_log_dir(str_bytes(&dir))
        .with_topics(topics)
        .with_total_bytes(-1)
        .with_usable_bytes(-1)])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::describe_log_dirs_request::DescribableLogDirTopic;

    #[test]
    fn one_log_dir_holds_every_partition_with_its_size() {
        let b = broker();
        let all = handle(&b, &DescribeLogDirsRequest::default().with_topics(None));
        let dir = &all.results[0];
        assert_eq!((dir.error_code, dir.log_dir.as_str()), (NONE, "(memory)"));
        let orders = &dir.topics[0];
        assert_eq!(orders.name.0.as_str(), "orders");
        assert!(
            orders.partitions[0].partition_size > 0,
            "twelve records take bytes"
        );
        let named = handle(
            &b,
            &DescribeLogDirsRequest::default().with_topics(Some(vec![DescribableLogDirTopic::default()
                .with_topic(TopicName(name("nothing")))
                .with_partitions(vec![0])])),
        );
        assert!(
            named.results[0].topics.is_empty(),
            "a topic the lab lacks is left out"
        );
    }
}
