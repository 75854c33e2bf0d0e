//! `send TOPIC partition=P records=JSON [client=ID]`
//!
//! What a Kafka client produced through the listener: records with their own keys and values,
//! appended to one partition as they came. The listener writes one `send` line per partition of
//! a Produce request into the lab's history, so an exported session replays exactly what the
//! client wrote. `records` is a JSON array of `{"key": …, "value": …}` objects whose fields are
//! strings or `null`.

use crate::error::ParseError;
use crate::token::Args;
use crate::units::count;
use offsetlab_engine::lab::{SentRecord, MAX_SEND_RECORDS};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Send {
    pub topic: String,
    pub partition: i32,
    pub records: Vec<SentRecord>,
    /// The producing client's `client.id`, for the narrative.
    pub client: String,
}

/// A `client.id` as one word of a line: letters, digits, `.`, `_` and `-` kept, anything else
/// replaced by `_` (Kafka's own rule for the ids it puts in metric names is the same spirit).
pub fn client_word(id: &str) -> String {
    let w: String = id
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    if w.is_empty() {
        "client".to_string()
    } else {
        w
    }
}

impl Send {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let topic = args.word("topic")?;
        let partition = args
            .parsed("partition", |v| count(v, 10_000).map(|p| p as i32))?
            .ok_or_else(|| ParseError::new("send: missing partition=…"))?;
        let records = args
            .parsed("records", |v| {
                serde_json::from_str::<Vec<SentRecord>>(v)
                    .map_err(|e| format!("not a JSON array of {{\"key\": …, \"value\": …}} records ({e})"))
            })?
            .ok_or_else(|| ParseError::new("send: missing records=[…]"))?;
        if records.is_empty() || records.len() > MAX_SEND_RECORDS {
            return Err(ParseError::new(format!(
                "send: records holds between 1 and {MAX_SEND_RECORDS} records (got {})",
                records.len()
            )));
        }
        let client = args.option("client").unwrap_or_else(|| "client".to_string());
        if client_word(&client) != client {
            return Err(ParseError::new(
                "send: client may hold letters, digits, '.', '_' and '-' only",
            ));
        }
        Ok(Self {
            topic,
            partition,
            records,
            client,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.send(&self.topic, self.partition, &self.records, &self.client)
            .map(|_| ())
    }
}

impl fmt::Display for Send {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // serde_json escapes quotes, control characters and newlines inside strings, so the
        // array is one token for the tokenizer whatever the records hold.
        let records = serde_json::to_string(&self.records).map_err(|_| fmt::Error)?;
        write!(
            f,
            "send {} partition={} client={} records={records}",
            self.topic, self.partition, self.client
        )
    }
}
