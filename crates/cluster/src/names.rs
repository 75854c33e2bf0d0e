//! A run's names on the cluster: every topic and group of a scenario gets the run's prefix
//! (`offsetlab-<run id>-` by default), so a run never touches a topic or group it did not
//! create. The scenario and the model keep their own names; only what crosses to the cluster
//! is prefixed, and what comes back is mapped home — a name without the prefix is not the
//! run's, and is never taken for one.

use offsetlab_engine::names::{topic_char, topic_name_problem, MAX_ID_BYTES};
use offsetlab_scenario::command::Command;
use offsetlab_scenario::Script;

/// The run's prefix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prefix(String);

/// Why a prefix, or a name with it, cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    #[error("--prefix {0:?}: a prefix holds only ASCII letters, digits, '.', '_' and '-', and is not empty")]
    BadPrefix(String),
    #[error("line {line}: topic {name:?} with the run's prefix is not a topic name Kafka takes: {why}")]
    Topic { line: usize, name: String, why: String },
    #[error("line {line}: group {name:?} with the run's prefix is longer than a group id may be")]
    Group { line: usize, name: String },
}

impl Prefix {
    /// A prefix as `--prefix` gives it: what a topic name may hold (it starts every topic).
    pub fn new(prefix: &str) -> Result<Self, NameError> {
        if prefix.is_empty() || !prefix.chars().all(topic_char) {
            return Err(NameError::BadPrefix(prefix.to_string()));
        }
        Ok(Self(prefix.to_string()))
    }

    /// `offsetlab-<run id>-`: a run id of 8 hex digits tells one run's names from another's.
    pub fn for_run(run_id: u32) -> Self {
        Self(format!("offsetlab-{run_id:08x}-"))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A scenario's topic or group as the cluster knows it.
    pub fn on_cluster(&self, name: &str) -> String {
        format!("{}{name}", self.0)
    }

    /// The scenario's name of a cluster's topic or group, if it is one of this run's.
    pub fn home<'a>(&self, cluster_name: &'a str) -> Option<&'a str> {
        cluster_name.strip_prefix(self.0.as_str())
    }

    /// Every topic and group `script` names, checked with the prefix: a name Kafka would refuse
    /// once prefixed is an error before anything runs.
    pub fn check(&self, script: &Script) -> Result<(), NameError> {
        for line in &script.lines {
            let (topics, groups) = names_of(&line.command);
            for t in topics {
                let full = self.on_cluster(t);
                if let Some(why) = topic_name_problem(&full) {
                    return Err(NameError::Topic {
                        line: line.number,
                        name: t.to_string(),
                        why,
                    });
                }
            }
            for g in groups {
                if self.on_cluster(g).len() > MAX_ID_BYTES {
                    return Err(NameError::Group {
                        line: line.number,
                        name: offsetlab_engine::names::clipped(g),
                    });
                }
            }
        }
        Ok(())
    }
}

/// The topics and groups a line of the lines a cluster runs names.
fn names_of(command: &Command) -> (Vec<&str>, Vec<&str>) {
    match command {
        Command::Topic(t) => (vec![t.name.as_str()], vec![]),
        Command::Produce(p) => (vec![p.topic.as_str()], vec![]),
        Command::Consumer(c) => {
            let mut topics = vec![c.config.topic.as_str()];
            topics.extend(c.config.output.as_deref());
            (topics, vec![c.config.group.as_str()])
        }
        Command::AddPartitions(a) => (vec![a.topic.as_str()], vec![]),
        Command::AlterTopic(a) => (vec![a.topic.as_str()], vec![]),
        Command::ResetOffsets(r) => (vec![], vec![r.group.as_str()]),
        Command::AlterOffsets(a) => (vec![], vec![a.group.as_str()]),
        _ => (vec![], vec![]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_prefix_is_what_a_topic_name_may_start_with() {
        assert!(Prefix::new("team-a.").is_ok());
        for bad in ["", "with space", "ünï", "a/b"] {
            assert!(Prefix::new(bad).is_err(), "{bad}");
        }
        assert_eq!(Prefix::for_run(0xbeef).as_str(), "offsetlab-0000beef-");
    }

    #[test]
    fn a_name_too_long_once_prefixed_is_refused_with_its_line() {
        let p = Prefix::for_run(1);
        let longest = "t".repeat(249 - p.as_str().len());
        let ok = Script::parse(&format!("topic {longest}\n")).expect("parses");
        assert_eq!(p.check(&ok), Ok(()));
        let long = Script::parse(&format!("# one\ntopic {longest}x\n")).expect("parses");
        match p.check(&long) {
            Err(NameError::Topic { line, .. }) => assert_eq!(line, 2),
            other => panic!("{other:?}"),
        }
    }

    proptest! {
        /// Every name goes to the cluster and comes home as itself; a name without the prefix
        /// is never taken for the run's.
        #[test]
        fn names_come_home_as_they_left(name in "\\PC{0,60}", other in "[a-z]{1,10}") {
            let p = Prefix::for_run(42);
            let cluster = p.on_cluster(&name);
            prop_assert_eq!(p.home(&cluster), Some(name.as_str()));
            prop_assume!(!other.starts_with("offsetlab-"));
            prop_assert_eq!(p.home(&other), None);
        }
    }
}
