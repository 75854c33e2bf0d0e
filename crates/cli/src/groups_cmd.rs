//! `offsetlab groups --bootstrap-server HOST:PORT --list | --describe --group G`: consumer
//! groups over the Kafka protocol — the lab's listener or a real cluster — with the columns of
//! `kafka-consumer-groups.sh --describe`.

use crate::exit;
use crate::topics_cmd::{describe as describe_topics, Conn};
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, ConsumerProtocolAssignment, DescribeGroupsRequest, FindCoordinatorRequest, GroupId,
    ListGroupsRequest, OffsetFetchRequest, RequestKind, ResponseKind,
};
use offsetlab_wire::kafka_protocol::protocol::{Decodable, StrBytes};
use serde::Serialize;
use std::collections::BTreeMap;

/// One row of `--describe`.
#[derive(Debug, Serialize)]
struct Row {
    group: String,
    topic: String,
    partition: i32,
    current_offset: Option<i64>,
    log_end_offset: Option<i64>,
    lag: Option<i64>,
    consumer_id: Option<String>,
    host: Option<String>,
    client_id: Option<String>,
}

#[derive(Debug, Serialize)]
struct GroupDescription {
    group: String,
    state: String,
    rows: Vec<Row>,
}

fn list(bootstrap: &str) -> anyhow::Result<Vec<(String, String)>> {
    let mut conn = Conn::open(bootstrap)?;
    let version = conn.version(ApiKey::ListGroups, 4)?;
    let ResponseKind::ListGroups(r) = conn.call(
        ApiKey::ListGroups,
        version,
        &RequestKind::ListGroups(ListGroupsRequest::default()),
    )?
    else {
        anyhow::bail!("the broker answered ListGroups with something else");
    };
    anyhow::ensure!(
        r.error_code == 0,
        "ListGroups failed with error code {}",
        r.error_code
    );
    let mut groups: Vec<(String, String)> = r
        .groups
        .iter()
        .map(|g| (g.group_id.0.to_string(), g.group_state.to_string()))
        .collect();
    groups.sort();
    Ok(groups)
}

fn describe(bootstrap: &str, group: &str) -> anyhow::Result<GroupDescription> {
    let mut conn = Conn::open(bootstrap)?;
    // The group's coordinator answers for it.
    let version = conn.version(ApiKey::FindCoordinator, 3)?;
    let ResponseKind::FindCoordinator(c) = conn.call(
        ApiKey::FindCoordinator,
        version,
        &RequestKind::FindCoordinator(
            FindCoordinatorRequest::default().with_key(StrBytes::from_string(group.to_string())),
        ),
    )?
    else {
        anyhow::bail!("the broker answered FindCoordinator with something else");
    };
    anyhow::ensure!(
        c.error_code == 0,
        "FindCoordinator failed with error code {}",
        c.error_code
    );
    let mut coordinator = Conn::open(&format!("{}:{}", c.host.as_str(), c.port))?;
    let version = coordinator.version(ApiKey::DescribeGroups, 5)?;
    let ResponseKind::DescribeGroups(d) = coordinator.call(
        ApiKey::DescribeGroups,
        version,
        &RequestKind::DescribeGroups(
            DescribeGroupsRequest::default()
                .with_groups(vec![GroupId(StrBytes::from_string(group.to_string()))]),
        ),
    )?
    else {
        anyhow::bail!("the broker answered DescribeGroups with something else");
    };
    let described = d
        .groups
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no description of group {group}"))?;
    // Who owns what: the consumer protocol's assignment of each member.
    let mut owners: BTreeMap<(String, i32), (String, String, String)> = BTreeMap::new();
    for m in &described.members {
        let mut bytes = m.member_assignment.clone();
        if bytes.len() < 2 {
            continue;
        }
        let version = i16::from_be_bytes([bytes[0], bytes[1]]);
        let _ = bytes::Buf::get_i16(&mut bytes);
        let Ok(assignment) = ConsumerProtocolAssignment::decode(&mut bytes, version) else {
            continue;
        };
        for tp in assignment.assigned_partitions {
            for p in tp.partitions {
                owners.insert(
                    (tp.topic.0.to_string(), p),
                    (
                        m.member_id.to_string(),
                        m.client_host.to_string(),
                        m.client_id.to_string(),
                    ),
                );
            }
        }
    }
    let version = coordinator.version(ApiKey::OffsetFetch, 7)?;
    let ResponseKind::OffsetFetch(f) = coordinator.call(
        ApiKey::OffsetFetch,
        version,
        &RequestKind::OffsetFetch(
            OffsetFetchRequest::default()
                .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
                .with_topics(None),
        ),
    )?
    else {
        anyhow::bail!("the broker answered OffsetFetch with something else");
    };
    let mut committed: BTreeMap<(String, i32), i64> = BTreeMap::new();
    for t in &f.topics {
        for p in &t.partitions {
            committed.insert((t.name.0.to_string(), p.partition_index), p.committed_offset);
        }
    }
    let mut topics: Vec<String> = committed
        .keys()
        .chain(owners.keys())
        .map(|(t, _)| t.clone())
        .collect();
    topics.sort();
    topics.dedup();
    let ends: BTreeMap<(String, i32), Option<i64>> = if topics.is_empty() {
        BTreeMap::new()
    } else {
        describe_topics(&mut conn, Some(topics), true)?
            .into_iter()
            .flat_map(|t| {
                let topic = t.topic.clone();
                t.partitions
                    .into_iter()
                    .map(move |p| ((topic.clone(), p.partition), p.log_end_offset))
            })
            .collect()
    };
    let mut keys: Vec<(String, i32)> = committed.keys().chain(owners.keys()).cloned().collect();
    keys.sort();
    keys.dedup();
    let rows = keys
        .into_iter()
        .map(|(topic, partition)| {
            let current = committed
                .get(&(topic.clone(), partition))
                .copied()
                .filter(|&o| o >= 0);
            let end = ends.get(&(topic.clone(), partition)).copied().flatten();
            let owner = owners.get(&(topic.clone(), partition));
            Row {
                group: group.to_string(),
                lag: match (current, end) {
                    (Some(c), Some(e)) => Some(e - c),
                    _ => None,
                },
                topic,
                partition,
                current_offset: current,
                log_end_offset: end,
                consumer_id: owner.map(|o| o.0.clone()),
                host: owner.map(|o| o.1.clone()),
                client_id: owner.map(|o| o.2.clone()),
            }
        })
        .collect();
    Ok(GroupDescription {
        group: group.to_string(),
        state: described.group_state.to_string(),
        rows,
    })
}

