//! `offsetlab groups` for a share group (KIP-932), as `kafka-share-groups.sh` shows and moves
//! one: `--describe` asks ShareGroupDescribe (its state and members) and
//! DescribeShareGroupOffsets (each partition's start offset, the SPSO); `--reset-offsets` plans
//! new start offsets from the log (ListOffsets) and, with `--execute`, sends
//! AlterShareGroupOffsets — refused unless the group is Empty, as Kafka refuses it.
//!
//! A share group has no committed offsets: what the tool shows and moves in their place is where
//! each share partition's in-flight window starts. Records before it are delivery-complete;
//! moving it back hands them out again, moving it forward skips them.

use crate::conn::{Conn, Endpoint};
use crate::exit;
use crate::groups_cmd::{coordinator_of, log_ends, moving};
use crate::reset_plan::{targets, Spec, Target};
use offsetlab_wire::kafka_protocol::messages::alter_share_group_offsets_request::{
    AlterShareGroupOffsetsRequestPartition, AlterShareGroupOffsetsRequestTopic,
};
use offsetlab_wire::kafka_protocol::messages::describe_share_group_offsets_request::DescribeShareGroupOffsetsRequestGroup;
use offsetlab_wire::kafka_protocol::messages::{
    AlterShareGroupOffsetsRequest, ApiKey, DescribeShareGroupOffsetsRequest, GroupId,
    ShareGroupDescribeRequest, TopicName,
};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use serde::Serialize;
use std::collections::BTreeMap;

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// One partition of a share group: where its window starts, and the log's end beside it.
#[derive(Debug, Serialize)]
pub(crate) struct ShareRow {
    group: String,
    topic: String,
    partition: i32,
    /// The share-partition start offset; none where the group has not started the partition.
    start_offset: Option<i64>,
    log_end_offset: Option<i64>,
    /// The members the share assignor gives this partition (several may share one).
    consumers: usize,
}

#[derive(Debug, Serialize)]
pub(crate) struct ShareMemberRow {
    member_id: String,
    member_epoch: i32,
    host: String,
    client_id: String,
    assignment: Vec<(String, i32)>,
}

#[derive(Debug, Serialize)]
pub(crate) struct ShareDescription {
    group: String,
    #[serde(rename = "type")]
    kind: &'static str,
    state: String,
    group_epoch: i32,
    rows: Vec<ShareRow>,
    members: Vec<ShareMemberRow>,
}

