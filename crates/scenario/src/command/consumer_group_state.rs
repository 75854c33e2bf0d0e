//! `consumer-group GROUP epoch=E [assignment-epoch=A] members=JSON` — the state of a consumer-protocol group (KIP-848)
//! of real clients, as the Kafka listener's coordinator reports it whenever a heartbeat, a leave
//! or a session timeout changed it: the group epoch, and every member with its epoch and where it
//! is in its reconciliation. `members` is a JSON array of
//! `{"id": …, "client": …, "host": …, "epoch": 3, "partitions": {"orders": [0, 1]}}`, each
//! optionally with `"state"` (`stable`, `unrevoked-partitions`, `unreleased-partitions`),
//! `"assigned_at"` (`{"orders": [[0, 2]]}`: the epoch it was given a partition at, where older
//! than its own — a commit at that epoch is still its own, KIP-1251),
//! `"revoking"` and `"target"` (partitions, as `partitions`), `"assignor"` (`uniform`, `range`),
//! `"instance"` (`group.instance.id`), `"topics"` (its subscription) and `"rebalance_timeout_ms"`;
//! `[]` once the last member left or timed out.
//!
//! The engine checks the state keeps Kafka's invariants (an epoch never goes back; a partition
//! has one owner) and takes it; the members' commits (`commit-offsets … generation=EPOCH`) are
//! then fenced by member epoch.

use crate::error::ParseError;
use crate::token::{Args, Quoted, QuotedJson};
use crate::units::count;
use offsetlab_engine::group::{ExternalConsumerMember, ExternalMember, MemberState, ServerAssignor};
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::{Lab, LabError};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Partitions as the JSON spells them: by topic.
type ByTopic = BTreeMap<String, Vec<i32>>;

fn by_topic(tps: &[TopicPartition]) -> ByTopic {
    let mut out = ByTopic::new();
    for tp in tps {
        out.entry(tp.topic.clone()).or_default().push(tp.partition);
    }
    out
}

fn listed(by_topic: ByTopic) -> Vec<TopicPartition> {
    by_topic
        .into_iter()
        .flat_map(|(t, ps)| ps.into_iter().map(move |p| TopicPartition::new(t.clone(), p)))
        .collect()
}

/// A member as the `members` JSON spells it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MemberJson {
    id: String,
    #[serde(default)]
    client: String,
    #[serde(default)]
    host: String,
    epoch: i32,
    #[serde(default)]
    state: MemberState,
    #[serde(default)]
    partitions: ByTopic,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    revoking: ByTopic,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    target: ByTopic,
    #[serde(default)]
    assignor: ServerAssignor,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    instance: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    topics: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rebalance_timeout_ms: Option<i32>,
    /// `{"orders": [[0, 2]]}`: the member epoch it was given a partition at, where older.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    assigned_at: BTreeMap<String, Vec<(i32, i32)>>,
}

impl From<&ExternalConsumerMember> for MemberJson {
    fn from(m: &ExternalConsumerMember) -> Self {
        Self {
            id: m.member.id.clone(),
            client: m.member.client_id.clone(),
            host: m.member.host.clone(),
            epoch: m.epoch,
            state: m.state,
            partitions: by_topic(&m.member.partitions),
            revoking: by_topic(&m.revoking),
            target: by_topic(&m.target),
            assignor: m.assignor,
            instance: m.member.instance_id.clone(),
            topics: m.member.topics.clone(),
            rebalance_timeout_ms: m.member.rebalance_timeout_ms,
            assigned_at: {
                let mut out: BTreeMap<String, Vec<(i32, i32)>> = BTreeMap::new();
                for (tp, e) in &m.assignment_epochs {
                    out.entry(tp.topic.clone()).or_default().push((tp.partition, *e));
                }
                out
            },
        }
    }
}

