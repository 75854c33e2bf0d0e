//! `offsetlab groups --bootstrap-server HOST:PORT --list | --describe --group G`: consumer
//! groups over the Kafka protocol — the lab's listener or a real cluster — with the columns of
//! `kafka-consumer-groups.sh --describe`. A share group is described and reset as
//! `kafka-share-groups.sh` does it (`share_groups_cmd.rs`).

use crate::conn::{Conn, Endpoint};
use crate::consumer_group_describe::{self, ConsumerProtocol};
use crate::exit;
pub use crate::reset_plan::{iso_duration_ms, Spec};
use crate::reset_plan::{targets, Retained};
use crate::topics_cmd::{describe as describe_topics, record_timestamp};
use offsetlab_wire::consumer_protocol;
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, DescribeGroupsRequest, FindCoordinatorRequest, GroupId, ListGroupsRequest, OffsetFetchRequest,
};
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
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
    /// A group that speaks the consumer protocol (KIP-848): its epochs and members.
    #[serde(skip_serializing_if = "Option::is_none")]
    consumer_protocol: Option<ConsumerProtocol>,
}

/// Every broker's groups: a broker lists only the groups it coordinates, so each broker of
/// the cluster is asked, as `kafka-consumer-groups.sh --list` asks them.
fn list(endpoint: &Endpoint) -> anyhow::Result<Vec<(String, String, String)>> {
    let mut conn = endpoint.connect()?;
    let mut groups: Vec<(String, String, String)> = Vec::new();
    for addr in conn.brokers()? {
        let broker = match conn.at(&addr) {
            Ok(b) => b,
            Err(e) => {
                // A broker that went away since the metadata answered (one being fenced).
                crate::style::say_warning!(
                    "the broker at {addr} did not answer ({e}): the groups it coordinates are not listed"
                );
                continue;
            }
        };
        let version = broker.version(ApiKey::ListGroups, 5)?;
        let r = call!(broker, ListGroups, version, ListGroupsRequest::default());
        if MOVING.contains(&r.error_code) {
            // Its coordinators are loading: the groups it will list are not known yet.
            continue;
        }
        anyhow::ensure!(
            r.error_code == 0,
            "ListGroups failed at {addr} with error code {}",
            r.error_code
        );
        groups.extend(r.groups.iter().map(|g| {
            // Before v5 there is no type: a group is a consumer group.
            let kind = if g.group_type.is_empty() {
                "classic"
            } else {
                g.group_type.as_str()
            };
            (
                g.group_id.0.to_string(),
                g.group_state.to_string(),
                kind.to_string(),
            )
        }));
    }
    groups.sort();
    groups.dedup();
    Ok(groups)
}

/// Kafka's answers while a group's coordinator is being created, loaded or moved to another
/// broker: COORDINATOR_LOAD_IN_PROGRESS (14), COORDINATOR_NOT_AVAILABLE (15), NOT_COORDINATOR
/// (16). A new cluster answers so to its first group (`__consumer_offsets` is being created),
/// a cluster whose coordinator's broker failed until another leads its partition.
const MOVING: [i16; 3] = [14, 15, 16];

/// How long a request to a group's coordinator is asked again while the coordinator moves
/// (Kafka's admin client retries until its `default.api.timeout.ms`, 60 s).
const COORDINATOR_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// A request to a group's coordinator answered with one of [`MOVING`]'s codes.
#[derive(Debug)]
struct CoordinatorMoving {
    what: &'static str,
    group: String,
    code: i16,
}

impl std::fmt::Display for CoordinatorMoving {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self.code {
            14 => "COORDINATOR_LOAD_IN_PROGRESS",
            15 => "COORDINATOR_NOT_AVAILABLE",
            _ => "NOT_COORDINATOR",
        };
        write!(
            f,
            "{} for group {} failed with error code {} ({name}) for {}s: the group's coordinator is still being created, loaded or moved",
            self.what,
            self.group,
            self.code,
            COORDINATOR_WAIT.as_secs()
        )
    }
}

