//! DeleteRecords: the log start offset moved up, the segments before it deleted.

use crate::broker::Broker;
use crate::change;
use offsetlab_engine::record::TopicPartition;
use offsetlab_scenario::command::{Command, DeleteRecords};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::delete_records_response::{
    DeleteRecordsPartitionResult, DeleteRecordsTopicResult,
};
use offsetlab_wire::kafka_protocol::messages::{DeleteRecordsRequest, DeleteRecordsResponse};

/// DeleteRecords: each partition's request becomes a `delete-records` command (`-1` is the high
/// watermark, as in Kafka); the answer is the new log start offset.
pub(crate) fn handle(broker: &Broker, r: &DeleteRecordsRequest) -> DeleteRecordsResponse {
    let lab = &broker.lab;
    let s = lab.lock_for_change();
    let mut commands = Vec::new();
    let answers: Vec<Vec<(i32, Result<i64, i16>)>> = r
        .topics
        .iter()
        .map(|t| {
            let topic = t.name.0.to_string();
            t.partitions
                .iter()
                .map(|p| {
                    let tp = TopicPartition::new(topic.clone(), p.partition_index);
                    let Ok(log) = s.lab().partition_log(&tp) else {
                        return (p.partition_index, Err(UNKNOWN_TOPIC_OR_PARTITION));
                    };
                    let (start, end) = (log.log_start_offset(), log.log_end_offset());
                    let before = if p.offset == -1 { end } else { p.offset };
                    if !(0..=end).contains(&before) {
                        return (p.partition_index, Err(OFFSET_OUT_OF_RANGE));
                    }
                    if before > start {
                        commands.push(Command::DeleteRecords(DeleteRecords {
                            topic: topic.clone(),
                            partition: p.partition_index,
                            before,
                        }));
                    }
                    (p.partition_index, Ok(before.max(start)))
                })
                .collect()
        })
        .collect();
    let outcome = change::apply_commands(lab, s, commands);
    DeleteRecordsResponse::default().with_topics(
        r.topics
            .iter()
            .zip(answers)
            .map(|(t, partitions)| {
                DeleteRecordsTopicResult::default()
                    .with_name(t.name.clone())
                    .with_partitions(
                        partitions
                            .into_iter()
                            .map(|(index, answer)| {
                                let base =
                                    DeleteRecordsPartitionResult::default().with_partition_index(index);
                                match answer {
                                    Ok(low) if outcome.is_ok() => {
                                        base.with_error_code(NONE).with_low_watermark(low)
                                    }
                                    Ok(_) => base
                                        .with_error_code(
                                            outcome
                                                .as_ref()
                                                .err()
                                                .map_or(UNKNOWN_SERVER_ERROR, change::Failure::code),
                                        )
                                        .with_low_watermark(-1),
                                    Err(code) => base.with_error_code(code).with_low_watermark(-1),
                                }
                            })
                            .collect(),
                    )
            })
            .collect(),
    )
}
