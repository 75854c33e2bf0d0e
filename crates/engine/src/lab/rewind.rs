//! What a rewind does to the loss figure.
//!
//! A record is lost while the group has passed it without applying it. A rewind — a consumer's
//! seek back, or an offset reset — sends the group back over such records, so they stop counting
//! as lost: the group will read them again. The loss happened all the same, and a learner who
//! rewinds must still see it, so the audit keeps the ranges a rewind took out of "lost"
//! ([`GroupAudit::note_rewound`](crate::audit::GroupAudit::note_rewound)), shown as "lost before
//! the rewind, replayed since".

use super::Lab;
use crate::error::LabError;
use crate::record::{Offset, TopicPartition};

/// A group's lost ranges per partition, taken before a rewind.
pub(crate) type LostBefore = Vec<(TopicPartition, Vec<(Offset, Offset)>)>;

impl Lab {
    /// The ranges of `tps` that `group` has lost right now (none for a group that does not exist).
    pub(crate) fn lost_now(&self, group: &str, tps: &[TopicPartition]) -> Result<LostBefore, LabError> {
        if !self.groups.contains_key(group) {
            return Ok(Vec::new());
        }
        tps.iter()
            .map(|tp| Ok((tp.clone(), self.partition_view(group, tp)?.lost_ranges)))
            .collect()
    }

    /// After a rewind: what was lost in `before` and is not lost now, the rewind took back.
    pub(crate) fn note_rewound(&mut self, group: &str, before: LostBefore) -> Result<(), LabError> {
        for (tp, was) in before.into_iter().filter(|(_, was)| !was.is_empty()) {
            let now = self.partition_view(group, &tp)?.lost_ranges;
            let taken = subtract(&was, &now);
            if let Some(g) = self.groups.get_mut(group) {
                g.audit.note_rewound(&tp, &taken);
            }
        }
        Ok(())
    }
}

/// `ranges` minus `minus`, both sorted half-open ranges.
fn subtract(ranges: &[(Offset, Offset)], minus: &[(Offset, Offset)]) -> Vec<(Offset, Offset)> {
    let mut out = Vec::new();
    for &(a, b) in ranges {
        let mut from = a;
        for &(x, y) in minus.iter().filter(|&&(x, y)| x < b && y > a) {
            if x > from {
                out.push((from, x));
            }
            from = from.max(y);
        }
        if from < b {
            out.push((from, b));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::subtract;

    #[test]
    fn subtracting_ranges() {
        assert_eq!(subtract(&[(1, 4)], &[]), vec![(1, 4)]);
        assert_eq!(subtract(&[(1, 4)], &[(1, 4)]), vec![]);
        assert_eq!(
            subtract(&[(1, 10)], &[(2, 3), (5, 7)]),
            vec![(1, 2), (3, 5), (7, 10)]
        );
        assert_eq!(subtract(&[(1, 4), (6, 8)], &[(0, 7)]), vec![(7, 8)]);
    }
}
