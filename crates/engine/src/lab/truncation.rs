//! A log that lost its tail: what a restart does when a partition's last records did not
//! survive (a power cut under `--flush never` tore the segment, and recovery cut it at the first
//! bad byte), told and written down so that a replay of the lab does the same.
//!
//! Kafka truncates such a log too, and says so; the offsets past the new end are then simply
//! not there: the next record produced takes the first of them again, and a consumer whose
//! committed offset (or position) lies beyond the end meets OFFSET_OUT_OF_RANGE at its next
//! fetch, where its `auto.offset.reset` decides (as `scenarios/oracle/committed-past-log-end.scn`
//! shows for an offset committed past the end by an admin). The committed offset itself stays
//! where it was until the group commits again — lag is negative meanwhile — so nothing here
//! moves it.
//!
//! The same operation serves the restart, which finds the log already cut (it only seals the
//! active segment and tells), and the `truncate-log` line the restart writes into the history,
//! which cuts a replayed log that still holds the records: both end with the same log, sealed at
//! the same offset, so an undo or an export replays to the log the lab serves.

use super::Lab;
use crate::error::LabError;
use crate::narrative::EventKind;
use crate::offsets::{OffsetKey, CONSUMER_OFFSETS_TOPIC};
use crate::record::{Offset, TopicPartition};
use serde::Serialize;

/// The tail a partition's log lost: offsets `from..to` are gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TailLoss {
    pub topic: String,
    pub partition: i32,
    /// The log end now: the first offset lost, and the offset the next record takes.
    pub from: Offset,
    /// The log end before (exclusive).
    pub to: Offset,
    /// Groups whose committed offset is past the new end, with that offset: their consumers
    /// meet OFFSET_OUT_OF_RANGE at their next fetch.
    pub committed_past_end: Vec<(String, Offset)>,
}

impl TailLoss {
    /// How many offsets were lost.
    pub fn lost(&self) -> i64 {
        self.to - self.from
    }
}

impl std::fmt::Display for TailLoss {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}: ", self.topic, self.partition)?;
        if self.to > self.from {
            write!(
                f,
                "offsets {}..{} lost ({} record(s) acknowledged before the stop); the log ends at {}",
                self.from,
                self.to - 1,
                self.lost(),
                self.from
            )?;
        } else {
            write!(f, "the log ends at {}, nothing lost", self.from)?;
        }
        for (group, offset) in &self.committed_past_end {
            write!(
                f,
                "; group {group} committed {offset}, past the end: its next fetch meets OFFSET_OUT_OF_RANGE and auto.offset.reset decides"
            )?;
        }
        Ok(())
    }
}

impl Lab {
    /// Cuts `topic`-`partition`'s log back to `to` (every record at or after it goes) and seals
    /// its active segment, so that the next record starts a segment at `to` — in a log a
    /// recovery already cut as in one that still holds the records. `was` is the log end before
    /// the cut when the caller knows it (a restart knows what it had acknowledged); without it,
    /// the log's end now.
    ///
    /// Refused when `to` is before the log start or past the log end.
    pub fn truncate_log(
        &mut self,
        topic: &str,
        partition: i32,
        to: Offset,
        was: Option<Offset>,
    ) -> Result<TailLoss, LabError> {
        let now = self.clock.now();
        let tp = TopicPartition::new(topic, partition);
        let (start, end) = if topic == CONSUMER_OFFSETS_TOPIC && partition == 0 {
            let log = self.offsets.log();
            (log.log_start_offset(), log.log_end_offset())
        } else {
            let log = self.partition_log(&tp)?;
            (log.log_start_offset(), log.log_end_offset())
        };
        if to < start || to > end {
            return Err(LabError::OffsetOutOfRange {
                tp: tp.to_string(),
                log_end: end,
                asked: to,
            });
        }
        if topic == CONSUMER_OFFSETS_TOPIC {
            self.offsets.truncate_to(to, now);
        } else {
            let log = self
                .topic_mut(topic)?
                .partitions
                .get_mut(usize::try_from(partition).unwrap_or(usize::MAX));
            if let Some(log) = log {
                log.truncate_to(to);
                log.seal_active(now);
            }
        }
        let committed_past_end: Vec<(String, Offset)> = self
            .offsets
            .view()
            .iter()
            .filter(|(k, v)| k.topic == topic && k.partition == partition && v.offset > to)
            .map(|(OffsetKey { group, .. }, v)| (group.clone(), v.offset))
            .collect();
        let loss = TailLoss {
            topic: topic.to_string(),
            partition,
            from: to,
            to: was.unwrap_or(end).max(end).max(to),
            committed_past_end,
        };
        self.say(
            EventKind::Warning,
            format!("the log of {loss} — a recovery cut its torn or corrupt tail, as Kafka truncates a log whose last records did not survive; the next record produced takes offset {to}"),
        );
        Ok(loss)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lab::ProduceSpec;
    use crate::log::TopicConfig;

    fn lab_with(records: u64) -> Lab {
        let mut lab = Lab::default();
        let config = TopicConfig {
            partitions: 1,
            ..TopicConfig::default()
        };
        lab.create_topic("orders", config).expect("topic");
        let spec = ProduceSpec {
            count: records,
            key: None,
            value: None,
            partition: Some(0),
            tombstone: false,
            batch: None,
        };
        lab.produce("orders", &spec).expect("produced");
        lab
    }

    #[test]
    fn a_truncation_names_what_it_lost_and_the_next_record_takes_the_first_lost_offset() {
        let mut lab = lab_with(10);
        let tp = TopicPartition::new("orders", 0);
        lab.alter_offsets("g", &[(tp.clone(), 8)], &Default::default(), &Default::default())
            .expect("committed 8");
        let loss = lab.truncate_log("orders", 0, 5, None).expect("cut");
        assert_eq!((loss.from, loss.to), (5, 10));
        assert_eq!(loss.committed_past_end, vec![("g".to_string(), 8)]);
        assert!(loss.to_string().contains("offsets 5..9 lost"), "{loss}");
        assert_eq!(lab.partition_log(&tp).expect("log").log_end_offset(), 5);
        // The committed offset stays where it was: the group meets OFFSET_OUT_OF_RANGE later.
        let committed = lab
            .offsets()
            .view()
            .get(&OffsetKey::new("g", &tp))
            .map(|v| v.offset);
        assert_eq!(committed, Some(8));
        let spec = ProduceSpec {
            count: 1,
            key: None,
            value: None,
            partition: Some(0),
            tombstone: false,
            batch: None,
        };
        let written = lab.produce("orders", &spec).expect("produced");
        assert_eq!(written.get(&0), Some(&(5, 5)));
    }

    #[test]
    fn a_truncation_past_the_end_or_before_the_start_is_refused_and_changes_nothing() {
        let mut lab = lab_with(3);
        let before = lab.narrative().len();
        assert!(matches!(
            lab.truncate_log("orders", 0, 4, None),
            Err(LabError::OffsetOutOfRange { .. })
        ));
        assert!(lab.truncate_log("orders", 1, 0, None).is_err());
        assert_eq!(lab.narrative().len(), before);
        // The log's own end is no loss, and says so.
        let loss = lab.truncate_log("orders", 0, 3, Some(3)).expect("nothing to cut");
        assert_eq!(loss.lost(), 0);
        assert!(loss.to_string().contains("nothing lost"), "{loss}");
    }
}
