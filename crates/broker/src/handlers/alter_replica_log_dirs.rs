//! AlterReplicaLogDirs (`kafka-reassign-partitions.sh` with log directories): the lab has one log
//! directory (DescribeLogDirs names it), so a replica can only "move" to where it is; any other
//! path is LOG_DIR_NOT_FOUND, as Kafka answers for a directory not in its `log.dirs`.

use crate::broker::Broker;
use crate::handlers::describe_log_dirs::log_dir;
use offsetlab_engine::record::TopicPartition;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::alter_replica_log_dirs_response::{
    AlterReplicaLogDirPartitionResult, AlterReplicaLogDirTopicResult,
};
use offsetlab_wire::kafka_protocol::messages::{AlterReplicaLogDirsRequest, AlterReplicaLogDirsResponse};

pub(crate) fn handle(broker: &Broker, r: &AlterReplicaLogDirsRequest) -> AlterReplicaLogDirsResponse {
    let s = broker.lab.lock();
    let ours = log_dir(&s);
    let results = r
        .dirs
        .iter()
        .flat_map(|d| {
            let here = d.path.as_str() == ours;
            let s = &s;
            d.topics.iter().map(move |t| {
                AlterReplicaLogDirTopicResult::default()
                    .with_topic_name(t.name.clone())
                    .with_partitions(
                        t.partitions
                            .iter()
                            .map(|&p| {
                                let known = s
                                    .lab()
                                    .partition_log(&TopicPartition::new(t.name.0.to_string(), p))
                                    .is_ok();
                                let code = match (here, known) {
                                    (false, _) => LOG_DIR_NOT_FOUND,
                                    (true, false) => UNKNOWN_TOPIC_OR_PARTITION,
                                    (true, true) => NONE,
                                };
                                AlterReplicaLogDirPartitionResult::default()
                                    .with_partition_index(p)
                                    .with_error_code(code)
                            })
                            .collect(),
                    )
            })
        })
        .collect();
    AlterReplicaLogDirsResponse::default().with_results(results)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::alter_replica_log_dirs_request::{
        AlterReplicaLogDir, AlterReplicaLogDirTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::TopicName;

    #[test]
    fn a_replica_stays_in_the_one_log_directory() {
        let b = broker();
        let ask = |path: &str| {
            handle(
                &b,
                &AlterReplicaLogDirsRequest::default().with_dirs(vec![AlterReplicaLogDir::default()
                    .with_path(name(path))
                    .with_topics(vec![AlterReplicaLogDirTopic::default()
                        .with_name(TopicName(name("orders")))
                        .with_partitions(vec![0, 9])])]),
            )
            .results[0]
                .partitions
                .iter()
                .map(|p| p.error_code)
                .collect::<Vec<_>>()
        };
        assert_eq!(ask("/elsewhere"), [LOG_DIR_NOT_FOUND, LOG_DIR_NOT_FOUND]);
        assert_eq!(ask("(memory)"), [NONE, UNKNOWN_TOPIC_OR_PARTITION]);
    }
}
