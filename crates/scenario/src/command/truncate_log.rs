//! `truncate-log TOPIC partition=P to=OFFSET [was=OFFSET]`
//!
//! The partition's log lost every record from OFFSET on, as a broker's recovery truncates a log
//! whose tail a machine crash tore: the next record produced takes OFFSET again, and a consumer
//! whose committed offset or position lies past the new end meets OFFSET_OUT_OF_RANGE at its
//! next fetch (`auto.offset.reset` decides). A durable lab writes this line itself when a
//! restart finds a log shorter than it had acknowledged (`was` is the end it had), so that an
//! undo or an export — which replay the history — cut the replayed log where the restart found
//! it cut, and never hand out different records at the offsets the lab served since.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::count;
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TruncateLog {
    pub topic: String,
    pub partition: i32,
    /// The new log end.
    pub to: i64,
    /// The log end before the cut, when it was known (a restart's acknowledged end).
    pub was: Option<i64>,
}

impl TruncateLog {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let topic = args.word("topic")?;
        let partition = args
            .parsed("partition", |v| count(v, 10_000).map(|p| p as i32))?
            .unwrap_or(0);
        let offset = |v: &str| count(v, i64::MAX as u64).map(|o| o as i64);
        let to = args
            .parsed("to", offset)?
            .ok_or_else(|| ParseError::new("truncate-log: missing to=OFFSET"))?;
        let was = args.parsed("was", offset)?;
        if was.is_some_and(|w| w < to) {
            return Err(ParseError::new(
                "truncate-log: was= is the log end before the cut, at least to=",
            ));
        }
        Ok(Self {
            topic,
            partition,
            to,
            was,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.truncate_log(&self.topic, self.partition, self.to, self.was)
            .map(|_| ())
    }
}

impl fmt::Display for TruncateLog {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "truncate-log {} partition={} to={}",
            Quoted(&self.topic),
            self.partition,
            self.to
        )?;
        if let Some(was) = self.was {
            write!(f, " was={was}")?;
        }
        Ok(())
    }
}
