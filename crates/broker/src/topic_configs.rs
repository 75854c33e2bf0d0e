//! Every topic config Apache Kafka 4.4 describes, as a one-broker Kafka describes it: the ones the
//! lab models carry the topic's own value; the rest carry Kafka's default, which is what the lab
//! does about them (no tiered storage, no throttles, no flush interval, no preallocation): a
//! client may set one only to that default (CreateTopics, IncrementalAlterConfigs,
//! AlterConfigs), since the lab would not honour another value. None is read-only, as in
//! Kafka's answer: a refusal says why.
//! The table was read off a Kafka 4.4 broker's DescribeConfigs answer (the conformance test
//! compares it with one again).

use offsetlab_engine::log::TopicConfig;

/// `ConfigType` as the protocol numbers it.
pub(crate) const TYPE_BOOLEAN: i8 = 1;
pub(crate) const TYPE_STRING: i8 = 2;
pub(crate) const TYPE_INT: i8 = 3;
pub(crate) const TYPE_SHORT: i8 = 4;
pub(crate) const TYPE_LONG: i8 = 5;
pub(crate) const TYPE_DOUBLE: i8 = 6;
pub(crate) const TYPE_LIST: i8 = 7;

/// `ConfigSource`: set on the topic (or group), the cluster's dynamic default, the broker's
/// static file, Kafka's built-in default, a group's own.
pub(crate) const SOURCE_TOPIC: i8 = 1;
pub(crate) const SOURCE_DYNAMIC_DEFAULT_BROKER: i8 = 3;
pub(crate) const SOURCE_STATIC_BROKER: i8 = 4;
pub(crate) const SOURCE_DEFAULT: i8 = 5;

/// A topic config: its name, type, Kafka's default value, the source that default comes from,
/// and the broker configs it falls back to (name, source, value), as DescribeConfigs lists
/// them as synonyms.
pub(crate) struct KafkaTopicConfig {
    pub(crate) name: &'static str,
    pub(crate) kind: i8,
    pub(crate) default: &'static str,
    pub(crate) default_source: i8,
    pub(crate) synonyms: &'static [(&'static str, i8, &'static str)],
}

const fn c(
    name: &'static str,
    kind: i8,
    default: &'static str,
    synonyms: &'static [(&'static str, i8, &'static str)],
) -> KafkaTopicConfig {
    KafkaTopicConfig {
        name,
        kind,
        default,
        default_source: SOURCE_DEFAULT,
        synonyms,
    }
}

const MAX_LONG: &str = "9223372036854775807";