pub fn run(bootstrap: &str, list_groups: bool, group: Option<String>, json: bool) -> u8 {
    if list_groups {
        return match list(bootstrap) {
            Ok(groups) => {
                if json {
                    let v: Vec<_> = groups
                        .iter()
                        .map(|(g, s)| serde_json::json!({ "group": g, "state": s }))
                        .collect();
                    println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
                } else {
                    for (g, _) in &groups {
                        println!("{g}");
                    }
                }
                exit::OK
            }
            Err(e) => {
                eprintln!("error: {e}");
                exit::IO_ERROR
            }
        };
    }
    let Some(group) = group else {
        eprintln!("error: --describe needs --group G");
        return exit::INVALID_SCENARIO;
    };
    let d = match describe(bootstrap, &group) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            return exit::IO_ERROR;
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&d).unwrap_or_default());
        return exit::OK;
    }
    if d.state == "Dead" {
        eprintln!("Error: Consumer group '{group}' does not exist.");
        return exit::INVALID_SCENARIO;
    }
    if d.state == "Empty" {
        println!("\nConsumer group '{group}' has no active members.");
    }
    println!();
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let num = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let table: Vec<[String; 9]> = d
        .rows
        .iter()
        .map(|r| {
            [
                r.group.clone(),
                r.topic.clone(),
                r.partition.to_string(),
                num(r.current_offset),
                num(r.log_end_offset),
                num(r.lag),
                dash(&r.consumer_id),
                dash(&r.host),
                dash(&r.client_id),
            ]
        })
        .collect();
    let header = [
        "GROUP",
        "TOPIC",
        "PARTITION",
        "CURRENT-OFFSET",
        "LOG-END-OFFSET",
        "LAG",
        "CONSUMER-ID",
        "HOST",
        "CLIENT-ID",
    ];
    let widths: Vec<usize> = (0..9)
        .map(|i| {
            table
                .iter()
                .map(|r| r[i].len())
                .max()
                .unwrap_or(0)
                .max(header[i].len())
        })
        .collect();
    let line = |cells: Vec<&str>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join(" ")
            .trim_end()
            .to_string()
    };
    println!("{}", line(header.to_vec()));
    for r in &table {
        println!("{}", line(r.iter().map(String::as_str).collect()));
    }
    exit::OK
}
