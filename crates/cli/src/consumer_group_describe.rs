//! `groups --describe` of a group that speaks the consumer protocol (KIP-848, Kafka 4): asked
//! with ConsumerGroupDescribe, as Kafka's admin client asks first.
//!
//! DescribeGroups answers for classic groups only: to it, a KIP-848 group does not exist
//! (GROUP_ID_NOT_FOUND), though `--list` shows it Stable. ConsumerGroupDescribe answers the
//! other way round — GROUP_ID_NOT_FOUND for a classic group or none — so it is asked first
//! where the coordinator serves it, and DescribeGroups decides otherwise (the lab's listener,
//! which speaks only the classic protocol, and every Kafka before 4.0). What it adds is what the
//! protocol is about: the group's epoch, the epoch of the assignment it computed, and each
//! member's epoch with what it owns and what it is being moved towards.

use crate::conn::Conn;
use offsetlab_wire::kafka_protocol::messages::{ApiKey, ConsumerGroupDescribeRequest, GroupId};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use serde::Serialize;

/// GROUP_ID_NOT_FOUND: a classic group, or no group at all.
const GROUP_ID_NOT_FOUND: i16 = 69;

/// A consumer-protocol group as ConsumerGroupDescribe tells it.
#[derive(Debug, Serialize)]
pub(crate) struct ConsumerProtocol {
    /// Bumped by the coordinator whenever the group's membership or subscriptions change.
    pub group_epoch: i32,
    /// The group epoch the current target assignment was computed at.
    pub assignment_epoch: i32,
    /// The server-side assignor (`uniform`, `range`).
    pub assignor: String,
    pub members: Vec<MemberEpoch>,
}

/// One member: its epoch, what it owns and what the target assignment gives it. A member
/// whose epoch is behind the group's is still reconciling: releasing what it must give up,
/// waiting for what another member still owns.
#[derive(Debug, Serialize)]
pub(crate) struct MemberEpoch {
    pub member_id: String,
    pub member_epoch: i32,
    pub client_id: String,
    pub host: String,
    /// `topic-partition` names it owns now.
    pub assigned: Vec<(String, i32)>,
    /// What the group's target assignment gives it.
    pub target: Vec<(String, i32)>,
}

/// The group's state and what the consumer protocol says of it; `None` when the coordinator
/// does not serve ConsumerGroupDescribe or the group is not a consumer-protocol group.
pub(crate) fn describe(
    coordinator: &mut Conn,
    group: &str,
) -> anyhow::Result<Option<(String, ConsumerProtocol)>> {
    let Ok(version) = coordinator.version(ApiKey::ConsumerGroupDescribe, 1) else {
        return Ok(None);
    };
    let r = call!(
        coordinator,
        ConsumerGroupDescribe,
        version,
        ConsumerGroupDescribeRequest::default()
            .with_group_ids(vec![GroupId(StrBytes::from_string(group.to_string()))]),
    );
    let Some(g) = r.groups.into_iter().next() else {
        anyhow::bail!("no description of group {group} in the ConsumerGroupDescribe answer");
    };
    crate::groups_cmd::moving("ConsumerGroupDescribe", group, g.error_code)?;
    if g.error_code == GROUP_ID_NOT_FOUND {
        return Ok(None);
    }
    anyhow::ensure!(
        g.error_code == 0,
        "ConsumerGroupDescribe for group {group} failed with error code {}{}",
        g.error_code,
        g.error_message.map(|m| format!(": {m}")).unwrap_or_default()
    );
    let partitions =
        |a: &offsetlab_wire::kafka_protocol::messages::consumer_group_describe_response::Assignment| {
            let mut tps: Vec<(String, i32)> = a
                .topic_partitions
                .iter()
                .flat_map(|t| t.partitions.iter().map(|&p| (t.topic_name.to_string(), p)))
                .collect();
            tps.sort();
            tps
        };
    let members = g
        .members
        .iter()
        .map(|m| MemberEpoch {
            member_id: m.member_id.to_string(),
            member_epoch: m.member_epoch,
            client_id: m.client_id.to_string(),
            host: m.client_host.to_string(),
            assigned: partitions(&m.assignment),
            target: partitions(&m.target_assignment),
        })
        .collect();
    Ok(Some((
        g.group_state.to_string(),
        ConsumerProtocol {
            group_epoch: g.group_epoch,
            assignment_epoch: g.assignment_epoch,
            assignor: g.assignor_name.to_string(),
            members,
        },
    )))
}

/// The members' epochs as a table, under `--describe`'s offsets.
pub(crate) fn print(group: &str, cp: &ConsumerProtocol) {
    println!(
        "\nConsumer group '{group}' speaks the consumer protocol (KIP-848): group epoch {}, assignment epoch {}, assignor {}.",
        cp.group_epoch, cp.assignment_epoch, cp.assignor
    );
    let names = |tps: &[(String, i32)]| {
        if tps.is_empty() {
            "-".to_string()
        } else {
            tps.iter()
                .map(|(t, p)| format!("{t}-{p}"))
                .collect::<Vec<_>>()
                .join(",")
        }
    };
    let rows: Vec<Vec<String>> = cp
        .members
        .iter()
        .map(|m| {
            vec![
                m.member_id.clone(),
                m.member_epoch.to_string(),
                m.host.clone(),
                m.client_id.clone(),
                names(&m.assigned),
                names(&m.target),
            ]
        })
        .collect();
    println!();
    crate::output::table(
        &[
            "CONSUMER-ID",
            "MEMBER-EPOCH",
            "HOST",
            "CLIENT-ID",
            "ASSIGNED",
            "TARGET",
        ],
        &rows,
    );
}

/// What `offsetlab run/explore/serve --bootstrap-server` is handed to read a consumer-protocol
/// group's epochs ([`offsetlab_cluster::consumer_group::DescribeConsumerGroup`]): the run's
/// clients are librdkafka's, which keeps epochs to itself; this admin client asks the group's
/// coordinator, with the run's connection properties.
pub(crate) fn for_run(
    bootstrap: &str,
    extra: &[(String, String)],
    group: &str,
) -> Result<Option<offsetlab_cluster::consumer_group::ConsumerGroupDescription>, String> {
    use offsetlab_cluster::consumer_group::{ConsumerGroupDescription, MemberDescription};
    let endpoint = crate::conn::Endpoint {
        bootstrap: bootstrap.to_string(),
        security: crate::conn::Security::from_properties(extra)?,
    };
    let ask = || -> anyhow::Result<Option<(String, ConsumerProtocol)>> {
        let mut conn = endpoint.connect()?;
        let mut coordinator = crate::groups_cmd::coordinator_of(&mut conn, group)?;
        describe(&mut coordinator, group)
    };
    let described = ask().map_err(|e| format!("{e:#}"))?;
    Ok(described.map(|(state, cp)| ConsumerGroupDescription {
        state,
        group_epoch: cp.group_epoch,
        assignment_epoch: cp.assignment_epoch,
        members: cp
            .members
            .into_iter()
            .map(|m| MemberDescription {
                member_id: m.member_id,
                client_id: m.client_id,
                member_epoch: m.member_epoch,
                assigned: m.assigned,
                target: m.target,
            })
            .collect(),
    }))
}
