//! `produce TOPIC [count=N] [key=K] [value=JSON] [partition=P] [batch=N]`
//!
//! Without `key`, writes `count` new orders (`o-1`, `o-2`, … continuing across calls); with
//! `key`, writes further events of that order. `value` replaces the generated order event and
//! must be JSON; `value=null` writes a null value — on a compacted topic, a tombstone. `batch`
//! is how many records each producer batch holds (`batch=1`: a request per record); by default
//! a partition's records go in one.

use crate::error::ParseError;
use crate::token::{Args, Quoted, QuotedJson};
use crate::units::count;
use offsetlab_engine::lab::ProduceSpec;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Produce {
    pub topic: String,
    pub spec: ProduceSpec,
}

impl Produce {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let topic = args.word("topic")?;
        let n = args.parsed("count", |v| count(v, 100_000_000))?.unwrap_or(1);
        if n == 0 {
            return Err(ParseError::new("produce: count must be at least 1"));
        }
        let key = args.option("key");
        if key.as_deref() == Some("") {
            return Err(ParseError::new("produce: key must not be empty"));
        }
        let value = args.parsed("value", |v| {
            serde_json::from_str::<serde_json::Value>(v)
                .map(|_| v.to_string())
                .map_err(|e| format!("not valid JSON ({e})"))
        })?;
        let partition = args.parsed("partition", |v| count(v, 10_000).map(|p| p as i32))?;
        let batch = args.parsed("batch", |v| count(v, 4_096))?;
        if batch == Some(0) {
            return Err(ParseError::new("produce: batch must be at least 1 record"));
        }
        // `value=null` is a null value: a tombstone.
        let tombstone = value.as_deref() == Some("null");
        if tombstone && key.is_none() {
            return Err(ParseError::new(
                "produce: a tombstone (value=null) deletes a key: add key=K",
            ));
        }
        Ok(Self {
            topic,
            spec: ProduceSpec {
                count: n,
                key,
                value: value.filter(|_| !tombstone),
                partition,
                tombstone,
                batch,
            },
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.produce(&self.topic, &self.spec).map(|_| ())
    }
}

impl fmt::Display for Produce {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "produce {} count={}", Quoted(&self.topic), self.spec.count)?;
        if let Some(k) = &self.spec.key {
            write!(f, " key={}", Quoted(k))?;
        }
        if let Some(v) = &self.spec.value {
            write!(f, " value={}", QuotedJson(v))?;
        }
        if self.spec.tombstone {
            write!(f, " value=null")?;
        }
        if let Some(p) = self.spec.partition {
            write!(f, " partition={p}")?;
        }
        if let Some(b) = self.spec.batch {
            write!(f, " batch={b}")?;
        }
        Ok(())
    }
}
