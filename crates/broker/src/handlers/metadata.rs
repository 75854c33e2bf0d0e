//! Metadata: the one broker (node 0, the leader of every partition) and the topics asked for —
//! created first when the request allows it and `--auto-create-topics` is on.
//!
//! Answered from the lab's published view ([`offsetlab_lab::read_view`]), without its lock —
//! unless the request may create a topic, which is a change: [`handle`] makes it first.

use crate::broker::{Broker, LEADER_EPOCH, NODE};
use crate::str_bytes;
use offsetlab_engine::offsets::CONSUMER_OFFSETS_TOPIC;
use offsetlab_lab::read_view::ReadView;
use offsetlab_wire::error::*;
use offsetlab_wire::kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use offsetlab_wire::kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{BrokerId, MetadataRequest, MetadataResponse, TopicName};
use offsetlab_wire::Uuid;

/// The answer, after creating the topics the request may create: blocking, when it creates
/// ([`may_create`]), since that waits for the lab's lock.
pub(crate) fn handle(broker: &Broker, r: &MetadataRequest, version: i16) -> MetadataResponse {
    let just_created = if refuses_ids(r, version) {
        Vec::new()
    } else {
        auto_create(broker, r, version)
    };
    answer(broker, r, version, &just_created)
}

/// Whether the request may create a topic: one it names by name that the lab's view does not
/// hold, when the request allows it and `--auto-create-topics` is on. Any other is answered from
/// the view alone ([`answer`]).
pub(crate) fn may_create(broker: &Broker, r: &MetadataRequest, version: i16) -> bool {
    if !allows_creation(broker, r, version) || refuses_ids(r, version) {
        return false;
    }
    let view = broker.lab.view();
    r.topics
        .iter()
        .flatten()
        .filter(|t| !nameless(t))
        .filter_map(|t| t.name.as_ref())
        .any(|n| view.topic(n.0.as_str()).is_none() && n.0.as_str() != CONSUMER_OFFSETS_TOPIC)
}

/// Topics by id arrived with v12 (KIP-516): Kafka refuses a request naming one before, whole.
fn refuses_ids(r: &MetadataRequest, version: i16) -> bool {
    version < 12
        && r.topics
            .iter()
            .flatten()
            .any(|t| nameless(t) && !t.topic_id.is_nil())
}

/// The answer from the lab's published view; `just_created` are the topics this request
/// created, which it does not list yet.
pub(crate) fn answer(
    broker: &Broker,
    r: &MetadataRequest,
    version: i16,
    just_created: &[String],
) -> MetadataResponse {
    if refuses_ids(r, version) {
        return refused_by_id(r);
    }
    let advertised = broker.advertised;
    let view = broker.lab.view();
    let lab = &*view;
    // Every topic, `__consumer_offsets` among them: Kafka lists its internal topic (marked
    // internal), and any consumer may read it.
    let every = || {
        let mut names: Vec<String> = lab.topics().map(|t| t.name.clone()).collect();
        names.push(CONSUMER_OFFSETS_TOPIC.to_string());
        names
    };
    // From v10 a topic may be asked for by its id alone (KIP-516): an id the lab never gave out
    // is UNKNOWN_TOPIC_ID.
    let mut unknown_ids = Vec::new();
    let names: Vec<String> = match &r.topics {
        // Null (or, before v1, empty) means every topic.
        None => every(),
        Some(ts) if ts.is_empty() && version == 0 => every(),
        Some(ts) => ts
            .iter()
            .filter_map(|t| match &t.name {
                Some(n) if !nameless(t) => Some(n.0.to_string()),
                _ => {
                    let found = lab.topic_named_by_id(t.topic_id.as_bytes()).map(str::to_string);
                    if found.is_none() {
                        unknown_ids.push(t.topic_id);
                    }
                    found
                }
            })
            .collect(),
    };
    let topic_ops =
        crate::authorized::if_asked(r.include_topic_authorized_operations, crate::authorized::TOPIC);
    let mut topics: Vec<MetadataResponseTopic> = names
        .iter()
        .map(|name| {
            if just_created.contains(name) {
                return MetadataResponseTopic::default()
                    .with_name(Some(TopicName(str_bytes(name))))
                    .with_error_code(UNKNOWN_TOPIC_OR_PARTITION)
                    .with_topic_authorized_operations(topic_ops);
            }
            topic_answer(lab, name, topic_ops)
        })
        .collect();
    topics.extend(unknown_ids.into_iter().map(|id| {
        MetadataResponseTopic::default()
            .with_name(None)
            .with_topic_id(id)
            .with_error_code(UNKNOWN_TOPIC_ID)
    }));
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(NODE))
            .with_host(str_bytes(&advertised.ip().to_string()))
            .with_port(i32::from(advertised.port()))])
        .with_cluster_id(Some(str_bytes(crate::broker::CLUSTER_ID)))
        .with_controller_id(BrokerId(NODE))
        .with_cluster_authorized_operations(crate::authorized::if_asked(
            r.include_cluster_authorized_operations,
            crate::authorized::CLUSTER,
        ))
        .with_topics(topics)
}