/// Kafka 4.4's topic configs, in its order (alphabetical).
pub(crate) const TOPIC_CONFIGS: &[KafkaTopicConfig] = &[
    c(
        "cleanup.policy",
        TYPE_LIST,
        "delete",
        &[("log.cleanup.policy", SOURCE_DEFAULT, "delete")],
    ),
    c(
        "compression.gzip.level",
        TYPE_INT,
        "-1",
        &[("compression.gzip.level", SOURCE_DEFAULT, "-1")],
    ),
    c(
        "compression.lz4.level",
        TYPE_INT,
        "9",
        &[("compression.lz4.level", SOURCE_DEFAULT, "9")],
    ),
    c(
        "compression.type",
        TYPE_STRING,
        "producer",
        &[("compression.type", SOURCE_DEFAULT, "producer")],
    ),
    c(
        "compression.zstd.level",
        TYPE_INT,
        "3",
        &[("compression.zstd.level", SOURCE_DEFAULT, "3")],
    ),
    c(
        "delete.retention.ms",
        TYPE_LONG,
        "86400000",
        &[("log.cleaner.delete.retention.ms", SOURCE_DEFAULT, "86400000")],
    ),
    c("errors.deadletterqueue.group.enable", TYPE_BOOLEAN, "false", &[]),
    c(
        "file.delete.delay.ms",
        TYPE_LONG,
        "60000",
        &[("log.segment.delete.delay.ms", SOURCE_DEFAULT, "60000")],
    ),
    c(
        "flush.messages",
        TYPE_LONG,
        MAX_LONG,
        &[("log.flush.interval.messages", SOURCE_DEFAULT, MAX_LONG)],
    ),
    c("flush.ms", TYPE_LONG, MAX_LONG, &[]),
    c("follower.replication.throttled.replicas", TYPE_LIST, "", &[]),
    c(
        "index.interval.bytes",
        TYPE_INT,
        "4096",
        &[("log.index.interval.bytes", SOURCE_DEFAULT, "4096")],
    ),
    c("leader.replication.throttled.replicas", TYPE_LIST, "", &[]),
    c(
        "local.retention.bytes",
        TYPE_LONG,
        "-2",
        &[("log.local.retention.bytes", SOURCE_DEFAULT, "-2")],
    ),
    c(
        "local.retention.ms",
        TYPE_LONG,
        "-2",
        &[("log.local.retention.ms", SOURCE_DEFAULT, "-2")],
    ),
    c(
        "max.compaction.lag.ms",
        TYPE_LONG,
        MAX_LONG,
        &[("log.cleaner.max.compaction.lag.ms", SOURCE_DEFAULT, MAX_LONG)],
    ),
    c(
        "max.decompressed.message.bytes",
        TYPE_INT,
        "2147483639",
        &[("max.decompressed.message.bytes", SOURCE_DEFAULT, "2147483639")],
    ),
    c(
        "max.message.bytes",
        TYPE_INT,
        "1048588",
        &[("message.max.bytes", SOURCE_DEFAULT, "1048588")],
    ),
    c(
        "message.timestamp.after.max.ms",
        TYPE_LONG,
        "3600000",
        &[("log.message.timestamp.after.max.ms", SOURCE_DEFAULT, "3600000")],
    ),
    c(
        "message.timestamp.before.max.ms",
        TYPE_LONG,
        MAX_LONG,
        &[("log.message.timestamp.before.max.ms", SOURCE_DEFAULT, MAX_LONG)],
    ),
    c(
        "message.timestamp.type",
        TYPE_STRING,
        "CreateTime",
        &[("log.message.timestamp.type", SOURCE_DEFAULT, "CreateTime")],
    ),
    c(
        "min.cleanable.dirty.ratio",
        TYPE_DOUBLE,
        "0.5",
        &[("log.cleaner.min.cleanable.ratio", SOURCE_DEFAULT, "0.5")],
    ),
    c(
        "min.compaction.lag.ms",
        TYPE_LONG,
        "0",
        &[("log.cleaner.min.compaction.lag.ms", SOURCE_DEFAULT, "0")],
    ),
    // Kafka 4 formats a cluster with min.insync.replicas as a cluster-wide dynamic default
    // (KIP-966's eligible leader replicas need one): its default comes from there.
    KafkaTopicConfig {
        name: "min.insync.replicas",
        kind: TYPE_INT,
        default: "1",
        default_source: SOURCE_DYNAMIC_DEFAULT_BROKER,
        synonyms: &[
            ("min.insync.replicas", SOURCE_DYNAMIC_DEFAULT_BROKER, "1"),
            ("min.insync.replicas", SOURCE_DEFAULT, "1"),
        ],
    },
    c(
        "preallocate",
        TYPE_BOOLEAN,
        "false",
        &[("log.preallocate", SOURCE_DEFAULT, "false")],
    ),
    c(
        "remote.copy.lag.bytes",
        TYPE_LONG,
        "-1",
        &[("log.remote.copy.lag.bytes", SOURCE_DEFAULT, "-1")],
    ),
    c(
        "remote.copy.lag.ms",
        TYPE_LONG,
        "0",
        &[("log.remote.copy.lag.ms", SOURCE_DEFAULT, "0")],
    ),
    c("remote.log.copy.disable", TYPE_BOOLEAN, "false", &[]),
    c("remote.log.delete.on.disable", TYPE_BOOLEAN, "false", &[]),
    c("remote.storage.enable", TYPE_BOOLEAN, "false", &[]),
    c(
        "retention.bytes",
        TYPE_LONG,
        "-1",
        &[("log.retention.bytes", SOURCE_DEFAULT, "-1")],
    ),
    c("retention.ms", TYPE_LONG, "604800000", &[]),
    c(
        "segment.bytes",
        TYPE_INT,
        "1073741824",
        &[("log.segment.bytes", SOURCE_DEFAULT, "1073741824")],
    ),
    c(
        "segment.index.bytes",
        TYPE_INT,
        "10485760",
        &[("log.index.size.max.bytes", SOURCE_DEFAULT, "10485760")],
    ),
    c("segment.jitter.ms", TYPE_LONG, "0", &[]),
    c("segment.ms", TYPE_LONG, "604800000", &[]),
    c(
        "unclean.leader.election.enable",
        TYPE_BOOLEAN,
        "false",
        &[("unclean.leader.election.enable", SOURCE_DEFAULT, "false")],
    ),
];

