//! Which lines of a scenario can run on a real cluster, decided before anything runs: a line
//! that cannot is refused with its number and why, and nothing is created on the cluster.
//!
//! A real cluster has its own clock, its own coordinator and its own cleaner; the lab's lines
//! that stand in for those — or for an outside client the lab pretends to be — have no
//! counterpart there:
//!
//! | line | why it cannot run |
//! |---|---|
//! | `clock` | time is the cluster's: `tick D` waits D instead |
//! | `broker …`, `restart-coordinator` | the cluster's settings and its coordinator are not ours to change |
//! | `compact` | the cluster's log cleaner decides when it cleans |
//! | `topic … segment.records=N` | Kafka rolls segments by bytes and time; no setting counts records |
//! | `send`, `rebalance`, `commit-offsets`, `init-txn`, `txn-send`, `txn-offsets`, `end-txn`, `txn-timeout` | the lab speaking for an outside client: on a cluster, run that client |
//! | `consumer … session-timeout` under 6 s | Kafka's `group.min.session.timeout.ms` refuses it |
//! | `consumer … max-poll-interval` under its session timeout (classic protocol) | librdkafka refuses it |

use offsetlab_scenario::command::Command;
use offsetlab_scenario::Script;

/// Kafka's default `group.min.session.timeout.ms`.
pub const MIN_SESSION_TIMEOUT_MS: i64 = 6_000;

/// A line that cannot run on a real cluster.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: `{text}` cannot run on a real cluster: {why}")]
pub struct Unrunnable {
    pub line: usize,
    pub text: String,
    pub why: String,
}

/// Why `command` cannot run on a real cluster, if it cannot.
pub fn why_not(command: &Command) -> Option<String> {
    let outside = "the lab speaks for an outside client here; on a cluster, run that client itself";
    match command {
        Command::Clock(_) => Some("time is the cluster's (use `tick D`, which waits D)".into()),
        Command::Broker(_) => Some("the cluster's broker settings are not the scenario's to change".into()),
        Command::RestartCoordinator(_) => Some("the cluster's group coordinator is not the scenario's to restart".into()),
        Command::Compact(_) => Some("the cluster's log cleaner decides when a compacted topic is cleaned".into()),
        Command::TruncateLog(_) => Some("a cluster's brokers truncate a log only in their own recovery".into()),
        Command::Topic(t) if t.config.segment_records.is_some() => Some(
            "Kafka rolls segments by bytes and time (segment.bytes, segment.ms); no setting counts records".into(),
        ),
        Command::Send(_)
        | Command::SendStored(_)
        | Command::Rebalance(_)
        | Command::ConsumerGroupState(_)
        | Command::CommitOffsets(_)
        | Command::InitTxn(_)
        | Command::TxnSend(_)
        | Command::TxnOffsets(_)
        | Command::EndTxn(_)
        | Command::TxnTimeout(_)
        | Command::ShareJoin(_)
        | Command::ShareLeave(_)
        | Command::ShareRelease(_)
        | Command::ShareFetch(_)
        | Command::ShareAcknowledge(_) => Some(outside.into()),
        Command::Consumer(c) if c.config.session_timeout_ms < MIN_SESSION_TIMEOUT_MS => Some(format!(
            "session-timeout {} ms is below Kafka's group.min.session.timeout.ms ({MIN_SESSION_TIMEOUT_MS} ms): set session-timeout=6s or more",
            c.config.session_timeout_ms
        )),
        Command::Consumer(c)
            if c.config.group_protocol == offsetlab_engine::group::GroupProtocol::Classic
                && c.config.max_poll_interval_ms < c.config.session_timeout_ms =>
        {
            Some(format!(
                "max-poll-interval {} ms is below its session-timeout ({} ms): librdkafka refuses max.poll.interval.ms below session.timeout.ms under the classic protocol (the Java client takes it)",
                c.config.max_poll_interval_ms, c.config.session_timeout_ms
            ))
        }
        _ => None,
    }
}

/// Every line of `script` that cannot run on a real cluster; empty when all can.
pub fn check(script: &Script) -> Vec<Unrunnable> {
    script
        .lines
        .iter()
        .filter_map(|l| {
            why_not(&l.command).map(|why| Unrunnable {
                line: l.number,
                text: l.text.clone(),
                why,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn refused(source: &str) -> Vec<usize> {
        check(&Script::parse(source).expect("parses"))
            .iter()
            .map(|u| u.line)
            .collect()
    }

    #[test]
    fn the_lessons_own_stand_ins_are_refused_with_their_line() {
        let script = "topic orders partitions=1\nproduce orders count=3\nclock 2026-01-01T00:00:10Z\ncompact orders\nconsumer c1 group=g topic=orders session-timeout=2s\nrestart-coordinator\n";
        assert_eq!(refused(script), vec![3, 4, 5, 6]);
        let u = &check(&Script::parse(script).expect("parses"))[2];
        assert!(u.to_string().starts_with("line 5: `consumer c1"), "{u}");
        assert!(u.why.contains("group.min.session.timeout.ms"));
    }

    #[test]
    fn what_a_cluster_does_runs() {
        let script = "# a comment\ntopic orders partitions=2 retention.ms=1d\nproduce orders count=12\nconsumer c1 group=g topic=orders commit=manual-batch session-timeout=6s\npoll c1\nprocess c1 count=all\ncommit c1\ntick 5s\ncrash c1\nrestart c1\nseek c1 to=earliest\nclose c1\n";
        assert_eq!(refused(script), Vec::<usize>::new());
    }

    #[test]
    fn a_real_clients_share_consumer_is_the_clients_to_run() {
        let script = "topic orders partitions=1\nshare-join sg member=M client=c topics=orders\nshare-fetch sg member=M topic=orders partition=0 max=3\nshare-acknowledge sg member=M topic=orders partition=0 acks=0:accept\nshare-release sg member=M\nshare-leave sg member=M\n";
        assert_eq!(refused(script), vec![2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_poll_interval_shorter_than_the_session_is_librdkafkas_to_refuse() {
        let script = "topic orders\nconsumer z1 group=g topic=orders max-poll-interval=30s\nconsumer z2 group=g topic=orders max-poll-interval=30s session-timeout=10s\nconsumer k1 group=k topic=orders max-poll-interval=15s group-protocol=consumer\n";
        assert_eq!(refused(script), vec![2]);
        let u = &check(&Script::parse(script).expect("parses"))[0];
        assert!(
            u.why.contains("max.poll.interval.ms below session.timeout.ms"),
            "{}",
            u.why
        );
    }

    #[test]
    fn segments_counted_in_records_are_the_labs_alone() {
        assert_eq!(refused("topic orders segment.records=4\n"), vec![1]);
    }
}

#[cfg(test)]
mod lessons {
    use super::*;
    use offsetlab_scenario::lessons::LESSONS;

    /// The lessons issue 14 runs on a cluster (1, 2, 3, 4, 5 and 10) pass the preflight whole;
    /// lesson 6 shows segments with `segment.records`, which only the lab has.
    #[test]
    fn which_lessons_a_cluster_can_run() {
        for lesson in LESSONS {
            let script = Script::parse(lesson.source).expect("a lesson parses");
            let refused: Vec<usize> = check(&script).iter().map(|u| u.line).collect();
            match lesson.number() {
                1..=5 | 10 => assert!(refused.is_empty(), "lesson {}: {refused:?}", lesson.number()),
                6 => assert_eq!(refused.len(), 1, "lesson 6: {refused:?}"),
                _ => {}
            }
        }
    }
}
