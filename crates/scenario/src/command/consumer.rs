//! `consumer NAME group=G topic=T [commit=STRATEGY] [interval=DUR] [max-poll=N]
//! [sink=append|upsert|transactional|kafka-tx] [reset=earliest|latest|none] [session-timeout=DUR]
//! [max-poll-interval=DUR] [assignor=range|cooperative-sticky] [instance-id=ID] [commit-on-revoke=yes|no] [async-latency=DUR]
//! [isolation=read_uncommitted|read_committed] [sink=kafka-tx output=TOPIC [transaction-timeout=DUR]]
//! [group-protocol=classic|consumer [assignor=uniform|range]]`
//!
//! Starts a consumer process that joins group G. With `group-protocol=consumer` (Kafka 4's
//! consumer group protocol, KIP-848) the coordinator assigns the partitions, so `assignor` names
//! the server-side assignor the member asks for (`group.remote.assignor`: `uniform`, the
//! default, or `range`). The defaults are Kafka's: auto-commit on a
//! 5 s timer, `max.poll.records=500`, `auto.offset.reset=latest`, `session.timeout.ms=45s`,
//! `isolation.level=read_uncommitted`, `transaction.timeout.ms=60s`. With `sink=kafka-tx` the
//! consumer is a read-process-write application: it produces each processed record to `output`
//! inside a Kafka transaction that also carries its consumed offsets.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::{count, duration_ms};
use offsetlab_engine::clock::format_duration;
use offsetlab_engine::consumer::ConsumerConfig;
use offsetlab_engine::group::{GroupProtocol, ServerAssignor};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartConsumer {
    pub config: ConsumerConfig,
}

impl StartConsumer {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let name = args.word("consumer name")?;
        let group = args.required("group")?;
        let topic = args.required("topic")?;
        let mut c = ConsumerConfig::new(&name, &group, &topic);
        if let Some(s) = args.parsed("commit", |v| v.parse())? {
            c.strategy = s;
        }
        if let Some(ms) = args.parsed("interval", positive_duration)? {
            c.auto_commit_interval_ms = ms;
        }
        if let Some(n) = args.parsed("max-poll", |v| count(v, 1_000_000))? {
            if n == 0 {
                return Err(ParseError::new("consumer: max-poll must be at least 1"));
            }
            c.max_poll_records = n as usize;
        }
        if let Some(s) = args.parsed("sink", |v| v.parse())? {
            c.sink = s;
        }
        if let Some(r) = args.parsed("reset", |v| v.parse())? {
            c.auto_offset_reset = r;
        }
        if let Some(ms) = args.parsed("session-timeout", positive_duration)? {
            c.session_timeout_ms = ms;
        }
        if let Some(ms) = args.parsed("max-poll-interval", positive_duration)? {
            c.max_poll_interval_ms = ms;
        }
        if let Some(p) = args.parsed("group-protocol", |v| v.parse())? {
            c.group_protocol = p;
        }
        if c.group_protocol == GroupProtocol::Consumer {
            if let Some(a) = args.parsed("assignor", |v| {
                v.parse().map_err(|e| {
                    format!("{e}: with group-protocol=consumer the coordinator assigns, with a server-side assignor")
                })
            })? {
                c.remote_assignor = a;
            }
        } else if let Some(a) = args.parsed("assignor", |v| {
            v.parse().map_err(|e| {
                if v.parse::<ServerAssignor>().is_ok() {
                    format!(
                        "{v} is a server-side assignor of the consumer protocol: add group-protocol=consumer"
                    )
                } else {
                    e
                }
            })
        })? {
            c.assignor = a;
        }
        if let Some(id) = args.option("instance-id") {
            if id.is_empty() {
                return Err(ParseError::new("consumer: instance-id must not be empty"));
            }
            c.group_instance_id = Some(id);
        }
        if let Some(v) = args.parsed("commit-on-revoke", |v| match v {
            "yes" => Ok(true),
            "no" => Ok(false),
            _ => Err("expected yes or no".to_string()),
        })? {
            c.commit_on_revoke = v;
        }
        if let Some(ms) = args.parsed("async-latency", duration_ms)? {
            c.async_commit_latency_ms = ms;
        }
        match args.parsed("isolation", |v| v.parse())? {
            Some(i) => c.isolation = i,
            // Exactly-once needs the input read with read_committed (as Kafka Streams does):
            // otherwise aborted upstream output would be processed and committed.
            None if c.sink == offsetlab_engine::sink::SinkKind::KafkaTx => {
                c.isolation = offsetlab_engine::txn::IsolationLevel::ReadCommitted;
            }
            None => {}
        }
        if let Some(out) = args.option("output") {
            c.output = Some(out);
        }
        if let Some(ms) = args.parsed("transaction-timeout", positive_duration)? {
            c.transaction_timeout_ms = ms;
        }
        Ok(Self { config: c })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.add_consumer(self.config.clone())
    }
}

fn positive_duration(v: &str) -> Result<i64, String> {
    let ms = duration_ms(v)?;
    if ms == 0 {
        return Err("must be longer than 0ms".into());
    }
    Ok(ms)
}

impl fmt::Display for StartConsumer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let c = &self.config;
        let d = ConsumerConfig::new(&c.name, &c.group, &c.topic);
        write!(
            f,
            "consumer {} group={} topic={} commit={} interval={} max-poll={} sink={} reset={}",
            Quoted(&c.name),
            Quoted(&c.group),
            Quoted(&c.topic),
            c.strategy,
            format_duration(c.auto_commit_interval_ms),
            c.max_poll_records,
            c.sink,
            c.auto_offset_reset
        )?;
        if c.session_timeout_ms != d.session_timeout_ms {
            write!(f, " session-timeout={}", format_duration(c.session_timeout_ms))?;
        }
        if c.max_poll_interval_ms != d.max_poll_interval_ms {
            write!(
                f,
                " max-poll-interval={}",
                format_duration(c.max_poll_interval_ms)
            )?;
        }
        if c.group_protocol == GroupProtocol::Consumer {
            write!(f, " group-protocol={}", c.group_protocol)?;
            if c.remote_assignor != d.remote_assignor {
                write!(f, " assignor={}", c.remote_assignor)?;
            }
        } else if c.assignor != d.assignor {
            write!(f, " assignor={}", c.assignor)?;
        }
        if let Some(id) = &c.group_instance_id {
            write!(f, " instance-id={}", Quoted(id))?;
        }
        if !c.commit_on_revoke {
            write!(f, " commit-on-revoke=no")?;
        }
        if c.async_commit_latency_ms != d.async_commit_latency_ms {
            write!(f, " async-latency={}", format_duration(c.async_commit_latency_ms))?;
        }
        // What `parse` assumes without the option: read_committed for a kafka-tx consumer.
        let default_isolation = if c.sink == offsetlab_engine::sink::SinkKind::KafkaTx {
            offsetlab_engine::txn::IsolationLevel::ReadCommitted
        } else {
            d.isolation
        };
        if c.isolation != default_isolation {
            write!(f, " isolation={}", c.isolation)?;
        }
        if let Some(out) = &c.output {
            write!(f, " output={}", Quoted(out))?;
        }
        if c.transaction_timeout_ms != d.transaction_timeout_ms {
            write!(
                f,
                " transaction-timeout={}",
                format_duration(c.transaction_timeout_ms)
            )?;
        }
        Ok(())
    }
}