impl std::error::Error for CoordinatorMoving {}

/// `code` from the coordinator of `group`: an error to ask again when it is one of [`MOVING`].
pub(crate) fn moving(what: &'static str, group: &str, code: i16) -> anyhow::Result<()> {
    if MOVING.contains(&code) {
        return Err(CoordinatorMoving {
            what,
            group: group.to_string(),
            code,
        }
        .into());
    }
    Ok(())
}

/// Runs `ask` again while the group's coordinator moves ([`MOVING`]), for up to
/// [`COORDINATOR_WAIT`].
fn while_coordinator_moves<T>(mut ask: impl FnMut() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let deadline = std::time::Instant::now() + COORDINATOR_WAIT;
    loop {
        match ask() {
            Err(e) if e.is::<CoordinatorMoving>() && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(250));
            }
            answer => return answer,
        }
    }
}

/// A connection to the broker that coordinates `group` (FindCoordinator).
pub(crate) fn coordinator_of(conn: &mut Conn, group: &str) -> anyhow::Result<Conn> {
    let version = conn.version(ApiKey::FindCoordinator, 3)?;
    let c = call!(
        conn,
        FindCoordinator,
        version,
        FindCoordinatorRequest::default().with_key(StrBytes::from_string(group.to_string())),
    );
    moving("FindCoordinator", group, c.error_code)?;
    anyhow::ensure!(
        c.error_code == 0,
        "FindCoordinator failed with error code {}",
        c.error_code
    );
    conn.open_another(&crate::conn::host_port(c.host.as_str(), c.port))
}

/// The group's committed offsets (OffsetFetch for every partition), `-1` where none is.
fn committed_offsets(coordinator: &mut Conn, group: &str) -> anyhow::Result<BTreeMap<(String, i32), i64>> {
    let version = coordinator.version(ApiKey::OffsetFetch, 7)?;
    let f = call!(
        coordinator,
        OffsetFetch,
        version,
        OffsetFetchRequest::default()
            .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
            .with_topics(None),
    );
    moving("OffsetFetch", group, f.error_code)?;
    let mut committed = BTreeMap::new();
    for t in &f.topics {
        for p in &t.partitions {
            committed.insert((t.name.0.to_string(), p.partition_index), p.committed_offset);
        }
    }
    Ok(committed)
}

/// Each partition's log end offset, for `topics`.
pub(crate) fn log_ends(
    conn: &mut Conn,
    topics: Vec<String>,
) -> anyhow::Result<BTreeMap<(String, i32), Option<i64>>> {
    if topics.is_empty() {
        return Ok(BTreeMap::new());
    }
    Ok(describe_topics(conn, Some(topics), true)?
        .into_iter()
        .flat_map(|t| {
            let topic = t.topic.clone();
            t.partitions
                .into_iter()
                .map(move |p| ((topic.clone(), p.partition), p.log_end_offset))
        })
        .collect())
}

fn describe(endpoint: &Endpoint, group: &str) -> anyhow::Result<GroupDescription> {
    while_coordinator_moves(|| describe_once(endpoint, group))
}

fn describe_once(endpoint: &Endpoint, group: &str) -> anyhow::Result<GroupDescription> {
    let mut conn = endpoint.connect()?;
    // The group's coordinator answers for it.
    let mut coordinator = coordinator_of(&mut conn, group)?;
    // Who owns what: (member id, host, client id) by partition.
    let mut owners: BTreeMap<(String, i32), (String, String, String)> = BTreeMap::new();
    let (state, consumer_protocol) = match consumer_group_describe::describe(&mut coordinator, group)? {
        Some((state, cp)) => {
            for m in &cp.members {
                for tp in &m.assigned {
                    owners.insert(
                        tp.clone(),
                        (m.member_id.clone(), m.host.clone(), m.client_id.clone()),
                    );
                }
            }
            (state, Some(cp))
        }
        None => (classic_owners(&mut coordinator, group, &mut owners)?, None),
    };
    let committed = committed_offsets(&mut coordinator, group)?;
    let rows = describe_rows(&mut conn, group, &committed, &owners)?;
    Ok(GroupDescription {
        group: group.to_string(),
        state,
        rows,
        consumer_protocol,
    })
}