/// The share group `group`, or `None` when it is no share group (a consumer group, or none).
pub(crate) fn describe(endpoint: &Endpoint, group: &str) -> anyhow::Result<Option<ShareDescription>> {
    let mut conn = endpoint.connect()?;
    let Ok(version) = conn.version(ApiKey::ShareGroupDescribe, 1) else {
        return Ok(None); // a broker without share groups
    };
    let mut coordinator = coordinator_of(&mut conn, group)?;
    let r = call!(
        coordinator,
        ShareGroupDescribe,
        version,
        ShareGroupDescribeRequest::default().with_group_ids(vec![GroupId(text(group))]),
    );
    let Some(g) = r.groups.into_iter().next() else {
        anyhow::bail!("no description of group {group} in the ShareGroupDescribe answer");
    };
    moving("ShareGroupDescribe", group, g.error_code)?;
    // GROUP_ID_NOT_FOUND: a consumer group, or none. Any other refusal — UNSUPPORTED_VERSION
    // from a Kafka 4.1 whose share groups are off (it still lists the API), an authorization
    // error — says nothing about a consumer group either: the consumer-group path answers.
    if g.error_code != 0 {
        return Ok(None);
    }
    let members: Vec<ShareMemberRow> = g
        .members
        .iter()
        .map(|m| {
            let mut assignment: Vec<(String, i32)> = m
                .assignment
                .topic_partitions
                .iter()
                .flat_map(|t| t.partitions.iter().map(|&p| (t.topic_name.to_string(), p)))
                .collect();
            assignment.sort();
            ShareMemberRow {
                member_id: m.member_id.to_string(),
                member_epoch: m.member_epoch,
                host: m.client_host.to_string(),
                client_id: m.client_id.to_string(),
                assignment,
            }
        })
        .collect();
    let starts = start_offsets(&mut coordinator, group)?;
    let mut consumers: BTreeMap<(String, i32), usize> = BTreeMap::new();
    for m in &members {
        for tp in &m.assignment {
            *consumers.entry(tp.clone()).or_default() += 1;
        }
    }
    let mut keys: Vec<(String, i32)> = starts.keys().chain(consumers.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    let mut topics: Vec<String> = keys.iter().map(|(t, _)| t.clone()).collect();
    topics.dedup();
    let ends = log_ends(&mut conn, topics)?;
    let rows = keys
        .into_iter()
        .map(|(topic, partition)| {
            let key = (topic.clone(), partition);
            ShareRow {
                group: group.to_string(),
                start_offset: starts.get(&key).copied().filter(|&o| o >= 0),
                log_end_offset: ends.get(&key).copied().flatten(),
                consumers: consumers.get(&key).copied().unwrap_or(0),
                topic,
                partition,
            }
        })
        .collect();
    Ok(Some(ShareDescription {
        group: group.to_string(),
        kind: "share",
        state: g.group_state.to_string(),
        group_epoch: g.group_epoch,
        rows,
        members,
    }))
}

/// Each partition's start offset (DescribeShareGroupOffsets, every partition the group reads).
fn start_offsets(coordinator: &mut Conn, group: &str) -> anyhow::Result<BTreeMap<(String, i32), i64>> {
    let Ok(version) = coordinator.version(ApiKey::DescribeShareGroupOffsets, 0) else {
        return Ok(BTreeMap::new()); // a broker that describes share groups but not their offsets
    };
    let r = call!(
        coordinator,
        DescribeShareGroupOffsets,
        version,
        DescribeShareGroupOffsetsRequest::default().with_groups(vec![
            DescribeShareGroupOffsetsRequestGroup::default()
                .with_group_id(GroupId(text(group)))
                .with_topics(None)
        ]),
    );
    let mut out = BTreeMap::new();
    for g in r.groups {
        moving("DescribeShareGroupOffsets", group, g.error_code)?;
        anyhow::ensure!(
            g.error_code == 0,
            "DescribeShareGroupOffsets for group {group} failed with error code {}",
            g.error_code
        );
        for t in g.topics {
            for p in t.partitions {
                out.insert((t.topic_name.to_string(), p.partition_index), p.start_offset);
            }
        }
    }
    Ok(out)
}

/// `--describe` of a share group, as `kafka-share-groups.sh --describe` and `--members` print it.
pub(crate) fn print(d: &ShareDescription, json: bool) -> u8 {
    if json {
        println!("{}", serde_json::to_string_pretty(d).unwrap_or_default());
        return exit::OK;
    }
    let num = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    println!(
        "\nShare group '{}' is {} (group epoch {}): each record is acquired by one member, and the start offset is where its in-flight window begins.",
        d.group, d.state, d.group_epoch
    );
    if d.rows.is_empty() {
        println!("\nShare group '{}' has no offset information.", d.group);
    } else {
        let rows: Vec<Vec<String>> = d
            .rows
            .iter()
            .map(|r| {
                vec![
                    r.group.clone(),
                    r.topic.clone(),
                    r.partition.to_string(),
                    num(r.start_offset),
                    num(r.log_end_offset),
                    r.consumers.to_string(),
                ]
            })
            .collect();
        println!();
        crate::output::table(
            &[
                "GROUP",
                "TOPIC",
                "PARTITION",
                "START-OFFSET",
                "LOG-END-OFFSET",
                "CONSUMERS",
            ],
            &rows,
        );
    }
    if d.members.is_empty() {
        println!("\nShare group '{}' has no active members.", d.group);
        return exit::OK;
    }
    let rows: Vec<Vec<String>> = d
        .members
        .iter()
        .map(|m| {
            let assignment = if m.assignment.is_empty() {
                "-".to_string()
            } else {
                m.assignment
                    .iter()
                    .map(|(t, p)| format!("{t}:{p}"))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            vec![
                m.member_id.clone(),
                m.member_epoch.to_string(),
                m.host.clone(),
                m.client_id.clone(),
                m.assignment.len().to_string(),
                assignment,
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
            "#PARTITIONS",
            "ASSIGNMENT",
        ],
        &rows,
    );
    exit::OK
}

/// One partition a reset moves.
#[derive(Debug, Serialize)]
pub(crate) struct ShareResetRow {
    group: String,
    topic: String,
    partition: i32,
    start_offset: Option<i64>,
    new_offset: i64,
    /// The broker's error for this partition when `--execute` sent it (none: moved).
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

/// `--reset-offsets` of a share group: refused unless it is Empty; new start offsets within the
/// retained log; a dry run unless `execute`.
pub(crate) fn reset(
    endpoint: &Endpoint,
    d: &ShareDescription,
    topics: &[String],
    all_topics: bool,
    spec: &Spec,
    execute: bool,
    json: bool,
) -> u8 {
    if d.state != "Empty" {
        eprintln!(
            "Error: Share group '{}' is not empty ({}): stop or close its consumers first; a share group's start offsets move only while nobody reads with them.",
            d.group, d.state
        );
        return exit::INVALID_SCENARIO;
    }
    let rows = match plan(endpoint, d, topics, all_topics, spec, execute) {
        Ok(Ok(rows)) => rows,
        Ok(Err(message)) => {
            eprintln!("{message}");
            return exit::INVALID_SCENARIO;
        }
        Err(e) => {
            crate::style::say_error!("{e}");
            return exit::IO_ERROR;
        }
    };
    let failed = rows.iter().any(|r| r.error.is_some());
    if json {
        println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
    } else {
        if !execute {
            println!("(a dry run: nothing was changed; --execute applies it)");
        }
        let table: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                vec![
                    r.group.clone(),
                    r.topic.clone(),
                    r.partition.to_string(),
                    r.start_offset.map_or("-".to_string(), |o| o.to_string()),
                    r.new_offset.to_string(),
                    r.error.clone().unwrap_or_else(|| "-".to_string()),
                ]
            })
            .collect();
        println!();
        crate::output::table(
            &[
                "GROUP",
                "TOPIC",
                "PARTITION",
                "START-OFFSET",
                "NEW-OFFSET",
                "ERROR",
            ],
            &table,
        );
    }
    if failed {
        exit::IO_ERROR
    } else {
        exit::OK
    }
}

fn plan(
    endpoint: &Endpoint,
    d: &ShareDescription,
    topics: &[String],
    all_topics: bool,
    spec: &Spec,
    execute: bool,
) -> anyhow::Result<Result<Vec<ShareResetRow>, String>> {
    let mut conn = endpoint.connect()?;
    let starts: BTreeMap<(String, i32), i64> = d
        .rows
        .iter()
        .filter_map(|r| r.start_offset.map(|o| ((r.topic.clone(), r.partition), o)))
        .collect();
    let planned = targets(
        &mut conn,
        topics,
        all_topics,
        spec,
        &starts,
        |topic, partition| {
            format!("Error: cannot shift the start offset of {topic}-{partition}: the group has not started reading it")
        },
    )?;
    let planned = match planned {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let mut rows = Vec::new();
    for Target {
        retained: (topic, partition, log_start, log_end),
        current: start,
        target,
    } in planned
    {
        rows.push(ShareResetRow {
            group: d.group.clone(),
            new_offset: target.clamp(log_start, log_end.max(log_start)),
            start_offset: start,
            error: None,
            topic,
            partition,
        });
    }
    if execute {
        if let Some(refused) = alter(&mut conn, &d.group, &mut rows)? {
            return Ok(Err(refused));
        }
    }
    Ok(Ok(rows))
}

/// AlterShareGroupOffsets with the plan; each partition's error goes into its row. A refusal of
/// the whole request comes back as its message.
fn alter(conn: &mut Conn, group: &str, rows: &mut [ShareResetRow]) -> anyhow::Result<Option<String>> {
    let mut coordinator = coordinator_of(conn, group)?;
    let version = coordinator.version(ApiKey::AlterShareGroupOffsets, 0)?;
    let mut topics: Vec<AlterShareGroupOffsetsRequestTopic> = Vec::new();
    for r in rows.iter() {
        let p = AlterShareGroupOffsetsRequestPartition::default()
            .with_partition_index(r.partition)
            .with_start_offset(r.new_offset);
        match topics.iter_mut().find(|t| t.topic_name.as_str() == r.topic) {
            Some(t) => t.partitions.push(p),
            None => topics.push(
                AlterShareGroupOffsetsRequestTopic::default()
                    .with_topic_name(TopicName(text(&r.topic)))
                    .with_partitions(vec![p]),
            ),
        }
    }
    let answer = call!(
        coordinator,
        AlterShareGroupOffsets,
        version,
        AlterShareGroupOffsetsRequest::default()
            .with_group_id(GroupId(text(group)))
            .with_topics(topics),
    );
    moving("AlterShareGroupOffsets", group, answer.error_code)?;
    if answer.error_code != 0 {
        return Ok(Some(format!(
            "Error: AlterShareGroupOffsets failed with error code {}{}",
            answer.error_code,
            answer.error_message.map(|m| format!(": {m}")).unwrap_or_default()
        )));
    }
    for t in &answer.responses {
        for p in &t.partitions {
            if p.error_code == 0 {
                continue;
            }
            if let Some(r) = rows
                .iter_mut()
                .find(|r| r.topic == t.topic_name.as_str() && r.partition == p.partition_index)
            {
                r.error = Some(format!(
                    "error code {}{}",
                    p.error_code,
                    p.error_message
                        .as_ref()
                        .map(|m| format!(": {m}"))
                        .unwrap_or_default()
                ));
            }
        }
    }
    Ok(None)
}
