//! [`MemorySink`]: the three sink kinds held in process memory.

use super::{Sink, SinkError, SinkKind, SinkRow, SinkStats, SinkWrite, WriteOutcome};
use crate::record::{Offset, TopicPartition};
use std::collections::{BTreeMap, HashMap, HashSet};

#[derive(Debug, Clone)]
pub struct MemorySink {
    kind: SinkKind,
    rows: Vec<SinkRow>,
    /// Upsert: order id → row index.
    by_key: HashMap<Vec<u8>, usize>,
    keys: HashSet<Vec<u8>>,
    /// Source records already held by some row.
    sources: HashSet<(TopicPartition, Offset)>,
    /// Transactional: the next offset per partition and the generation that wrote it.
    offsets: BTreeMap<TopicPartition, (Offset, i32)>,
}

impl MemorySink {
    pub fn new(kind: SinkKind) -> Self {
        Self {
            kind,
            rows: Vec::new(),
            by_key: HashMap::new(),
            keys: HashSet::new(),
            sources: HashSet::new(),
            offsets: BTreeMap::new(),
        }
    }

    fn new_row(&self, w: &SinkWrite<'_>, duplicate: bool) -> SinkRow {
        SinkRow {
            row_id: self.rows.len() as u64 + 1,
            key: w.key.into(),
            topic: w.tp.topic.clone(),
            partition: w.tp.partition,
            offset: w.offset,
            value: w.value.into(),
            consumer: w.consumer.to_string(),
            incarnation: w.incarnation,
            reason: w.reason,
            applied_at: w.at,
            writes: 1,
            duplicate,
        }
    }
}

impl Sink for MemorySink {
    fn kind(&self) -> SinkKind {
        self.kind
    }

    fn apply(&mut self, w: &SinkWrite<'_>) -> Result<WriteOutcome, SinkError> {
        if self.kind == SinkKind::Transactional {
            if let Some(&(next_offset, generation)) = self.offsets.get(w.tp) {
                if w.offset < next_offset || w.generation < generation {
                    return Ok(WriteOutcome::Fenced {
                        next_offset,
                        generation,
                    });
                }
            }
        }
        self.keys.insert(w.key.to_vec());
        let source = (w.tp.clone(), w.offset);
        match self.kind {
            SinkKind::Append | SinkKind::Transactional | SinkKind::KafkaTx => {
                let duplicate = !self.sources.insert(source);
                let row = self.new_row(w, duplicate);
                self.rows.push(row);
                if self.kind == SinkKind::Transactional {
                    self.offsets.insert(w.tp.clone(), (w.offset + 1, w.generation));
                }
            }
            SinkKind::Upsert => match self.by_key.get(w.key) {
                Some(&i) => {
                    let row = &mut self.rows[i];
                    row.offset = w.offset;
                    row.topic = w.tp.topic.clone();
                    row.partition = w.tp.partition;
                    row.value = w.value.into();
                    row.consumer = w.consumer.to_string();
                    row.incarnation = w.incarnation;
                    row.reason = w.reason;
                    row.applied_at = w.at;
                    row.writes += 1;
                }
                None => {
                    let row = self.new_row(w, false);
                    self.by_key.insert(w.key.to_vec(), self.rows.len());
                    self.rows.push(row);
                }
            },
        }
        Ok(WriteOutcome::Applied)
    }

    fn stored_offset(&self, tp: &TopicPartition) -> Result<Option<Offset>, SinkError> {
        Ok(self.offsets.get(tp).map(|&(o, _)| o))
    }

    fn stats(&self) -> Result<SinkStats, SinkError> {
        let rows = self.rows.len() as u64;
        let distinct_sources = match self.kind {
            SinkKind::Upsert => rows,
            _ => self.sources.len() as u64,
        };
        Ok(SinkStats {
            rows,
            distinct_keys: self.keys.len() as u64,
            duplicate_rows: rows - distinct_sources,
        })
    }

    fn rows(&self, from: usize, limit: usize) -> Result<Vec<SinkRow>, SinkError> {
        Ok(self.rows.iter().skip(from).take(limit).cloned().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_sinks_pass_the_conformance_suite() {
        crate::sink::conformance::run(&mut |kind| Box::new(MemorySink::new(kind)));
    }
}