/// A classic group's state, from DescribeGroups; each member's partitions go into `owners`.
fn classic_owners(
    coordinator: &mut Conn,
    group: &str,
    owners: &mut BTreeMap<(String, i32), (String, String, String)>,
) -> anyhow::Result<String> {
    let version = coordinator.version(ApiKey::DescribeGroups, 5)?;
    let d = call!(
        coordinator,
        DescribeGroups,
        version,
        DescribeGroupsRequest::default().with_groups(vec![GroupId(StrBytes::from_string(group.to_string()))]),
    );
    let described = d
        .groups
        .into_iter()
        .next()
        .ok_or_else(|| anyhow::anyhow!("no description of group {group}"))?;
    moving("DescribeGroups", group, described.error_code)?;
    // The classic protocol's assignment of each member, in its "consumer" protocol encoding.
    for m in &described.members {
        for tp in consumer_protocol::assigned_partitions(&m.member_assignment) {
            owners.insert(
                tp,
                (
                    m.member_id.to_string(),
                    m.client_host.to_string(),
                    m.client_id.to_string(),
                ),
            );
        }
    }
    Ok(described.group_state.to_string())
}

/// The rows of `--describe`: every partition the group committed to or a member owns.
fn describe_rows(
    conn: &mut Conn,
    group: &str,
    committed: &BTreeMap<(String, i32), i64>,
    owners: &BTreeMap<(String, i32), (String, String, String)>,
) -> anyhow::Result<Vec<Row>> {
    let mut topics: Vec<String> = committed
        .keys()
        .chain(owners.keys())
        .map(|(t, _)| t.clone())
        .collect();
    topics.sort();
    topics.dedup();
    let ends = log_ends(conn, topics)?;
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
    Ok(rows)
}

/// `--list`: the groups' names (with `--json`, their states too).
fn run_list(endpoint: &Endpoint, json: bool) -> u8 {
    match list(endpoint) {
        Ok(groups) => {
            if json {
                let v: Vec<_> = groups
                    .iter()
                    .map(|(g, s, t)| serde_json::json!({ "group": g, "state": s, "type": t }))
                    .collect();
                println!("{}", serde_json::to_string_pretty(&v).unwrap_or_default());
            } else {
                // A share group is marked: its offsets are start offsets, not commits.
                for (g, _, t) in &groups {
                    if t == "share" {
                        println!("{g} (share group)");
                    } else {
                        println!("{g}");
                    }
                }
            }
            exit::OK
        }
        Err(e) => {
            crate::style::say_error!("{e}");
            exit::IO_ERROR
        }
    }
}

