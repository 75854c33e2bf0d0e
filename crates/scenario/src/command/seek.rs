//! `seek NAME to=earliest|latest|OFFSET|@INSTANT [partition=P]`
//!
//! Moves the consumer's fetch position (all its partitions, or one). `@INSTANT` seeks by
//! timestamp to the earliest record at or after it: an RFC 3339 datetime
//! (`@2026-01-01T06:00:00Z`), a time since the lab started (`@5s`), or a time ago (`@-6h`).
//! Nothing is committed: a seek only changes where the next poll reads.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::{count, duration_ms, instant_ms, integer};
use offsetlab_engine::lab::SeekTarget;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

/// Where the seek goes, as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeekTo {
    Earliest,
    Latest,
    Offset(i64),
    /// An absolute instant, epoch ms, with the text it was written as.
    At(i64, String),
    /// Now minus this many ms.
    Ago(i64),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seek {
    pub consumer: String,
    pub to: SeekTo,
    pub partition: Option<i32>,
}

impl Seek {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let consumer = args.word("consumer name")?;
        let to = args
            .parsed("to", parse_to)?
            .ok_or_else(|| ParseError::new("seek: missing to=earliest|latest|OFFSET|@INSTANT"))?;
        let partition = args.parsed("partition", |v| count(v, 10_000).map(|p| p as i32))?;
        Ok(Self {
            consumer,
            to,
            partition,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        let target = match &self.to {
            SeekTo::Earliest => SeekTarget::Earliest,
            SeekTo::Latest => SeekTarget::Latest,
            SeekTo::Offset(o) => SeekTarget::Offset(*o),
            SeekTo::At(ts, _) => SeekTarget::Timestamp(*ts),
            SeekTo::Ago(d) => SeekTarget::Timestamp(lab.now() - d),
        };
        lab.seek(&self.consumer, target, self.partition)
    }
}

fn parse_to(v: &str) -> Result<SeekTo, String> {
    match v {
        "earliest" => Ok(SeekTo::Earliest),
        "latest" => Ok(SeekTo::Latest),
        _ => {
            if let Some(rest) = v.strip_prefix("@-") {
                return duration_ms(rest).map(SeekTo::Ago);
            }
            if let Some(rest) = v.strip_prefix('@') {
                return instant_ms(rest).map(|ts| SeekTo::At(ts, rest.to_string()));
            }
            let o = integer(v)
                .map_err(|_| format!("expected earliest, latest, an offset or @INSTANT, got '{v}'"))?;
            if o < 0 {
                return Err("an offset cannot be negative".into());
            }
            Ok(SeekTo::Offset(o))
        }
    }
}

impl fmt::Display for Seek {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "seek {} to=", Quoted(&self.consumer))?;
        match &self.to {
            SeekTo::Earliest => write!(f, "earliest")?,
            SeekTo::Latest => write!(f, "latest")?,
            SeekTo::Offset(o) => write!(f, "{o}")?,
            SeekTo::At(_, text) => write!(f, "{}", Quoted(&format!("@{text}")))?,
            SeekTo::Ago(d) => write!(f, "@-{}", offsetlab_engine::clock::format_duration(*d))?,
        }
        if let Some(p) = self.partition {
            write!(f, " partition={p}")?;
        }
        Ok(())
    }
}