/// Topics by id arrived with v12 (KIP-516): Kafka refuses a request naming one before, whole.
fn refused_by_id(r: &MetadataRequest) -> MetadataResponse {
    MetadataResponse::default()
        .with_cluster_id(None)
        .with_controller_id(BrokerId(-1))
        .with_topics(
            r.topics
                .iter()
                .flatten()
                .map(|t| {
                    MetadataResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_topic_id(t.topic_id)
                        .with_error_code(INVALID_REQUEST)
                })
                .collect(),
        )
}

/// The topics this request creates, with `--auto-create-topics`. Before v4 a Metadata request
/// always allowed creation; since, the client says. A topic it creates is not in this answer
/// (UNKNOWN_TOPIC_OR_PARTITION), as Kafka's creation reaches the controller after the answer:
/// the client asks again.
fn auto_create(broker: &Broker, r: &MetadataRequest, version: i16) -> Vec<String> {
    if !allows_creation(broker, r, version) {
        return Vec::new();
    }
    let wanted: Vec<String> = r
        .topics
        .iter()
        .flatten()
        .filter(|t| !nameless(t))
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .collect();
    if wanted.is_empty() {
        return Vec::new();
    }
    crate::auto_create::create_topics(&broker.lab, &wanted)
}

/// Whether the request may create topics: before v4 a Metadata request always allowed it; since,
/// the client says — and `--auto-create-topics` must be on.
fn allows_creation(broker: &Broker, r: &MetadataRequest, version: i16) -> bool {
    broker.config.auto_create_topics && (version < 4 || r.allow_auto_topic_creation)
}

/// A topic asked for by id has no name (or an empty one).
fn nameless(t: &MetadataRequestTopic) -> bool {
    t.name.as_ref().is_none_or(|n| n.0.is_empty())
}

