//! Lines that move a group's offsets by hand: `seek` (a real consumer's positions, each target
//! found on the cluster and checked against the model's) and `reset-offsets … execute` (a commit
//! from outside the group). Both find their targets on the cluster — by time too — so they share
//! the inspector and the checks against the model.

use super::error::LineFailure;
use super::{app, ClusterRun};
use offsetlab_engine::lab::ResetSpec;
use offsetlab_scenario::command::{ResetOffsets, Seek, SeekTo};
use std::collections::BTreeMap;

impl ClusterRun {
    /// `seek NAME to=… [partition=P]`: each target found on the cluster (its log start or end,
    /// the offset, or the first offset at or after the instant in the records' timestamps —
    /// the model's, as a run produces them), which must be where the model's consumer went;
    /// then the real consumer seeks there.
    pub(super) fn seek(&mut self, s: &Seek, before: &BTreeMap<i32, i64>) -> Result<String, LineFailure> {
        let Some(c) = self.app.consumers.get(&s.consumer) else {
            return Err(LineFailure::Other(format!(
                "no consumer {} on the cluster",
                s.consumer
            )));
        };
        let (group, topic) = (
            self.opts.prefix.on_cluster(&c.config.group),
            self.opts.prefix.on_cluster(&c.config.topic),
        );
        let model = self
            .model
            .lab
            .consumer(&s.consumer)
            .map_err(|e| LineFailure::Other(e.to_string()))?;
        let wanted: Vec<(i32, i64)> = model
            .assignment
            .iter()
            .filter(|(tp, _)| tp.topic == model.config.topic && s.partition.is_none_or(|p| p == tp.partition))
            .map(|(tp, f)| (tp.partition, f.position))
            .collect();
        let now = self.model.lab.now();
        let shift = self.shift_of(&model.config.topic);
        let mut moves = Vec::new();
        for (p, model_target) in wanted {
            let (low, high) = self.inspector.watermarks(&group, &topic, p)?;
            let target = match &s.to {
                SeekTo::Earliest => low,
                SeekTo::Latest => high,
                SeekTo::Offset(o) => *o,
                // The model's instant, moved onto the cluster's day as its records were.
                SeekTo::At(ts, _) => self
                    .inspector
                    .offset_for_time(&group, &topic, p, ts.saturating_add(shift))?
                    .unwrap_or(high),
                SeekTo::Ago(d) => self
                    .inspector
                    .offset_for_time(&group, &topic, p, now.saturating_sub(*d).saturating_add(shift))?
                    .unwrap_or(high),
            };
            if target != model_target {
                return Err(LineFailure::Other(format!(
                    "the cluster finds {}-{p} at offset {target} for this seek, the model at {model_target}",
                    s.consumer
                )));
            }
            let from = before.get(&p).copied().unwrap_or(target);
            moves.push(app::Move {
                partition: p,
                from,
                to: target,
                log: (low, high),
            });
        }
        self.app.seek(&s.consumer, &moves)?;
        let text: Vec<String> = moves
            .iter()
            .map(|m| format!("{topic}-{}: {} → {}", m.partition, m.from, m.to))
            .collect();
        Ok(format!("{} seeks {}", s.consumer, text.join(", ")))
    }

    /// `reset-offsets … [execute]`: planned against the cluster's own offsets; with `execute`,
    /// committed from outside the group (the model has checked the group has no members).
    pub(super) fn reset(&mut self, r: &ResetOffsets) -> Result<String, LineFailure> {
        let group = self.opts.prefix.on_cluster(&r.group);
        let topic = self.opts.prefix.on_cluster(&r.topic);
        self.groups.insert(group.clone());
        let chosen: Vec<i32> = match &r.partitions {
            Some(ps) => ps.clone(),
            None => (0..self.partitions(&r.topic)).collect(),
        };
        let current = self.inspector.committed(&group, &topic, &chosen)?;
        let shift = self.shift_of(&r.topic);
        let mut rows = Vec::new();
        for &p in &chosen {
            let (low, high) = self.inspector.watermarks(&group, &topic, p)?;
            let now = current.get(&p).copied().flatten();
            let target = match r.spec {
                ResetSpec::ToEarliest => low,
                ResetSpec::ToLatest => high,
                ResetSpec::ToOffset(o) => o.clamp(low, high),
                ResetSpec::ShiftBy(d) => match now {
                    Some(c) => c.saturating_add(d).clamp(low, high),
                    None => {
                        return Err(LineFailure::Other(format!(
                            "--shift-by needs a committed offset; group {group} has none for {topic}-{p}"
                        )))
                    }
                },
                // Kafka's tool: a partition without a committed offset goes to its end.
                ResetSpec::ToCurrent => now.unwrap_or(high),
                // The records' timestamps are the model's moved onto the cluster's day (a run
                // produces them so): the instant asked for is moved the same way.
                ResetSpec::ToDatetime(ts) => self
                    .inspector
                    .offset_for_time(&group, &topic, p, ts.saturating_add(shift))?
                    .unwrap_or(high),
                ResetSpec::ByDuration(d) => self
                    .inspector
                    .offset_for_time(
                        &group,
                        &topic,
                        p,
                        self.model.lab.now().saturating_sub(d).saturating_add(shift),
                    )?
                    .unwrap_or(high),
            };
            rows.push(app::ResetRow {
                partition: p,
                current: now,
                target,
                log: (low, high),
            });
        }
        let text: Vec<String> = rows
            .iter()
            .map(|r| {
                format!(
                    "{topic}-{}: {} → {}",
                    r.partition,
                    r.current.map_or("-".into(), |o| o.to_string()),
                    r.target
                )
            })
            .collect();
        if !r.execute {
            return Ok(format!("dry run: {}", text.join(", ")));
        }
        let offsets: Vec<(i32, i64)> = rows.iter().map(|r| (r.partition, r.target)).collect();
        self.inspector.commit(&group, &topic, &offsets)?;
        self.app.reset_group(&r.group, &r.topic, &rows);
        Ok(format!("committed from outside the group: {}", text.join(", ")))
    }
}
