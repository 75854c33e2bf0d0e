//! `send TOPIC partition=P stored=FILE:AT+LEN count=N [client=ID]`
//!
//! What a Kafka client produced through the listener, as the lab's history keeps it: the record
//! batches themselves, exactly as the client encoded them (with the offsets and log append time
//! the log gave them), are `LEN` bytes from byte `AT` of `FILE` — in a durable lab a segment
//! file the log keeps for the history (a hard link in the generation's `produced/` directory,
//! which outlives retention, compaction and the topic's deletion), in an in-memory lab
//! (`memory`) a buffer of the session. The line names the bytes instead of spelling out every
//! key and value: a million produced records cost the history a few hundred short lines, and the
//! produce path never turns a record into text. It replays only inside the lab that wrote it —
//! the session resolves the bytes — and an export writes the records out as ordinary
//! `send … records=[…]` lines, so an exported scenario stands on its own.

use crate::error::ParseError;
use crate::token::Quoted;
use offsetlab_engine::LabError;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendStored {
    pub topic: String,
    pub partition: i32,
    /// The producing client's `client.id`, for the narrative.
    pub client: String,
    /// Where the batches are: a file of the lab's kept segments (or `memory`), byte offset and
    /// length.
    pub file: String,
    pub at: u64,
    pub len: u64,
    /// Records in the batches.
    pub count: usize,
}

impl SendStored {
    /// The `stored=AT+LEN` and `count=N` of a `send` line whose topic, partition and client
    /// are already read.
    pub(crate) fn parse(
        topic: String,
        partition: i32,
        client: String,
        stored: &str,
        count: Option<String>,
    ) -> Result<Self, ParseError> {
        let bad = || {
            ParseError::new(format!(
                "send: stored={stored} is not FILE:AT+LEN, a byte range of the lab's kept batches"
            ))
        };
        let (file, range) = stored.rsplit_once(':').ok_or_else(bad)?;
        // A plain name inside the lab's directory: no path, no hidden or dot-only names.
        let plain = !file.is_empty()
            && !file.starts_with('.')
            && file
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        if !plain {
            return Err(bad());
        }
        let (at, len) = range
            .split_once('+')
            .and_then(|(a, l)| Some((a.parse::<u64>().ok()?, l.parse::<u64>().ok()?)))
            .filter(|&(a, l)| l > 0 && a.checked_add(l).is_some())
            .ok_or_else(bad)?;
        let count = count
            .and_then(|c| c.parse::<usize>().ok())
            .filter(|&c| c > 0)
            .ok_or_else(|| ParseError::new("send: stored=… needs count=N, the records it holds (N ≥ 1)"))?;
        Ok(Self {
            topic,
            partition,
            client,
            file: file.to_string(),
            at,
            len,
            count,
        })
    }

    /// Outside the lab that stored the batches there is nothing to replay.
    pub fn unresolved(&self) -> LabError {
        LabError::InvalidArgument(format!(
            "send {} stored={}:{}+{} names record batches the lab that wrote this line keeps; it \
             replays only inside that lab (export the lab for a scenario that spells out the \
             records)",
            self.topic, self.file, self.at, self.len
        ))
    }
}

impl fmt::Display for SendStored {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "send {} partition={} client={} stored={} count={}",
            Quoted(&self.topic),
            self.partition,
            Quoted(&self.client),
            Quoted(&format!("{}:{}+{}", self.file, self.at, self.len)),
            self.count
        )
    }
}