/// One topic of the answer by name: its partitions, all led by this node, or why it has none.
fn topic_answer(lab: &ReadView, name: &str, topic_ops: i32) -> MetadataResponseTopic {
    match lab
        .topic(name)
        .map(|t| t.partitions().len())
        .or_else(|| (name == CONSUMER_OFFSETS_TOPIC).then_some(1))
    {
        Some(partitions) => MetadataResponseTopic::default()
            .with_name(Some(TopicName(str_bytes(name))))
            .with_topic_id(Uuid::from_bytes(lab.topic_id_of(name).unwrap_or_default()))
            .with_error_code(NONE)
            .with_is_internal(name == CONSUMER_OFFSETS_TOPIC)
            .with_topic_authorized_operations(topic_ops)
            .with_partitions(
                (0..partitions as i32)
                    .map(|p| {
                        MetadataResponsePartition::default()
                            .with_partition_index(p)
                            .with_leader_id(BrokerId(NODE))
                            .with_leader_epoch(LEADER_EPOCH)
                            .with_replica_nodes(vec![BrokerId(NODE)])
                            .with_isr_nodes(vec![BrokerId(NODE)])
                    })
                    .collect(),
            ),
        // A name no client may use (an internal topic, illegal characters) is an error a
        // client gives up on at once; an unknown one it waits for, as topics appear.
        None => MetadataResponseTopic::default()
            .with_name(Some(TopicName(str_bytes(name))))
            .with_topic_authorized_operations(topic_ops)
            .with_error_code(if crate::auto_create::creatable(name) {
                UNKNOWN_TOPIC_OR_PARTITION
            } else {
                INVALID_TOPIC_EXCEPTION
            }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{broker, name};

    fn asking(topics: &[&str]) -> MetadataRequest {
        MetadataRequest::default().with_topics(Some(
            topics
                .iter()
                .map(|t| MetadataRequestTopic::default().with_name(Some(TopicName(name(t)))))
                .collect(),
        ))
    }

    #[test]
    fn one_broker_leads_every_partition_and_names_are_judged() {
        let mut b = broker();
        b.config.auto_create_topics = false;
        let r = handle(&b, &asking(&["orders", "later", "bad name"]), 9);
        assert_eq!(r.brokers.len(), 1);
        assert_eq!(
            (r.brokers[0].host.as_str(), r.brokers[0].port),
            ("127.0.0.1", 9092)
        );
        let codes: Vec<i16> = r.topics.iter().map(|t| t.error_code).collect();
        assert_eq!(
            codes,
            vec![NONE, UNKNOWN_TOPIC_OR_PARTITION, INVALID_TOPIC_EXCEPTION]
        );
        assert_eq!(r.topics[0].partitions[0].leader_id, BrokerId(NODE));
    }

    /// Metadata v10+ gives every topic its id and finds a topic by id alone; an unknown id is
    /// UNKNOWN_TOPIC_ID.
    #[test]
    fn topics_have_ids_and_are_found_by_them() {
        let b = broker();
        let all = handle(&b, &MetadataRequest::default().with_topics(None), 12);
        let orders = all
            .topics
            .iter()
            .find(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "orders"))
            .expect("orders");
        assert!(!orders.topic_id.is_nil());
        let offsets = all
            .topics
            .iter()
            .find(|t| t.is_internal)
            .expect("__consumer_offsets");
        assert!(!offsets.topic_id.is_nil() && offsets.topic_id != orders.topic_id);
        let ask = |id: offsetlab_wire::Uuid| {
            handle(
                &b,
                &MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default()
                    .with_name(None)
                    .with_topic_id(id)])),
                12,
            )
        };
        let found = ask(orders.topic_id);
        assert_eq!(
            found.topics[0].name.as_ref().map(|n| n.0.as_str()),
            Some("orders")
        );
        let unknown = ask(offsetlab_wire::Uuid::from_bytes([7; 16]));
        assert_eq!(unknown.topics[0].error_code, UNKNOWN_TOPIC_ID);
    }

    #[test]
    fn a_request_that_allows_it_creates_the_topic() {
        let b = broker();
        let r = handle(&b, &asking(&["fresh"]).with_allow_auto_topic_creation(true), 9);
        assert_eq!(
            r.topics[0].error_code, UNKNOWN_TOPIC_OR_PARTITION,
            "created, and in the next answer (as Kafka's controller creates it after answering)"
        );
        let r = handle(&b, &asking(&["fresh"]), 9);
        assert_eq!((r.topics[0].error_code, r.topics[0].partitions.len()), (NONE, 1));
        let r = handle(&b, &asking(&["other"]).with_allow_auto_topic_creation(false), 9);
        assert_eq!(
            r.topics[0].error_code, UNKNOWN_TOPIC_OR_PARTITION,
            "v4+: the client decides"
        );
    }
}