pub(crate) fn kafka_topic_config(name: &str) -> Option<&'static KafkaTopicConfig> {
    TOPIC_CONFIGS.iter().find(|c| c.name == name)
}

/// One described topic config.
pub(crate) struct Described {
    pub(crate) name: &'static str,
    pub(crate) value: String,
    pub(crate) source: i8,
    pub(crate) kind: i8,
    /// The topic's own value first (when it has one), then the broker configs behind it.
    pub(crate) synonyms: Vec<(String, i8, String)>,
}

/// Every topic config of a topic configured as `c`, in Kafka's order.
pub(crate) fn describe(c: &TopicConfig) -> Vec<Described> {
    let modelled = c.kafka_configs();
    let defaults = TopicConfig::default().kafka_configs();
    TOPIC_CONFIGS
        .iter()
        .map(|k| {
            let own = modelled
                .iter()
                .find(|(n, _)| *n == k.name)
                .map(|(_, v)| v.clone());
            let default = defaults
                .iter()
                .find(|(n, _)| *n == k.name)
                .map(|(_, v)| v.clone());
            let set = own.is_some() && own != default;
            let mut synonyms: Vec<(String, i8, String)> = Vec::new();
            let value = own.unwrap_or_else(|| k.default.to_string());
            if set {
                synonyms.push((k.name.to_string(), SOURCE_TOPIC, value.clone()));
            }
            synonyms.extend(
                k.synonyms
                    .iter()
                    .map(|(n, s, v)| (n.to_string(), *s, v.to_string())),
            );
            Described {
                name: k.name,
                value,
                source: if set { SOURCE_TOPIC } else { k.default_source },
                kind: k.kind,
                synonyms,
            }
        })
        .collect()
}

/// A config a client sets that the lab does not model: `Ok` when the value is Kafka's default
/// (nothing to do), else why not.
pub(crate) fn unmodelled(name: &str, value: &str) -> Result<(), String> {
    match kafka_topic_config(name) {
        Some(k) if k.default == value => Ok(()),
        Some(k) => Err(format!(
            "the lab does not model {name} (it behaves as Kafka's default, {}): it can only be set to that",
            if k.default.is_empty() { "empty" } else { k.default }
        )),
        None => Err(format!("unknown topic config name: {name}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_modelled_config_is_one_of_kafkas_and_the_defaults_agree() {
        for (name, value) in TopicConfig::default().kafka_configs() {
            let k = kafka_topic_config(name).unwrap_or_else(|| panic!("{name} is not a Kafka topic config"));
            assert_eq!(k.default, value, "{name}");
        }
        let names: Vec<&str> = TOPIC_CONFIGS.iter().map(|c| c.name).collect();
        let mut sorted = names.clone();
        sorted.sort_unstable();
        assert_eq!(names, sorted, "Kafka's order");
    }

    #[test]
    fn a_topic_describes_all_of_kafkas_configs_its_own_first_among_synonyms() {
        let mut c = TopicConfig::default();
        crate::handlers::create_topics::set_config(&mut c, "retention.ms", "3600000").expect("set");
        let d = describe(&c);
        assert_eq!(d.len(), TOPIC_CONFIGS.len());
        let retention = d.iter().find(|d| d.name == "retention.ms").expect("retention.ms");
        assert_eq!(
            (retention.value.as_str(), retention.source),
            ("3600000", SOURCE_TOPIC)
        );
        assert_eq!(
            retention.synonyms[0],
            ("retention.ms".into(), SOURCE_TOPIC, "3600000".into())
        );
        let jitter = d
            .iter()
            .find(|d| d.name == "segment.jitter.ms")
            .expect("segment.jitter.ms");
        assert_eq!((jitter.value.as_str(), jitter.source), ("0", SOURCE_DEFAULT));
        assert!(unmodelled("segment.jitter.ms", "0").is_ok());
        assert!(unmodelled("segment.jitter.ms", "5").is_err());
        assert!(unmodelled("no.such", "0").is_err());
    }
}
