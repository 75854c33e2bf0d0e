//! CreatePartitions (`kafka-topics.sh --alter --partitions N`, `AdminClient.createPartitions`):
//! each topic grows to its new count on its own, as Kafka answers topics one by one — one
//! `add-partitions` line each, applied by itself, the lab saved once for the request. The engine
//! holds the rules (never fewer partitions, never an internal topic); `validate_only` asks them
//! and changes nothing. One broker: a manual assignment may only name it (broker 0), one replica.

use crate::broker::Broker;
use crate::change::{self, code, Refusal};
use crate::str_bytes;
use offsetlab_engine::LabError;
use offsetlab_scenario::command::{AddPartitions, Command};
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::create_partitions_response::CreatePartitionsTopicResult;
use offsetlab_wire::kafka_protocol::messages::{CreatePartitionsRequest, CreatePartitionsResponse};

/// Each topic's error, or its `add-partitions` line.
type Planned = Result<AddPartitions, Refusal>;

pub(crate) fn handle(broker: &Broker, r: &CreatePartitionsRequest) -> CreatePartitionsResponse {
    let s = broker.lab.lock_for_change();
    let planned: Vec<Planned> = r
        .topics
        .iter()
        .map(|t| {
            let topic = t.name.0.to_string();
            let one_broker =
                |ids: &[offsetlab_wire::kafka_protocol::messages::BrokerId]| ids.len() == 1 && ids[0].0 == 0;
            if t.assignments
                .as_ref()
                .is_some_and(|a| !a.iter().all(|a| one_broker(&a.broker_ids)))
            {
                return Err((
                    INVALID_REPLICA_ASSIGNMENT,
                    "the lab is one broker (id 0) with one replica per partition".to_string(),
                ));
            }
            s.lab()
                .check_add_partitions(&topic, t.count)
                .map(|_| AddPartitions {
                    topic,
                    count: t.count,
                })
                .map_err(|e| refusal(&e))
        })
        .collect();
    let planned = planned
        .into_iter()
        .map(|p| p.map(|a| Some(Command::AddPartitions(a))))
        .collect();
    let outcomes = change::apply_planned(&broker.lab, s, planned, r.validate_only);
    CreatePartitionsResponse::default().with_results(
        r.topics
            .iter()
            .zip(outcomes)
            .map(|(t, outcome)| {
                let result = CreatePartitionsTopicResult::default().with_name(t.name.clone());
                match outcome {
                    Ok(()) => result.with_error_code(NONE),
                    Err((code, message)) => result
                        .with_error_code(code)
                        .with_error_message(Some(str_bytes(&message))),
                }
            })
            .collect(),
    )
}

/// The engine's refusal as Kafka's error code and message.
fn refusal(e: &LabError) -> Refusal {
    let code = match e {
        LabError::InvalidPartitions(_) => INVALID_PARTITIONS,
        e => code(e),
    };
    (code, e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};
    use offsetlab_wire::kafka_protocol::messages::create_partitions_request::CreatePartitionsTopic;
    use offsetlab_wire::kafka_protocol::messages::TopicName;

    fn grow(topic: &str, count: i32, validate_only: bool) -> CreatePartitionsRequest {
        CreatePartitionsRequest::default()
            .with_validate_only(validate_only)
            .with_topics(vec![CreatePartitionsTopic::default()
                .with_name(TopicName(name(topic)))
                .with_count(count)])
    }

    fn partitions(b: &Broker, topic: &str) -> usize {
        b.lab.lock().lab().topic(topic).map_or(0, |t| t.partitions.len())
    }

    #[test]
    fn a_topic_grows_and_never_shrinks() {
        let b = broker();
        let checked = handle(&b, &grow("orders", 3, true));
        assert_eq!(checked.results[0].error_code, NONE);
        assert_eq!(partitions(&b, "orders"), 1, "validate_only changes nothing");
        assert_eq!(handle(&b, &grow("orders", 3, false)).results[0].error_code, NONE);
        assert_eq!(partitions(&b, "orders"), 3);
        for (count, code) in [(3, INVALID_PARTITIONS), (2, INVALID_PARTITIONS)] {
            assert_eq!(
                handle(&b, &grow("orders", count, false)).results[0].error_code,
                code
            );
        }
        assert_eq!(
            handle(&b, &grow("nothing", 2, false)).results[0].error_code,
            UNKNOWN_TOPIC_OR_PARTITION
        );
        assert_eq!(
            handle(&b, &grow("__consumer_offsets", 60, false)).results[0].error_code,
            INVALID_TOPIC_EXCEPTION
        );
        assert_eq!(partitions(&b, "orders"), 3);
    }
}
