//! The state `GET /api/state` shows: the engine's view and what the page needs beside it.

use super::*;

/// Events and rows the state carries; older ones are paged through their own endpoints.
pub(crate) const NARRATIVE_TAIL: usize = 300;

pub(crate) const SINK_TAIL: usize = 100;

pub(crate) const OFFSETS_TAIL: usize = 100;

/// Members of a group metadata record the state carries (the topic holds them all).
pub(crate) const GROUP_MEMBERS_SHOWN: usize = 50;

/// The JSON of `GET /api/state`: exactly `offsetlab run --json`'s object, plus what the page needs.
#[derive(Serialize)]
pub struct State {
    #[serde(flatten)]
    pub view: LabView,
    pub version: u64,
    pub narrative: NarrativeTail,
    pub sink_rows: BTreeMap<String, SinkTail>,
    pub consumer_offsets_records: Vec<OffsetRecord>,
    /// The group metadata records among the same tail of `__consumer_offsets`.
    pub consumer_offsets_group_records: Vec<offsetlab_engine::offsets::GroupRecord>,
    pub history_lines: usize,
    pub storage: StorageInfo,
    /// `live` while the clock reads wall time (`serve`), `paused` while it waits to be stepped.
    pub clock_mode: ClockMode,
    /// What the last start found lost: partitions whose tail a crash tore, the offsets lost
    /// (absent when nothing was).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub recovered: Vec<Recovered>,
}

/// Where the lab keeps its logs, shown on the page.
#[derive(Serialize)]
pub struct StorageInfo {
    /// `memory` or `disk`.
    pub logs: &'static str,
    /// The flush policy of a durable lab (`never`, `interval=…ms`, `always`).
    pub flush: Option<String>,
    /// The generation directory of a durable lab.
    pub dir: Option<String>,
}

#[derive(Serialize)]
pub struct NarrativeTail {
    pub total: usize,
    /// The last events, their texts clipped (a client's group id may be kilobytes long).
    pub events: Vec<Event>,
}

#[derive(Serialize)]
pub struct SinkTail {
    pub total: u64,
    /// The last rows, in insertion order.
    pub rows: Vec<SinkRow>,
}

impl Session {
    pub fn state(&self) -> Result<State, LabError> {
        let view = self.lab.view()?;
        let mut sink_rows = BTreeMap::new();
        for (name, g) in self.lab.groups() {
            let total = g.sink.stats()?.rows;
            let from = (total as usize).saturating_sub(SINK_TAIL);
            sink_rows.insert(
                name.clone(),
                SinkTail {
                    total,
                    rows: g
                        .sink
                        .rows(from, SINK_TAIL)?
                        .into_iter()
                        .map(crate::clip::clip_row)
                        .collect(),
                },
            );
        }
        let offsets = self.lab.offsets();
        let end = offsets.log().log_end_offset();
        let mut consumer_offsets_records = offsets.records((end - OFFSETS_TAIL as i64).max(0), usize::MAX);
        let skip = consumer_offsets_records.len().saturating_sub(OFFSETS_TAIL);
        consumer_offsets_records.drain(..skip);
        for r in &mut consumer_offsets_records {
            if let Some(v) = r
                .value
                .as_mut()
                .filter(|v| v.metadata.len() > crate::clip::MAX_FIELD_BYTES)
            {
                v.metadata = crate::clip::clip(&v.metadata, crate::clip::MAX_FIELD_BYTES).into_owned();
            }
        }
        // The same window of the topic: names clipped, a real group's long member list cut.
        let mut consumer_offsets_group_records =
            offsets.group_records((end - OFFSETS_TAIL as i64).max(0), usize::MAX);
        for r in &mut consumer_offsets_group_records {
            r.group = crate::clip::clip(&r.group, crate::clip::MAX_FIELD_BYTES).into_owned();
            if let Some(v) = r.value.as_mut() {
                v.members.truncate(GROUP_MEMBERS_SHOWN);
                for (id, _) in &mut v.members {
                    *id = crate::clip::clip(id, crate::clip::MAX_FIELD_BYTES).into_owned();
                }
            }
        }
        let events = self.lab.narrative().events();
        Ok(State {
            view,
            version: self.version,
            narrative: NarrativeTail {
                total: self.lab.narrative().len(),
                events: events[events.len().saturating_sub(NARRATIVE_TAIL)..]
                    .iter()
                    .map(|e| Event {
                        text: crate::clip::clip(&e.text, crate::clip::MAX_FIELD_BYTES).into_owned(),
                        ..e.clone()
                    })
                    .collect(),
            },
            sink_rows,
            consumer_offsets_records,
            consumer_offsets_group_records,
            history_lines: self.history.len(),
            clock_mode: self.clock,
            recovered: self.recovered.clone(),
            storage: match &self.generation {
                Some(g) => StorageInfo {
                    logs: "disk",
                    flush: Some(g.durability.policy().to_string()),
                    dir: Some(g.dir.display().to_string()),
                },
                None => StorageInfo {
                    logs: "memory",
                    flush: None,
                    dir: None,
                },
            },
        })
    }
}
