//! `reset-offsets GROUP topic=T[:P,P…] to-earliest|to-latest|to-current|to-offset=N|shift-by=N|
//! to-datetime=TS|by-duration=DUR [execute]`
//!
//! `kafka-consumer-groups.sh --reset-offsets`: a dry run that prints the plan and its blast
//! radius unless `execute` is given; refused while the group has members; offsets clamped to
//! the retained range.

use crate::error::ParseError;
use crate::token::{Args, Quoted};
use crate::units::{count, duration_ms, instant_ms, integer};
use offsetlab_engine::clock::format_duration;
use offsetlab_engine::lab::{ResetPlan, ResetSpec};
use offsetlab_engine::{Lab, LabError};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetOffsets {
    pub group: String,
    pub topic: String,
    pub partitions: Option<Vec<i32>>,
    pub spec: ResetSpec,
    /// The datetime as written, to print it back.
    pub datetime_text: Option<String>,
    pub execute: bool,
}

impl ResetOffsets {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let scope = args.required("topic")?;
        let (topic, partitions) = match scope.split_once(':') {
            None => (scope, None),
            Some((t, ps)) => {
                let parts = ps
                    .split(',')
                    .map(|p| count(p, 10_000).map(|p| p as i32))
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| ParseError::new(format!("reset-offsets: topic={t}:{ps}: {e}")))?;
                (t.to_string(), Some(parts))
            }
        };
        if let Some(problem) = offsetlab_engine::names::topic_name_problem(&topic) {
            return Err(ParseError::new(format!(
                "reset-offsets: topic={}: {problem}",
                crate::error::truncated(&topic, 80)
            )));
        }
        let execute = args.flag("execute");
        let mut specs: Vec<(ResetSpec, Option<String>)> = Vec::new();
        for flag in ["to-earliest", "to-latest", "to-current"] {
            if args.flag(flag) {
                specs.push((
                    match flag {
                        "to-earliest" => ResetSpec::ToEarliest,
                        "to-latest" => ResetSpec::ToLatest,
                        _ => ResetSpec::ToCurrent,
                    },
                    None,
                ));
            }
        }
        if let Some(o) = args.parsed("to-offset", |v| count(v, i64::MAX as u64))? {
            specs.push((ResetSpec::ToOffset(o as i64), None));
        }
        if let Some(n) = args.parsed("shift-by", integer)? {
            specs.push((ResetSpec::ShiftBy(n), None));
        }
        if let Some(text) = args.option("to-datetime") {
            let ts = instant_ms(&text)
                .map_err(|e| ParseError::new(format!("reset-offsets: to-datetime={text}: {e}")))?;
            specs.push((ResetSpec::ToDatetime(ts), Some(text)));
        }
        if let Some(d) = args.parsed("by-duration", duration_ms)? {
            specs.push((ResetSpec::ByDuration(d), None));
        }
        if specs.len() != 1 {
            return Err(ParseError::new(
                "reset-offsets: give exactly one of to-earliest, to-latest, to-current, to-offset=N, shift-by=N, to-datetime=TS, by-duration=DUR",
            ));
        }
        let (spec, datetime_text) = specs.remove(0);
        Ok(Self {
            group,
            topic,
            partitions,
            spec,
            datetime_text,
            execute,
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<ResetPlan, LabError> {
        lab.reset_offsets(
            &self.group,
            &self.topic,
            self.partitions.as_deref(),
            self.spec,
            self.execute,
        )
    }
}

impl fmt::Display for ResetOffsets {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let topic = match &self.partitions {
            Some(ps) => {
                let ps: Vec<String> = ps.iter().map(i32::to_string).collect();
                format!("{}:{}", self.topic, ps.join(","))
            }
            None => self.topic.clone(),
        };
        // A legal topic name is a plain word (checked when the line was read).
        write!(f, "reset-offsets {} topic={topic}", Quoted(&self.group))?;
        match self.spec {
            ResetSpec::ToEarliest => write!(f, " to-earliest")?,
            ResetSpec::ToLatest => write!(f, " to-latest")?,
            ResetSpec::ToCurrent => write!(f, " to-current")?,
            ResetSpec::ToOffset(o) => write!(f, " to-offset={o}")?,
            ResetSpec::ShiftBy(n) => write!(f, " shift-by={n}")?,
            ResetSpec::ToDatetime(ts) => match &self.datetime_text {
                Some(t) => write!(f, " to-datetime={}", Quoted(t))?,
                None => write!(f, " to-datetime={}", crate::units::rfc3339(ts))?,
            },
            ResetSpec::ByDuration(d) => write!(f, " by-duration={}", format_duration(d))?,
        }
        if self.execute {
            write!(f, " execute")?;
        }
        Ok(())
    }
}
