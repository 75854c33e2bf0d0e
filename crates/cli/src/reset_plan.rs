//! Where `offsetlab groups --reset-offsets` moves each partition — the same for a consumer
//! group's committed offsets and a share group's start offsets: the `--to-…` spec, the
//! partitions named (`--topic T[:P,P]`, `--all-topics`), their retained log, and the offsets a
//! reset to a time finds (ListOffsets by timestamp).

use crate::conn::Conn;
use crate::topics_cmd::{describe as describe_topics, list_offsets};
use std::collections::BTreeMap;

/// `--to-…`, `--shift-by`, `--by-duration`: where the reset moves each partition.
#[derive(Debug, Clone)]
pub enum Spec {
    Earliest,
    Latest,
    Current,
    Offset(i64),
    ShiftBy(i64),
    /// Epoch milliseconds.
    Datetime(i64),
    /// Milliseconds before now.
    Duration(i64),
}

impl Spec {
    /// Where it moves one partition whose retained log is `[log_start, log_end]`: `current` is
    /// the group's position there (a committed offset, a share group's start offset), `at_time`
    /// the first offset at or after the time a `--to-datetime`/`--by-duration` names. `None`
    /// for `--shift-by` without a position to shift. Not clamped: the caller shows the blast
    /// radius of what was asked before it clamps.
    pub(crate) fn target(
        &self,
        log_start: i64,
        log_end: i64,
        current: Option<i64>,
        at_time: Option<i64>,
    ) -> Option<i64> {
        Some(match self {
            Spec::Earliest => log_start,
            Spec::Latest => log_end,
            Spec::Current => current.unwrap_or(log_end),
            Spec::Offset(o) => *o,
            Spec::ShiftBy(n) => current?.saturating_add(*n),
            Spec::Datetime(_) | Spec::Duration(_) => at_time.filter(|&o| o >= 0).unwrap_or(log_end),
        })
    }
}

/// ISO-8601 `PnDTnHnMnS` (what `--by-duration` takes), in milliseconds.
pub fn iso_duration_ms(s: &str) -> Result<i64, String> {
    let bad = || format!("'{s}' is not a duration like PT6H, P1DT2H30M or PT0.5S");
    let rest = s.strip_prefix('P').ok_or_else(bad)?;
    let (days, time) = match rest.split_once('T') {
        Some((d, t)) => (d, t),
        None => (rest, ""),
    };
    let mut ms = 0f64;
    if !days.is_empty() {
        ms += days
            .strip_suffix('D')
            .ok_or_else(bad)?
            .parse::<f64>()
            .map_err(|_| bad())?
            * 86_400_000.0;
    }
    let mut num = String::new();
    for c in time.chars() {
        match c {
            '0'..='9' | '.' => num.push(c),
            'H' | 'M' | 'S' => {
                let v: f64 = num.parse().map_err(|_| bad())?;
                ms += v * match c {
                    'H' => 3_600_000.0,
                    'M' => 60_000.0,
                    _ => 1_000.0,
                };
                num.clear();
            }
            _ => return Err(bad()),
        }
    }
    if !num.is_empty() || (days.is_empty() && time.is_empty()) || !(0.0..1e15).contains(&ms) {
        return Err(bad());
    }
    Ok(ms as i64)
}

/// A partition the reset moves: (topic, partition, log start offset, log end offset).
pub(crate) type Retained = (String, i32, i64, i64);

/// Which partitions: `t` (all of its partitions), `t:0,1`, or every topic the group committed.
fn wanted_partitions(
    topics: &[String],
    all_topics: bool,
    committed: &BTreeMap<(String, i32), i64>,
) -> Result<BTreeMap<String, Option<Vec<i32>>>, String> {
    let mut wanted: BTreeMap<String, Option<Vec<i32>>> = BTreeMap::new();
    if all_topics {
        for (t, _) in committed.keys() {
            wanted.insert(t.clone(), None);
        }
    }
    for t in topics {
        match t.split_once(':') {
            Some((name, ps)) => {
                let parts: Vec<i32> = ps
                    .split(',')
                    .map(str::parse)
                    .collect::<Result<_, _>>()
                    .map_err(|_| format!("Error: '{t}' is not TOPIC or TOPIC:P,P"))?;
                wanted.insert(name.to_string(), Some(parts));
            }
            None => {
                wanted.insert(t.clone(), None);
            }
        }
    }
    if wanted.is_empty() {
        return Err("Error: name the partitions with --topic T[:P,P] or --all-topics".into());
    }
    Ok(wanted)
}

/// The wanted partitions with their retained range, or the topic that does not exist.
fn retained(
    conn: &mut Conn,
    wanted: &BTreeMap<String, Option<Vec<i32>>>,
) -> anyhow::Result<Result<Vec<Retained>, String>> {
    let infos = describe_topics(conn, Some(wanted.keys().cloned().collect()), true)?;
    let mut tps = Vec::new();
    for info in &infos {
        if info.error_code != 0 {
            return Ok(Err(format!("Error: topic '{}' does not exist", info.topic)));
        }
        let only = wanted.get(&info.topic).cloned().flatten();
        for p in &info.partitions {
            if only.as_ref().is_none_or(|o| o.contains(&p.partition)) {
                tps.push((
                    info.topic.clone(),
                    p.partition,
                    p.log_start_offset.unwrap_or(0),
                    p.log_end_offset.unwrap_or(0),
                ));
            }
        }
    }
    Ok(Ok(tps))
}

/// For a reset to a time: the first offset at or after it, per partition (none: the log end).
fn offsets_by_time(
    conn: &mut Conn,
    spec: &Spec,
    tps: &[Retained],
) -> anyhow::Result<BTreeMap<(String, i32), i64>> {
    let at = match spec {
        Spec::Datetime(t) => *t,
        Spec::Duration(d) => {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as i64)
                - d
        }
        _ => return Ok(BTreeMap::new()),
    };
    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
    for (t, p, _, _) in tps {
        by_topic.entry(t.clone()).or_default().push(*p);
    }
    list_offsets(conn, &by_topic, at)
}

/// One partition a reset plan names: its retained log, the group's position there, and where
/// the spec moves it (before any clamping).
pub(crate) struct Target {
    pub(crate) retained: Retained,
    pub(crate) current: Option<i64>,
    pub(crate) target: i64,
}

/// The partitions a reset names (`topics`, or every one of `positions` with `all_topics`), each
/// with where `spec` moves it from its position in `positions`; the refusal to show when a
/// partition cannot be planned (`no_position` says why a `--shift-by` has nothing to shift).
pub(crate) fn targets(
    conn: &mut Conn,
    topics: &[String],
    all_topics: bool,
    spec: &Spec,
    positions: &BTreeMap<(String, i32), i64>,
    no_position: impl Fn(&str, i32) -> String,
) -> anyhow::Result<Result<Vec<Target>, String>> {
    let wanted = match wanted_partitions(topics, all_topics, positions) {
        Ok(w) => w,
        Err(e) => return Ok(Err(e)),
    };
    let tps = match retained(conn, &wanted)? {
        Ok(tps) => tps,
        Err(e) => return Ok(Err(e)),
    };
    let by_time = offsets_by_time(conn, spec, &tps)?;
    let mut out = Vec::new();
    for retained in tps {
        let key = (retained.0.clone(), retained.1);
        let current = positions.get(&key).copied();
        let Some(target) = spec.target(retained.2, retained.3, current, by_time.get(&key).copied()) else {
            return Ok(Err(no_position(&retained.0, retained.1)));
        };
        out.push(Target {
            retained,
            current,
            target,
        });
    }
    Ok(Ok(out))
}