impl From<MemberJson> for ExternalConsumerMember {
    fn from(m: MemberJson) -> Self {
        Self {
            member: ExternalMember {
                id: m.id,
                client_id: m.client,
                host: m.host,
                partitions: listed(m.partitions),
                instance_id: m.instance,
                topics: m.topics,
                session_timeout_ms: None,
                rebalance_timeout_ms: m.rebalance_timeout_ms,
            },
            epoch: m.epoch,
            state: m.state,
            revoking: listed(m.revoking),
            target: listed(m.target),
            assignor: m.assignor,
            assignment_epochs: m
                .assigned_at
                .into_iter()
                .flat_map(|(t, ps)| {
                    ps.into_iter()
                        .map(move |(p, e)| (TopicPartition::new(t.clone(), p), e))
                })
                .collect(),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConsumerGroupState {
    pub group: String,
    pub epoch: i32,
    /// The epoch its target assignment was computed at (`assignment-epoch=`, written when it is
    /// behind the group epoch: Kafka 4.4 assigns at most once a second, KIP-1263).
    pub assignment_epoch: i32,
    pub members: Vec<ExternalConsumerMember>,
}

impl ConsumerGroupState {
    pub fn parse(args: &mut Args) -> Result<Self, ParseError> {
        let group = args.word("group")?;
        let epoch = args
            .parsed("epoch", |v| count(v, i32::MAX as u64).map(|g| g as i32))?
            .ok_or_else(|| ParseError::new("consumer-group: missing epoch=…"))?;
        let assignment_epoch = args
            .parsed("assignment-epoch", |v| {
                count(v, i32::MAX as u64).map(|g| g as i32)
            })?
            .unwrap_or(epoch);
        let members = args
            .parsed("members", |v| {
                serde_json::from_str::<Vec<MemberJson>>(v).map_err(|e| {
                    format!("not a JSON array of {{\"id\", \"epoch\", \"partitions\", …}} members ({e})")
                })
            })?
            .ok_or_else(|| ParseError::new("consumer-group: missing members=[…]"))?;
        Ok(Self {
            group,
            epoch,
            assignment_epoch,
            members: members.into_iter().map(ExternalConsumerMember::from).collect(),
        })
    }

    pub fn apply(&self, lab: &mut Lab) -> Result<(), LabError> {
        lab.external_consumer_group(
            &self.group,
            self.epoch,
            self.assignment_epoch,
            self.members.clone(),
        )
    }
}

impl fmt::Display for ConsumerGroupState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let members: Vec<MemberJson> = self.members.iter().map(MemberJson::from).collect();
        let json = serde_json::to_string(&members).map_err(|_| fmt::Error)?;
        write!(f, "consumer-group {} epoch={}", Quoted(&self.group), self.epoch)?;
        if self.assignment_epoch != self.epoch {
            write!(f, " assignment-epoch={}", self.assignment_epoch)?;
        }
        write!(f, " members={}", QuotedJson(&json))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::command::Command;

    #[test]
    fn a_state_line_reads_back_as_written() {
        let line = r#"consumer-group g epoch=3 members='[{"id":"a","client":"rdkafka","host":"/127.0.0.1","epoch":2,"state":"unrevoked-partitions","partitions":{"orders":[0,1]},"revoking":{"orders":[2]},"target":{"orders":[0,1]},"assignor":"uniform","topics":["orders"]},{"id":"b","epoch":3,"state":"unreleased-partitions","partitions":{},"target":{"orders":[2]},"assignor":"range"}]'"#;
        let parsed = Command::parse(line).expect("parses").expect("a command");
        let Command::ConsumerGroupState(state) = &parsed else {
            panic!("{parsed:?}");
        };
        assert_eq!(state.members[0].revoking, vec![TopicPartition::new("orders", 2)]);
        assert_eq!(state.members[1].state, MemberState::UnreleasedPartitions);
        let again = Command::parse(&parsed.to_string())
            .expect("parses")
            .expect("a command");
        assert_eq!(again, parsed);
    }

    #[test]
    fn a_member_without_an_epoch_or_an_unknown_field_is_refused() {
        for bad in [
            r#"consumer-group g epoch=3 members='[{"id":"a"}]'"#,
            r#"consumer-group g epoch=3 members='[{"id":"a","epoch":1,"colour":"red"}]'"#,
            r#"consumer-group g members='[]'"#,
        ] {
            assert!(Command::parse(bad).is_err(), "{bad}");
        }
    }
}
