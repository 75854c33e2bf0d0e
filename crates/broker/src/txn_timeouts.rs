//! `transaction.timeout.ms` on wall time for real clients' transactions.
//!
//! Kafka's transaction coordinator aborts a transaction left open longer than its timeout —
//! its producer was killed, or hangs — and bumps the producer's epoch, so `read_committed`
//! readers are not held behind it for good. The lab's own clock moves only when ticked, so the
//! listener keeps wall time for real clients' transactions, as its group coordinator does for
//! their sessions: the first time the ticker sees a transaction open it notes the instant, and
//! once the timeout has passed it settles a `txn-timeout` line, which the history keeps. (Kafka
//! checks every `transaction.abort.timed.out.transaction.cleanup.interval.ms`, 10 s by
//! default; the ticker looks four times a second.)

use offsetlab_engine::Lab;
use offsetlab_lab::lock;
use offsetlab_scenario::command::{Command, TxnTimeout};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// An open transaction: its transactional id, producer id, epoch, and how many transactions that
/// producer had ended before it (the lab's clock may not move between two transactions, so their
/// start on it cannot tell them apart; this count does).
type Open = (String, i64, i16, u64);

#[derive(Default)]
pub(crate) struct TxnTimeouts {
    /// When the ticker first saw each open transaction.
    seen: Mutex<HashMap<Open, Instant>>,
}

impl TxnTimeouts {
    /// The `txn-timeout` lines due at `now` for the real clients' transactions open in `lab`.
    pub(crate) fn due(&self, lab: &Lab, now: Instant) -> Vec<Command> {
        let mut seen = lock(&self.seen);
        let open: Vec<(Open, Duration)> = lab
            .producers()
            .values()
            .filter(|p| p.external)
            .filter_map(|p| {
                p.ongoing.as_ref()?;
                let ended = p.committed + p.aborted;
                let timeout = Duration::from_millis(u64::try_from(p.timeout_ms).unwrap_or(0));
                Some((
                    (p.transactional_id.clone(), p.producer_id, p.epoch, ended),
                    timeout,
                ))
            })
            .collect();
        // Transactions that ended are forgotten; new ones start their wall-clock count now.
        seen.retain(|k, _| open.iter().any(|(o, _)| o == k));
        let mut due = Vec::new();
        for (key, timeout) in open {
            let first = *seen.entry(key.clone()).or_insert(now);
            if now.saturating_duration_since(first) >= timeout {
                let (txn_id, producer_id, epoch, _) = key;
                due.push(Command::TxnTimeout(TxnTimeout {
                    txn_id,
                    producer_id,
                    epoch,
                }));
            }
        }
        due
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use offsetlab_engine::record::TopicPartition;

    /// An open transaction is due once its timeout has passed on the wall clock since the
    /// ticker first saw it, and not before; once aborted, it is forgotten.
    #[test]
    fn a_transaction_is_due_after_its_timeout_of_wall_time() {
        let mut lab = Lab::default();
        lab.create_topic("out", Default::default()).expect("topic");
        let (pid, epoch) = lab.external_init_transactions("copier", 2_000).expect("init");
        let record = offsetlab_engine::lab::SentRecord {
            value: Some("v".into()),
            ..Default::default()
        };
        lab.external_txn_send("copier", pid, epoch, &TopicPartition::new("out", 0), &[record])
            .expect("send");
        let timeouts = TxnTimeouts::default();
        let t0 = Instant::now();
        assert!(timeouts.due(&lab, t0).is_empty(), "first seen now");
        assert!(timeouts.due(&lab, t0 + Duration::from_millis(1_999)).is_empty());
        let due = timeouts.due(&lab, t0 + Duration::from_millis(2_000));
        assert_eq!(due.len(), 1);
        assert_eq!(
            due[0].to_string(),
            format!("txn-timeout copier producer-id={pid} epoch={epoch}")
        );
        let Command::TxnTimeout(t) = &due[0] else {
            panic!("not a txn-timeout: {:?}", due[0]);
        };
        t.apply(&mut lab).expect("aborted");
        assert_eq!(
            lab.last_stable_offset(&TopicPartition::new("out", 0))
                .expect("lso"),
            2
        );
        assert!(
            timeouts.due(&lab, t0 + Duration::from_secs(10)).is_empty(),
            "nothing open"
        );
        assert!(t.apply(&mut lab).is_err(), "the fenced epoch has nothing open");
    }

    /// A producer that commits a transaction and begins the next within the same lab instant (the
    /// lab's clock does not move in `serve`) gets a fresh wall-clock count for each: a healthy
    /// read-process-write loop is never aborted.
    #[test]
    fn each_transaction_of_a_busy_producer_counts_its_own_time() {
        let mut lab = Lab::default();
        lab.create_topic("out", Default::default()).expect("topic");
        let (pid, epoch) = lab.external_init_transactions("loop", 2_000).expect("init");
        let record = offsetlab_engine::lab::SentRecord {
            value: Some("v".into()),
            ..Default::default()
        };
        let out = TopicPartition::new("out", 0);
        let timeouts = TxnTimeouts::default();
        let t0 = Instant::now();
        for i in 0..5u64 {
            lab.external_txn_send("loop", pid, epoch, &out, std::slice::from_ref(&record))
                .expect("send");
            let now = t0 + Duration::from_millis(1_500 * i);
            assert!(
                timeouts.due(&lab, now).is_empty(),
                "transaction {i} has just begun"
            );
            assert!(timeouts.due(&lab, now + Duration::from_millis(1_000)).is_empty());
            lab.external_end_transaction("loop", pid, epoch, true)
                .expect("commit");
        }
    }
}