pub fn run(endpoint: &Endpoint, list_groups: bool, group: Option<String>, json: bool) -> u8 {
    if list_groups {
        return run_list(endpoint, json);
    }
    let Some(group) = group else {
        crate::style::say_error!("--describe needs --group G");
        return exit::INVALID_SCENARIO;
    };
    match while_coordinator_moves(|| crate::share_groups_cmd::describe(endpoint, &group)) {
        Ok(Some(share)) => return crate::share_groups_cmd::print(&share, json),
        Ok(None) => {}
        Err(e) => {
            crate::style::say_error!("{e}");
            return exit::IO_ERROR;
        }
    }
    let d = match describe(endpoint, &group) {
        Ok(d) => d,
        Err(e) => {
            crate::style::say_error!("{e}");
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
    print_rows(&d.rows);
    if let Some(cp) = &d.consumer_protocol {
        consumer_group_describe::print(&group, cp);
    }
    exit::OK
}

/// The rows as `kafka-consumer-groups.sh --describe` prints them.
fn print_rows(rows: &[Row]) {
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".into());
    let num = |v: Option<i64>| v.map_or("-".to_string(), |v| v.to_string());
    let table: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
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
    crate::output::table(&header, &table);
}

#[derive(Debug, Serialize)]
struct PlanRow {
    group: String,
    topic: String,
    partition: i32,
    current_offset: Option<i64>,
    new_offset: i64,
    /// Records read again (the new offset is below the current one).
    replayed: i64,
    /// Records skipped (the new offset is above the current one).
    skipped: i64,
    /// The time span of the records replayed or skipped: the first one's and the last one's
    /// timestamps (ms since the epoch), when the range holds records.
    first_timestamp: Option<i64>,
    last_timestamp: Option<i64>,
}

/// `2026-01-01T00:00:05Z … 2026-01-01T00:00:09Z (4s)`, or `-` for no records.
fn span(first: Option<i64>, last: Option<i64>) -> String {
    let at = |ms: i64| {
        humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64),
        )
        .to_string()
    };
    match (first, last) {
        (Some(a), Some(b)) => format!(
            "{} … {} ({})",
            at(a),
            at(b),
            humantime::format_duration(std::time::Duration::from_millis((b - a).max(0) as u64))
        ),
        _ => "-".to_string(),
    }
}

/// `--reset-offsets`: refused for an active group with Kafka's own message; a dry run by default,
/// committing with `--execute` (as a client outside the group: generation −1, no member id).
pub fn reset(
    endpoint: &Endpoint,
    group: &str,
    topics: &[String],
    all_topics: bool,
    spec: Spec,
    execute: bool,
    json: bool,
) -> u8 {
    match while_coordinator_moves(|| crate::share_groups_cmd::describe(endpoint, group)) {
        Ok(Some(share)) => {
            return crate::share_groups_cmd::reset(endpoint, &share, topics, all_topics, &spec, execute, json)
        }
        Ok(None) => {}
        Err(e) => {
            crate::style::say_error!("{e}");
            return exit::IO_ERROR;
        }
    }
    match plan_reset(endpoint, group, topics, all_topics, &spec, execute) {
        Ok(Err(message)) => {
            eprintln!("{message}");
            exit::INVALID_SCENARIO
        }
        Ok(Ok(rows)) => {
            if json {
                println!("{}", serde_json::to_string_pretty(&rows).unwrap_or_default());
                return exit::OK;
            }
            if !execute {
                println!("(a dry run: nothing was changed; --execute applies it)");
            }
            println!();
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    vec![
                        r.group.clone(),
                        r.topic.clone(),
                        r.partition.to_string(),
                        r.current_offset.map_or("-".to_string(), |c| c.to_string()),
                        r.new_offset.to_string(),
                        r.replayed.to_string(),
                        r.skipped.to_string(),
                        span(r.first_timestamp, r.last_timestamp),
                    ]
                })
                .collect();
            crate::output::table(
                &[
                    "GROUP",
                    "TOPIC",
                    "PARTITION",
                    "CURRENT-OFFSET",
                    "NEW-OFFSET",
                    "REPLAYED",
                    "SKIPPED",
                    "TIME-SPAN",
                ],
                &table,
            );
            exit::OK
        }
        Err(e) => {
            crate::style::say_error!("{e}");
            exit::IO_ERROR
        }
    }
}

type Plan = Result<Vec<PlanRow>, String>;

