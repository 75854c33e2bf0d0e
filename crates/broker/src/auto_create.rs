//! Topics created on first use, as a broker with `auto.create.topics.enable=true` (Kafka's
//! default) does, with one partition (`num.partitions=1`): by a Produce to an unknown topic, or
//! by a Metadata request that allows it. `--auto-create-topics false` turns that off.

use crate::change;
use offsetlab_wire::error::*;

use offsetlab_engine::log::TopicConfig;
use offsetlab_lab::session::Session;
use offsetlab_lab::LabHandle;
use offsetlab_scenario::command::{Command, CreateTopic};
use std::collections::BTreeMap;

/// A name a client may create a topic under: Kafka's legal topic names, but not one of its
/// internal topics.
pub(crate) fn creatable(name: &str) -> bool {
    offsetlab_engine::names::topic_name_problem(name).is_none()
        && !offsetlab_engine::names::is_internal_topic(name)
}

/// `topic NAME` commands (one partition, Kafka's defaults) for the unknown topics among
/// `names` that may be created, and the names that may not, each with the code a Produce gets:
/// INVALID_TOPIC_EXCEPTION for an internal topic, UNKNOWN_TOPIC_OR_PARTITION for a name no
/// topic can have (Kafka's Produce does not judge names: it finds no such topic).
pub(crate) fn creations(s: &Session, names: &[String]) -> (Vec<CreateTopic>, BTreeMap<String, i16>) {
    let mut creating: Vec<CreateTopic> = Vec::new();
    let mut refused = BTreeMap::new();
    for name in names {
        if s.lab().topic(name).is_ok() || creating.iter().any(|c| &c.name == name) {
            continue;
        }
        if creatable(name) {
            creating.push(CreateTopic {
                name: name.clone(),
                config: TopicConfig::default(),
            });
        } else if offsetlab_engine::names::is_internal_topic(name) {
            refused.insert(name.clone(), INVALID_TOPIC_EXCEPTION);
        } else {
            refused.insert(name.clone(), UNKNOWN_TOPIC_OR_PARTITION);
        }
    }
    (creating, refused)
}

/// Creates the unknown topics among `names` (a Metadata request that allows it); the names
/// created.
pub(crate) fn create_topics(lab: &LabHandle, names: &[String]) -> Vec<String> {
    let s = lab.lock();
    let (creating, _) = creations(&s, names);
    let created: Vec<String> = creating.iter().map(|c| c.name.clone()).collect();
    match change::apply_commands(lab, s, creating.into_iter().map(Command::Topic).collect()) {
        Ok(()) => created,
        Err(_) => Vec::new(),
    }
}