fn plan_reset(
    endpoint: &Endpoint,
    group: &str,
    topics: &[String],
    all_topics: bool,
    spec: &Spec,
    execute: bool,
) -> anyhow::Result<Plan> {
    let description = describe(endpoint, group)?;
    if !matches!(description.state.as_str(), "Empty" | "Dead") {
        return Ok(Err(format!(
            "Error: Assignments can only be reset if the group '{group}' is inactive, but the current state is {}.",
            description.state
        )));
    }
    let mut conn = endpoint.connect()?;
    let committed: BTreeMap<(String, i32), i64> = description
        .rows
        .iter()
        .filter_map(|r| r.current_offset.map(|c| ((r.topic.clone(), r.partition), c)))
        .collect();
    let planned = targets(
        &mut conn,
        topics,
        all_topics,
        spec,
        &committed,
        |topic, partition| {
            format!("Error: cannot shift offset for {topic}-{partition} since there is no current committed offset")
        },
    )?;
    let planned = match planned {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let mut rows = Vec::new();
    for t in planned {
        rows.push(plan_row(&mut conn, group, t.retained, t.current, t.target)?);
    }
    if execute {
        if let Some(refused) = while_coordinator_moves(|| commit_plan(&mut conn, group, &rows))? {
            return Ok(Err(refused));
        }
    }
    Ok(Ok(rows))
}

/// One partition's row: the target clamped to the retained range, and the records between the
/// old and the new position as times — what the move replays or skips, in the words an on-call
/// engineer thinks in ("the last six hours").
fn plan_row(
    conn: &mut Conn,
    group: &str,
    (topic, partition, start, end): Retained,
    current: Option<i64>,
    target: i64,
) -> anyhow::Result<PlanRow> {
    let new_offset = target.clamp(start, end);
    let from = current.unwrap_or(new_offset);
    let (lo, hi) = (from.min(new_offset).max(start), from.max(new_offset).min(end));
    let (first_timestamp, last_timestamp) = if lo < hi {
        (
            record_timestamp(conn, &topic, partition, lo)?,
            record_timestamp(conn, &topic, partition, hi - 1)?,
        )
    } else {
        (None, None)
    };
    Ok(PlanRow {
        first_timestamp,
        last_timestamp,
        group: group.to_string(),
        topic,
        partition,
        current_offset: current,
        new_offset,
        replayed: (from - new_offset).max(0),
        skipped: (new_offset - from).max(0),
    })
}

/// `--execute`: the plan committed from outside the group (generation −1, no member id), as
/// `kafka-consumer-groups.sh` commits it; the refusal, if the coordinator refused it.
fn commit_plan(conn: &mut Conn, group: &str, rows: &[PlanRow]) -> anyhow::Result<Option<String>> {
    use offsetlab_wire::kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use offsetlab_wire::kafka_protocol::messages::{OffsetCommitRequest, TopicName};
    let mut by_topic: BTreeMap<String, Vec<(i32, i64)>> = BTreeMap::new();
    for r in rows {
        by_topic
            .entry(r.topic.clone())
            .or_default()
            .push((r.partition, r.new_offset));
    }
    let mut coordinator = coordinator_of(conn, group)?;
    let version = coordinator.version(ApiKey::OffsetCommit, 7)?;
    let topics = by_topic
        .into_iter()
        .map(|(t, ps)| {
            OffsetCommitRequestTopic::default()
                .with_name(TopicName(StrBytes::from_string(t)))
                .with_partitions(
                    ps.into_iter()
                        .map(|(p, o)| {
                            OffsetCommitRequestPartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(o)
                        })
                        .collect(),
                )
        })
        .collect();
    let request = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.to_string())))
        .with_generation_id_or_member_epoch(-1)
        .with_member_id(StrBytes::from_static_str(""))
        .with_retention_time_ms(-1)
        .with_topics(topics);
    let r = call!(coordinator, OffsetCommit, version, request);
    for p in r.topics.iter().flat_map(|t| t.partitions.iter()) {
        moving("OffsetCommit", group, p.error_code)?;
    }
    Ok(r.topics
        .iter()
        .flat_map(|t| t.partitions.iter())
        .map(|p| p.error_code)
        .find(|&c| c != 0)
        .map(|code| format!("Error: the commit was refused with error code {code}")))
}
