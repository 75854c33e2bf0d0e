//! The Kafka listener: real Kafka clients read and write the lab's logs.
//!
//! kcat, a confluent-kafka or kafka-python producer or consumer, or a Java service can produce
//! into the lab (records land in its log, its history and on the page — [`produce`]), consume
//! what it holds from any offset with either isolation level, look offsets up by time, and see
//! and reset the lab's consumer groups. Groups of external consumers (JoinGroup, SyncGroup,
//! Heartbeat) and transactional producers come next (see the closing notes of issue 6).
//!
//! Each connection is a task: frames are split with a size limit checked before allocation
//! ([`offsetlab_wire::frame`]), decoded, answered in order. A malformed frame, an unknown API or an
//! unserved version of any API but ApiVersions closes that connection and nothing else, as a
//! Kafka broker does. The lab is read under the session's lock on a blocking thread.

mod admin;
mod change;
mod coordinator;
mod deletion;
mod produce;
mod producers;
mod transactions;

use crate::api::AppState;
use bytes::{Bytes, BytesMut};
use offsetlab_engine::lab::ResetSpec;
use offsetlab_engine::record::TopicPartition;
use offsetlab_engine::txn::IsolationLevel;
use offsetlab_engine::LabError;
use offsetlab_lab::session::Session;
use offsetlab_scenario::command::{Command, ResetOffsets};
use offsetlab_wire::frame::{bytes_wanted, split_frame, DEFAULT_MAX_FRAME};
use offsetlab_wire::kafka_protocol::messages::consumer_protocol_assignment::TopicPartition as AssignedTopicPartition;
use offsetlab_wire::kafka_protocol::messages::describe_groups_response::{
    DescribedGroup, DescribedGroupMember,
};
use offsetlab_wire::kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use offsetlab_wire::kafka_protocol::messages::leave_group_response::MemberResponse;
use offsetlab_wire::kafka_protocol::messages::list_groups_response::ListedGroup;
use offsetlab_wire::kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use offsetlab_wire::kafka_protocol::messages::metadata_response::{
    MetadataResponseBroker, MetadataResponsePartition, MetadataResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponsePartition, OffsetFetchResponseTopic,
};
use offsetlab_wire::kafka_protocol::messages::{
    ApiKey, BrokerId, FetchRequest, FetchResponse, ListOffsetsRequest, ListOffsetsResponse, MetadataRequest,
    MetadataResponse, RequestKind, ResponseKind, TopicName,
};
use offsetlab_wire::kafka_protocol::messages::{
    ConsumerProtocolAssignment, DescribeGroupsRequest, DescribeGroupsResponse, FindCoordinatorResponse,
    GroupId, HeartbeatResponse, InitProducerIdResponse, JoinGroupResponse, LeaveGroupResponse,
    ListGroupsResponse, OffsetCommitRequest, OffsetCommitResponse, OffsetFetchRequest, OffsetFetchResponse,
    ProducerId, SyncGroupResponse,
};
use offsetlab_wire::kafka_protocol::protocol::Encodable;
use offsetlab_wire::kafka_protocol::protocol::StrBytes;
use offsetlab_wire::request::{decode, DecodeError, Request};
use offsetlab_wire::response::encode;
use offsetlab_wire::versions::api_versions_response;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The lab is one broker, node 0, the leader of every partition.
const NODE: i32 = 0;
/// Kafka's error codes used here.
const NONE: i16 = 0;
const OFFSET_OUT_OF_RANGE: i16 = 1;
const UNKNOWN_TOPIC_OR_PARTITION: i16 = 3;
const INVALID_TOPIC_EXCEPTION: i16 = 17;
const INVALID_REQUEST: i16 = 42;
const UNSUPPORTED_VERSION: i16 = 35;
const UNKNOWN_SERVER_ERROR: i16 = -1;
const INVALID_COMMIT_OFFSET_SIZE: i16 = 28;
const INVALID_GROUP_ID: i16 = 24;
const UNKNOWN_MEMBER_ID: i16 = 25;
/// A fetch waits at most this long for records (the lab does not wake fetches on produce yet).
const MAX_FETCH_WAIT: Duration = Duration::from_millis(500);
/// Records a fetch hands out per partition at most.
const MAX_FETCH_RECORDS: usize = 5_000;

/// How the listener behaves.
#[derive(Debug, Clone, Copy)]
pub struct KafkaConfig {
    /// `auto.create.topics.enable`: a Produce or Metadata request creates an unknown topic.
    pub auto_create_topics: bool,
    /// `socket.request.max.bytes`: a request announcing more is refused before anything is
    /// allocated for it, and its connection closed.
    pub max_request_bytes: usize,
    /// `max.connections` and `connections.max.idle.ms`.
    pub limits: offsetlab_lab::connections::Limits,
}

impl Default for KafkaConfig {
    fn default() -> Self {
        Self {
            auto_create_topics: true,
            max_request_bytes: DEFAULT_MAX_FRAME,
            limits: offsetlab_lab::connections::Limits::default(),
        }
    }
}

/// What every connection of one listener shares.
#[derive(Debug, Default)]
struct Broker {
    config: KafkaConfig,
    producers: producers::Producers,
    coordinator: coordinator::Coordinator,
}

/// Accepts connections until the runtime stops.
pub async fn serve(listener: TcpListener, app: AppState, config: KafkaConfig) {
    let broker = Arc::new(Broker {
        config,
        ..Broker::default()
    });
    // Real clients that were members when the lab last stopped are gone with the coordinator's
    // memory: their groups are Empty until they join again (as after their session timeout).
    {
        let (app, broker) = (app.clone(), Arc::clone(&broker));
        let _ = tokio::task::spawn_blocking(move || {
            let _settle = broker.coordinator.settle_lock();
            let emptied: Vec<_> = {
                let session = app.session();
                let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
                s.lab()
                    .groups()
                    .values()
                    .filter_map(|g| {
                        let e = g.external.as_ref().filter(|e| !e.members.is_empty())?;
                        Some(coordinator::empty_group(&g.name, g.generation + 1, &e.protocol))
                    })
                    .collect()
            };
            let _ = change::settle(&app, &broker.coordinator, emptied);
        })
        .await;
    }
    // Sessions and rebalance timeouts run on wall time: check them a few times a second.
    {
        let (app, broker) = (app.clone(), Arc::clone(&broker));
        tokio::spawn(async move {
            let mut every = tokio::time::interval(Duration::from_millis(250));
            loop {
                every.tick().await;
                let (app, broker) = (app.clone(), Arc::clone(&broker));
                let _ = tokio::task::spawn_blocking(move || {
                    let _settle = broker.coordinator.settle_lock();
                    let settled = broker.coordinator.tick(std::time::Instant::now());
                    let _ = change::settle(&app, &broker.coordinator, settled);
                })
                .await;
            }
        });
    }
    let Ok(advertised) = listener.local_addr() else {
        return;
    };
    let open = offsetlab_lab::connections::Connections::new(config.limits.max_connections);
    let mut backoff = Duration::from_millis(5);
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                // Out of descriptors (or another transient failure): never spin. Make a
                // descriptor free if an idle connection can give one, and wait a little.
                if matches!(e.raw_os_error(), Some(24 | 23)) {
                    open.shed_one();
                }
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(1));
                continue;
            }
        };
        backoff = Duration::from_millis(5);
        // Every connection busy at the cap: this one is refused (closed at once).
        let Some(slot) = open.admit() else {
            drop(stream);
            continue;
        };
        let app = app.clone();
        let broker = Arc::clone(&broker);
        tokio::spawn(async move {
            let _ = connection(stream, app, advertised, &broker, slot).await;
        });
    }
}

async fn connection(
    mut stream: TcpStream,
    app: AppState,
    advertised: SocketAddr,
    broker: &Arc<Broker>,
    slot: offsetlab_lab::connections::Slot,
) -> std::io::Result<()> {
    let idle = broker.config.limits.idle_timeout;
    // Completing a request moves the deadline; bytes of an unfinished one do not.
    let mut deadline = tokio::time::Instant::now() + idle;
    let session = app.session();
    // Kafka prints a member's host as `/address`.
    let host = stream
        .peer_addr()
        .map_or_else(|_| "/unknown".to_string(), |a| format!("/{}", a.ip()));
    let mut buf = BytesMut::with_capacity(64 << 10);
    loop {
        loop {
            let frame = match split_frame(&mut buf, broker.config.max_request_bytes) {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => return Ok(()), // a size over the limit: close
            };
            if frame.len() >= OWN_BUFFER_FRAME {
                // The frame shares its allocation with what follows it in `buf`: give the rest
                // (usually nothing, or the start of the next request) a buffer of its own, so
                // the frame's bytes have one owner and a Produce request's batches can be
                // appended in place, not copied first.
                let mut rest = BytesMut::with_capacity(buf.len().max(64 << 10));
                rest.extend_from_slice(&buf);
                buf = rest;
            }
            let frame = frame.freeze();
            slot.busy(true);
            let reply = respond(frame, &app, &session, advertised, broker, &host).await;
            match reply {
                Reply::Frame(out) => stream.write_all(&out).await?,
                Reply::Nothing => {}
                Reply::Close => return Ok(()), // malformed or unserved: close, as Kafka does
            }
            slot.busy(false);
            deadline = tokio::time::Instant::now() + idle;
        }
        let want = bytes_wanted(&buf, broker.config.max_request_bytes).clamp(1, 1 << 20);
        buf.reserve(want);
        let read = tokio::select! {
            // Closed to make room for a new connection.
            () = slot.closed() => return Ok(()),
            read = tokio::time::timeout_at(deadline, stream.read_buf(&mut buf)) => read,
        };
        match read {
            // `connections.max.idle.ms` passed without a complete request.
            Err(_) => return Ok(()),
            Ok(Ok(0)) => return Ok(()),
            Ok(Ok(_)) => {}
            Ok(Err(e)) => return Err(e),
        }
    }
}

/// What a request gets.
enum Reply {
    Frame(BytesMut),
    /// A produce with `acks=0` is not answered.
    Nothing,
    Close,
}

async fn respond(
    frame: Bytes,
    app: &AppState,
    session: &Arc<Mutex<Session>>,
    advertised: SocketAddr,
    broker: &Arc<Broker>,
    host: &str,
) -> Reply {
    match answer(frame, app, session, advertised, broker, host).await {
        Some(Some(frame)) => Reply::Frame(frame),
        Some(None) => Reply::Nothing,
        None => Reply::Close,
    }
}

/// The response frame for one request frame (`Some(None)`: no response; `None`: close).
async fn answer(
    frame: Bytes,
    app: &AppState,
    session: &Arc<Mutex<Session>>,
    advertised: SocketAddr,
    broker: &Arc<Broker>,
    host: &str,
) -> Option<Option<BytesMut>> {
    let request = match decode(frame) {
        Ok(r) => r,
        Err(DecodeError::NotServed {
            api_key: ApiKey::ApiVersions,
            correlation_id,
            ..
        }) => {
            let body = ResponseKind::ApiVersions(api_versions_response(UNSUPPORTED_VERSION));
            return encode(correlation_id, ApiKey::ApiVersions, 0, &body)
                .ok()
                .map(Some);
        }
        Err(_) => return None,
    };
    let (api_key, version, correlation_id) = (request.api_key, request.version(), request.correlation_id());
    // A client id names a client in member ids, history lines and the narrative: kept as sent,
    // up to what a classic STRING holds.
    let client_id = request.header.client_id.as_ref().map_or_else(String::new, |c| {
        let c = c.as_str();
        let mut end = c.len().min(offsetlab_engine::names::MAX_ID_BYTES);
        while !c.is_char_boundary(end) {
            end -= 1;
        }
        c[..end].to_string()
    });
    // The header's strings are views of the frame: gone, they leave a Produce request's batches
    // the frame's only owners.
    let Request { body, header, .. } = request;
    drop(header);
    let body = match body {
        RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(api_versions_response(NONE)),
        RequestKind::Metadata(r) => {
            // Before v4 a Metadata request always allowed creation; since, the client says.
            let create = broker.config.auto_create_topics && (version < 4 || r.allow_auto_topic_creation);
            let wanted: Vec<String> = r
                .topics
                .iter()
                .flatten()
                .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
                .collect();
            if create && !wanted.is_empty() {
                let app = app.clone();
                blocking(move || produce::create_topics(&app, &wanted)).await?;
            }
            ResponseKind::Metadata(with_lab(session, move |s| metadata(s, &r, advertised)).await?)
        }
        RequestKind::ListOffsets(r) => {
            ResponseKind::ListOffsets(with_lab(session, move |s| list_offsets(s, &r)).await?)
        }
        RequestKind::Fetch(r) => {
            let wait = Duration::from_millis(u64::try_from(r.max_wait_ms).unwrap_or(0)).min(MAX_FETCH_WAIT);
            let r = Arc::new(r);
            let first = {
                let r = Arc::clone(&r);
                with_lab(session, move |s| fetch(s, &r)).await?
            };
            // Kafka answers once `min.bytes` of record batches are ready (control batches count:
            // they move a read_committed client past a transaction's end).
            let min_bytes = usize::try_from(r.min_bytes).unwrap_or(1).max(1);
            if first.1 >= min_bytes || wait.is_zero() {
                ResponseKind::Fetch(first.0)
            } else {
                // Not enough to read: wait (up to max.wait.ms) and look once more.
                tokio::time::sleep(wait).await;
                ResponseKind::Fetch(with_lab(session, move |s| fetch(s, &r)).await?.0)
            }
        }
        RequestKind::InitProducerId(r) => {
            // An idempotent producer gets an id here; a transactional one from the lab's
            // transaction coordinator.
            let response = if let Some(txn_id) = r.transactional_id.as_ref().map(|t| t.to_string()) {
                let app = app.clone();
                blocking(move || transactions::init_producer_id(&app, &r, &txn_id)).await?
            } else {
                let (id, epoch) = broker.producers.init();
                InitProducerIdResponse::default()
                    .with_producer_id(ProducerId(id))
                    .with_producer_epoch(epoch)
            };
            ResponseKind::InitProducerId(response)
        }
        RequestKind::AddPartitionsToTxn(r) => ResponseKind::AddPartitionsToTxn(
            with_lab(session, move |s| transactions::add_partitions(s, &r)).await?,
        ),
        RequestKind::AddOffsetsToTxn(r) => {
            ResponseKind::AddOffsetsToTxn(with_lab(session, move |s| transactions::add_offsets(s, &r)).await?)
        }
        RequestKind::TxnOffsetCommit(r) => {
            let (app, broker) = (app.clone(), Arc::clone(broker));
            ResponseKind::TxnOffsetCommit(
                blocking(move || transactions::txn_offset_commit(&app, &broker.coordinator, &r)).await?,
            )
        }
        RequestKind::EndTxn(r) => {
            let app = app.clone();
            ResponseKind::EndTxn(blocking(move || transactions::end_txn(&app, &r)).await?)
        }
        RequestKind::CreateTopics(r) => {
            let app = app.clone();
            ResponseKind::CreateTopics(blocking(move || admin::create_topics(&app, &r)).await?)
        }
        RequestKind::DeleteRecords(r) => {
            let app = app.clone();
            ResponseKind::DeleteRecords(blocking(move || admin::delete_records(&app, &r)).await?)
        }
        RequestKind::DeleteTopics(r) => {
            let (app, broker) = (app.clone(), Arc::clone(broker));
            ResponseKind::DeleteTopics(
                blocking(move || deletion::delete_topics(&app, &broker.producers, &r)).await?,
            )
        }
        RequestKind::DeleteGroups(r) => {
            let (app, broker) = (app.clone(), Arc::clone(broker));
            ResponseKind::DeleteGroups(
                blocking(move || deletion::delete_groups(&app, &broker.coordinator, &r)).await?,
            )
        }
        RequestKind::OffsetDelete(r) => {
            let (app, broker) = (app.clone(), Arc::clone(broker));
            ResponseKind::OffsetDelete(
                blocking(move || deletion::offset_delete(&app, &broker.coordinator, &r)).await?,
            )
        }
        RequestKind::DescribeConfigs(r) => {
            let auto_create = broker.config.auto_create_topics;
            ResponseKind::DescribeConfigs(
                with_lab(session, move |s| admin::describe_configs(s, &r, auto_create)).await?,
            )
        }
        RequestKind::FindCoordinator(_) => ResponseKind::FindCoordinator(
            FindCoordinatorResponse::default()
                .with_node_id(BrokerId(NODE))
                .with_host(str_bytes(&advertised.ip().to_string()))
                .with_port(i32::from(advertised.port())),
        ),
        RequestKind::ListGroups(_) => {
            let broker = Arc::clone(broker);
            ResponseKind::ListGroups(with_lab(session, move |s| list_groups(s, &broker.coordinator)).await?)
        }
        RequestKind::DescribeGroups(r) => {
            let broker = Arc::clone(broker);
            ResponseKind::DescribeGroups(
                with_lab(session, move |s| describe_groups(s, &broker.coordinator, &r)).await?,
            )
        }
        RequestKind::JoinGroup(r) => {
            let name = r.group_id.0.to_string();
            let (lab_members, lab_generation) = with_lab(session, move |s| {
                s.lab()
                    .group(&name)
                    .map_or((false, 0), |g| (!g.members.is_empty(), g.generation))
            })
            .await?;
            let response = if lab_members {
                // The lab's own consumers are in it: real clients get a group of their own.
                JoinGroupResponse::default()
                    .with_error_code(coordinator::INCONSISTENT_GROUP_PROTOCOL)
                    .with_generation_id(-1)
            } else {
                match broker
                    .coordinator
                    .join(&r, version, &client_id, host, lab_generation)
                {
                    coordinator::Join::Now(response) => response,
                    coordinator::Join::Wait(rx, timeout) => match tokio::time::timeout(timeout, rx).await {
                        Ok(Ok(response)) => response,
                        // Dropped from the rebalance (it timed out) or the wait outlived it.
                        _ => JoinGroupResponse::default()
                            .with_error_code(coordinator::UNKNOWN_MEMBER_ID)
                            .with_generation_id(-1),
                    },
                }
            };
            ResponseKind::JoinGroup(response)
        }
        RequestKind::SyncGroup(r) => {
            let (app, broker2) = (app.clone(), Arc::clone(broker));
            let decided = tokio::task::spawn_blocking(move || {
                let _settle = broker2.coordinator.settle_lock();
                match broker2.coordinator.sync(&r) {
                    coordinator::Sync::Now(mut settled) => {
                        let commands = std::mem::take(&mut settled.commands);
                        if change::settle(&app, &broker2.coordinator, commands).is_err() {
                            // The lab did not take the generation: the group rebalances again.
                            settled.answer = SyncGroupResponse::default()
                                .with_error_code(coordinator::REBALANCE_IN_PROGRESS);
                        }
                        coordinator::Sync::Now(settled)
                    }
                    wait => wait,
                }
            })
            .await
            .ok()?;
            let response = match decided {
                coordinator::Sync::Now(settled) => settled.answer,
                coordinator::Sync::Wait(rx, timeout) => match tokio::time::timeout(timeout, rx).await {
                    Ok(Ok(response)) => response,
                    _ => SyncGroupResponse::default().with_error_code(coordinator::REBALANCE_IN_PROGRESS),
                },
            };
            ResponseKind::SyncGroup(response)
        }
        RequestKind::Heartbeat(r) => ResponseKind::Heartbeat(
            HeartbeatResponse::default().with_error_code(broker.coordinator.heartbeat(&r)),
        ),
        RequestKind::LeaveGroup(r) => {
            let (app, broker) = (app.clone(), Arc::clone(broker));
            let per_member = tokio::task::spawn_blocking(move || {
                let _settle = broker.coordinator.settle_lock();
                let settled = broker.coordinator.leave(&r);
                let _ = change::settle(&app, &broker.coordinator, settled.commands);
                settled.answer
            })
            .await
            .ok()?;
            let response = if version >= 3 {
                LeaveGroupResponse::default().with_members(
                    per_member
                        .iter()
                        .map(|(id, code)| {
                            MemberResponse::default()
                                .with_member_id(str_bytes(id))
                                .with_error_code(*code)
                        })
                        .collect(),
                )
            } else {
                LeaveGroupResponse::default().with_error_code(per_member.first().map_or(0, |m| m.1))
            };
            ResponseKind::LeaveGroup(response)
        }
        RequestKind::OffsetFetch(r) => {
            ResponseKind::OffsetFetch(with_lab(session, move |s| offset_fetch(s, &r)).await?)
        }
        RequestKind::OffsetCommit(r) => {
            let (app, broker) = (app.clone(), Arc::clone(broker));
            ResponseKind::OffsetCommit(blocking(move || offset_commit(&app, &broker.coordinator, &r)).await?)
        }
        RequestKind::Produce(r) => {
            let app = app.clone();
            let acks = r.acks;
            let broker = Arc::clone(broker);
            let response = blocking(move || produce::produce(&app, &broker, r, &client_id)).await?;
            if acks == 0 {
                return Some(None);
            }
            ResponseKind::Produce(response)
        }
        _ => return None,
    };
    encode(correlation_id, api_key, version, &body).ok().map(Some)
}

/// The lab's groups and the groups of real clients (their live state from the coordinator).
fn list_groups(s: &Session, coordinator: &coordinator::Coordinator) -> ListGroupsResponse {
    let mut listed: BTreeMap<String, (String, String)> = s
        .lab()
        .groups()
        .values()
        .map(|g| (g.name.clone(), ("consumer".to_string(), g.state().to_string())))
        .collect();
    for (name, g) in coordinator
        .groups
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
    {
        if !g.members.is_empty() || !listed.contains_key(name) {
            listed.insert(
                name.clone(),
                (g.protocol_type.clone(), g.state.name().to_string()),
            );
        }
    }
    ListGroupsResponse::default().with_groups(
        listed
            .into_iter()
            .map(|(name, (protocol_type, state))| {
                ListedGroup::default()
                    .with_group_id(GroupId(str_bytes(&name)))
                    .with_protocol_type(str_bytes(&protocol_type))
                    .with_group_state(str_bytes(&state))
            })
            .collect(),
    )
}

/// A group of real clients as the coordinator sees it now (`None` when it has no members).
fn describe_external(coordinator: &coordinator::Coordinator, id: &GroupId) -> Option<DescribedGroup> {
    let groups = coordinator
        .groups
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let g = groups.get(id.0.as_str()).filter(|g| !g.members.is_empty())?;
    let members = g
        .ordered()
        .map(|(member_id, m)| {
            DescribedGroupMember::default()
                .with_member_id(str_bytes(member_id))
                .with_group_instance_id(m.instance_id.as_deref().map(str_bytes))
                .with_client_id(str_bytes(&m.client_id))
                .with_client_host(str_bytes(&m.host))
                .with_member_metadata(m.metadata(&g.protocol))
                .with_member_assignment(m.assignment.clone())
        })
        .collect();
    Some(
        DescribedGroup::default()
            .with_group_id(id.clone())
            .with_group_state(str_bytes(g.state.name()))
            .with_protocol_type(str_bytes(&g.protocol_type))
            .with_protocol_data(str_bytes(&g.protocol))
            .with_members(members),
    )
}

/// The lab's groups as a Kafka coordinator describes them: members with the partitions they own
/// (the consumer protocol's assignment bytes), the assignor as the protocol. An unknown group is
/// `Dead`, as Kafka answers.
fn describe_groups(
    s: &Session,
    coordinator: &coordinator::Coordinator,
    r: &DescribeGroupsRequest,
) -> DescribeGroupsResponse {
    let lab = s.lab();
    let groups = r
        .groups
        .iter()
        .map(|id| {
            if let Some(described) = describe_external(coordinator, id) {
                return described;
            }
            let name = id.0.to_string();
            let Ok(g) = lab.group(&name) else {
                return DescribedGroup::default()
                    .with_group_id(id.clone())
                    .with_group_state(str_bytes("Dead"));
            };
            let assignor = g
                .members
                .first()
                .and_then(|m| lab.consumer(&m.consumer).ok())
                .map_or("range".to_string(), |c| c.config.assignor.to_string());
            let members = g
                .members
                .iter()
                .map(|m| {
                    let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
                    for (tp, owner) in &g.owners {
                        if owner == &m.id {
                            by_topic.entry(tp.topic.clone()).or_default().push(tp.partition);
                        }
                    }
                    let assignment = ConsumerProtocolAssignment::default().with_assigned_partitions(
                        by_topic
                            .into_iter()
                            .map(|(t, ps)| {
                                AssignedTopicPartition::default()
                                    .with_topic(TopicName(str_bytes(&t)))
                                    .with_partitions(ps)
                            })
                            .collect(),
                    );
                    let mut bytes = BytesMut::new();
                    bytes.extend_from_slice(&0i16.to_be_bytes());
                    if assignment.encode(&mut bytes, 0).is_err() {
                        bytes.clear();
                    }
                    DescribedGroupMember::default()
                        .with_member_id(str_bytes(&m.id))
                        .with_group_instance_id(m.instance_id.as_deref().map(str_bytes))
                        .with_client_id(str_bytes(&m.consumer))
                        .with_client_host(str_bytes("/127.0.0.1"))
                        .with_member_assignment(bytes.freeze())
                })
                .collect();
            DescribedGroup::default()
                .with_group_id(id.clone())
                .with_group_state(str_bytes(&g.state().to_string()))
                .with_protocol_type(str_bytes("consumer"))
                .with_protocol_data(str_bytes(if g.members.is_empty() { "" } else { &assignor }))
                .with_members(members)
        })
        .collect();
    DescribeGroupsResponse::default().with_groups(groups)
}

/// A group's committed offsets, from the coordinator's view of `__consumer_offsets`; `-1` for a
/// partition asked for and never committed.
fn offset_fetch(s: &Session, r: &OffsetFetchRequest) -> OffsetFetchResponse {
    let lab = s.lab();
    let group = r.group_id.0.to_string();
    let committed: BTreeMap<(String, i32), (i64, String)> = lab
        .offsets()
        .view()
        .iter()
        .filter(|(k, _)| k.group == group)
        .map(|(k, v)| ((k.topic.clone(), k.partition), (v.offset, v.metadata.clone())))
        .collect();
    let wanted: Vec<(String, Vec<i32>)> = match &r.topics {
        Some(ts) => ts
            .iter()
            .map(|t| (t.name.0.to_string(), t.partition_indexes.clone()))
            .collect(),
        None => {
            let mut by_topic: BTreeMap<String, Vec<i32>> = BTreeMap::new();
            for (t, p) in committed.keys() {
                by_topic.entry(t.clone()).or_default().push(*p);
            }
            by_topic.into_iter().collect()
        }
    };
    let topics = wanted
        .into_iter()
        .map(|(topic, partitions)| {
            OffsetFetchResponseTopic::default()
                .with_name(TopicName(str_bytes(&topic)))
                .with_partitions(
                    partitions
                        .into_iter()
                        .map(|p| {
                            let found = committed.get(&(topic.clone(), p));
                            OffsetFetchResponsePartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(found.map_or(-1, |v| v.0))
                                .with_metadata(Some(str_bytes(found.map_or("", |v| v.1.as_str()))))
                        })
                        .collect(),
                )
        })
        .collect();
    OffsetFetchResponse::default().with_topics(topics)
}

/// A commit from outside the group — what `kafka-consumer-groups.sh --reset-offsets --execute`
/// and an admin client's `alterConsumerGroupOffsets` send (no member id, generation −1) —
/// becomes the lab's own `reset-offsets … execute` commands, one batch, so the lab's history,
/// export and undo see it like any other action. A group with members refuses it, as Kafka's
/// coordinator does (UNKNOWN_MEMBER_ID). A member's commit (a member id and its generation) is
/// checked by the group coordinator and becomes a `commit-offsets` command. Either way a
/// partition the lab does not have is UNKNOWN_TOPIC_OR_PARTITION and the rest are stored.
fn offset_commit(
    app: &AppState,
    coordinator: &coordinator::Coordinator,
    r: &OffsetCommitRequest,
) -> OffsetCommitResponse {
    let group = r.group_id.0.to_string();
    let respond = |code: &dyn Fn(&str, i32) -> i16| {
        OffsetCommitResponse::default().with_topics(
            r.topics
                .iter()
                .map(|t| {
                    OffsetCommitResponseTopic::default()
                        .with_name(t.name.clone())
                        .with_partitions(
                            t.partitions
                                .iter()
                                .map(|p| {
                                    OffsetCommitResponsePartition::default()
                                        .with_partition_index(p.partition_index)
                                        .with_error_code(code(t.name.0.as_str(), p.partition_index))
                                })
                                .collect(),
                        )
                })
                .collect(),
        )
    };
    if group.is_empty() {
        return respond(&|_, _| INVALID_GROUP_ID);
    }
    let requested = || {
        r.topics.iter().flat_map(|t| {
            t.partitions.iter().map(move |p| {
                (
                    TopicPartition::new(t.name.0.to_string(), p.partition_index),
                    p.committed_offset,
                )
            })
        })
    };
    let member_commit = !r.member_id.is_empty() || r.generation_id_or_member_epoch >= 0;
    // Held from the coordinator's check to the lab's command, so the two stay in one order.
    let _settle = coordinator.settle_lock();
    if member_commit {
        if let Err(code) = coordinator.check_commit(&group, &r.member_id, r.generation_id_or_member_epoch) {
            return respond(&|_, _| code);
        }
    }
    let session = app.session();
    let s = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if !member_commit
        && (s.lab().group(&group).is_ok_and(|g| g.has_members()) || coordinator.has_members(&group))
    {
        // From outside the group (an offset reset): only while nobody is in it.
        return respond(&|_, _| UNKNOWN_MEMBER_ID);
    }
    type Offsets = Vec<(TopicPartition, i64)>;
    let (known, unknown): (Offsets, Offsets) =
        requested().partition(|(tp, _)| s.lab().partition_log(tp).is_ok());
    let unknown: std::collections::BTreeSet<(String, i32)> = unknown
        .into_iter()
        .map(|(tp, _)| (tp.topic, tp.partition))
        .collect();
    // A negative offset is no position in a log: the lab keeps committed offsets as positions
    // (Kafka stores whatever a client sends, and its clients read -1 back as "no offset"). Those
    // partitions are refused one by one; the rest are stored.
    let (known, negative): (Offsets, Offsets) = known.into_iter().partition(|(_, o)| *o >= 0);
    let negative: std::collections::BTreeSet<(String, i32)> = negative
        .into_iter()
        .map(|(tp, _)| (tp.topic, tp.partition))
        .collect();
    let commands: Vec<Command> = if known.is_empty() {
        Vec::new()
    } else if member_commit {
        vec![coordinator::Coordinator::commit(
            &group,
            &r.member_id,
            r.generation_id_or_member_epoch,
            known,
        )]
    } else {
        known
            .into_iter()
            .map(|(tp, offset)| {
                Command::ResetOffsets(ResetOffsets {
                    group: group.clone(),
                    topic: tp.topic,
                    partitions: Some(vec![tp.partition]),
                    spec: ResetSpec::ToOffset(offset),
                    datetime_text: None,
                    execute: true,
                })
            })
            .collect()
    };
    let outcome = change::apply_commands(app, s, commands);
    respond(&|t, p| {
        if unknown.contains(&(t.to_string(), p)) {
            UNKNOWN_TOPIC_OR_PARTITION
        } else if negative.contains(&(t.to_string(), p)) {
            INVALID_COMMIT_OFFSET_SIZE
        } else {
            match &outcome {
                Ok(()) => NONE,
                Err(change::Failure::Refused(LabError::InvalidArgument(_))) => INVALID_COMMIT_OFFSET_SIZE,
                Err(failure) => failure.code(),
            }
        }
    })
}

/// A request frame at least this large is left the only owner of its bytes (see `connection`).
const OWN_BUFFER_FRAME: usize = 64 << 10;

/// Runs lab work (locks, saves, fsyncs) off the async workers; `None` if it panicked.
async fn blocking<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    tokio::task::spawn_blocking(f).await.ok()
}

async fn with_lab<T: Send + 'static>(
    session: &Arc<Mutex<Session>>,
    f: impl FnOnce(&Session) -> T + Send + 'static,
) -> Option<T> {
    let session = Arc::clone(session);
    tokio::task::spawn_blocking(move || {
        let guard = session.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        f(&guard)
    })
    .await
    .ok()
}

fn str_bytes(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

fn metadata(s: &Session, r: &MetadataRequest, advertised: SocketAddr) -> MetadataResponse {
    let lab = s.lab();
    let names: Vec<String> = match &r.topics {
        // Null (or, before v1, empty) means every topic.
        None => lab.topics().keys().cloned().collect(),
        Some(ts) if ts.is_empty() => lab.topics().keys().cloned().collect(),
        Some(ts) => ts
            .iter()
            .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
            .collect(),
    };
    let topics = names
        .iter()
        .map(|name| match lab.topic(name) {
            Ok(t) => MetadataResponseTopic::default()
                .with_name(Some(TopicName(str_bytes(name))))
                .with_error_code(NONE)
                .with_partitions(
                    (0..t.partitions.len() as i32)
                        .map(|p| {
                            MetadataResponsePartition::default()
                                .with_partition_index(p)
                                .with_leader_id(BrokerId(NODE))
                                .with_replica_nodes(vec![BrokerId(NODE)])
                                .with_isr_nodes(vec![BrokerId(NODE)])
                        })
                        .collect(),
                ),
            // A name no client may use (an internal topic, illegal characters) is an error a
            // client gives up on at once; an unknown one it waits for, as topics appear.
            Err(_) => MetadataResponseTopic::default()
                .with_name(Some(TopicName(str_bytes(name))))
                .with_error_code(if produce::creatable(name) {
                    UNKNOWN_TOPIC_OR_PARTITION
                } else {
                    INVALID_TOPIC_EXCEPTION
                }),
        })
        .collect();
    MetadataResponse::default()
        .with_brokers(vec![MetadataResponseBroker::default()
            .with_node_id(BrokerId(NODE))
            .with_host(str_bytes(&advertised.ip().to_string()))
            .with_port(i32::from(advertised.port()))])
        .with_cluster_id(Some(str_bytes("offsetlab")))
        .with_controller_id(BrokerId(NODE))
        .with_topics(topics)
}

fn isolation(level: i8) -> IsolationLevel {
    if level == 1 {
        IsolationLevel::ReadCommitted
    } else {
        IsolationLevel::ReadUncommitted
    }
}

fn list_offsets(s: &Session, r: &ListOffsetsRequest) -> ListOffsetsResponse {
    let lab = s.lab();
    let level = isolation(r.isolation_level);
    let topics = r
        .topics
        .iter()
        .map(|t| {
            let name = t.name.0.to_string();
            ListOffsetsTopicResponse::default()
                .with_name(t.name.clone())
                .with_partitions(
                    t.partitions
                        .iter()
                        .map(|p| {
                            let tp = TopicPartition::new(name.clone(), p.partition_index);
                            let base = ListOffsetsPartitionResponse::default()
                                .with_partition_index(p.partition_index);
                            let Ok(log) = lab.partition_log(&tp) else {
                                return base.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                            };
                            let latest = match level {
                                IsolationLevel::ReadCommitted => {
                                    lab.last_stable_offset(&tp).unwrap_or(log.log_end_offset())
                                }
                                IsolationLevel::ReadUncommitted => log.log_end_offset(),
                            };
                            let (offset, timestamp) = match p.timestamp {
                                -2 => (log.log_start_offset(), -1),
                                -1 => (latest, -1),
                                ts => match log.offset_for_timestamp(ts) {
                                    Some(o) => {
                                        let mut at = -1;
                                        log.read(o, 1, &mut |r| at = r.timestamp);
                                        (o, at)
                                    }
                                    None => (-1, -1),
                                },
                            };
                            base.with_offset(offset).with_timestamp(timestamp)
                        })
                        .collect(),
                )
        })
        .collect();
    ListOffsetsResponse::default().with_topics(topics)
}

/// The fetch response and how many bytes of record batches it carries.
fn fetch(s: &Session, r: &FetchRequest) -> (FetchResponse, usize) {
    let lab = s.lab();
    let level = isolation(r.isolation_level);
    let mut total = 0;
    // The response's own limit (`fetch.max.bytes`, KIP-74): partitions are served in the order
    // asked until it is reached; the first batch goes out even if it alone is larger.
    let response_limit = usize::try_from(r.max_bytes).unwrap_or(0);
    let response_limit = if response_limit == 0 {
        usize::MAX
    } else {
        response_limit
    };
    let responses = r
        .topics
        .iter()
        .map(|t| {
            let name = t.topic.0.to_string();
            let partitions = t
                .partitions
                .iter()
                .map(|p| {
                    let tp = TopicPartition::new(name.clone(), p.partition);
                    let base = PartitionData::default().with_partition_index(p.partition);
                    let (Ok(log), Ok(txns)) = (lab.partition_log(&tp), lab.partition_txns(&tp)) else {
                        return base.with_error_code(UNKNOWN_TOPIC_OR_PARTITION);
                    };
                    let (start, end) = (log.log_start_offset(), log.log_end_offset());
                    let lso = txns.last_stable_offset(end);
                    let base = base
                        .with_high_watermark(end)
                        .with_last_stable_offset(lso)
                        .with_log_start_offset(start);
                    if p.fetch_offset < start || p.fetch_offset > end {
                        return base.with_error_code(OFFSET_OUT_OF_RANGE);
                    }
                    // The records the client may see: no markers; with read_committed, nothing
                    // at or past the last stable offset and nothing aborted (dropped here, so the
                    // client needs no aborted-transactions list).
                    let upper = match level {
                        IsolationLevel::ReadCommitted => lso,
                        IsolationLevel::ReadUncommitted => end,
                    };
                    if total > 0 && total >= response_limit {
                        return base.with_records(Some(Bytes::new()));
                    }
                    let budget = usize::try_from(p.partition_max_bytes)
                        .unwrap_or(0)
                        .min(response_limit - total)
                        .max(1);
                    // The stored batches as they are, when nothing in them must be hidden: what a
                    // broker does, and no record is decoded or encoded. Aborted records under
                    // read_committed take the path below, which drops them.
                    let hides_nothing = level == IsolationLevel::ReadUncommitted
                        || txns
                            .aborted_offsets()
                            .range(p.fetch_offset..upper.max(p.fetch_offset))
                            .next()
                            .is_none();
                    if hides_nothing && p.fetch_offset < upper {
                        let mut raw = Vec::new();
                        if log
                            .read_batches(p.fetch_offset, upper, budget, &mut raw)
                            .is_some()
                        {
                            total += raw.len();
                            return base.with_records(Some(Bytes::from(raw)));
                        }
                    }
                    let mut bytes = 0usize;
                    let mut records = Vec::new();
                    log.read(p.fetch_offset, MAX_FETCH_RECORDS, &mut |rec| {
                        if rec.offset >= upper || (bytes >= budget && !records.is_empty()) {
                            return;
                        }
                        // A read_committed client never gets aborted records (dropped here, so it needs
                        // no aborted-transactions list); every client gets the markers, as control
                        // batches it skips — they are what moves its position past a transaction.
                        if !rec.control
                            && level == IsolationLevel::ReadCommitted
                            && txns.is_aborted(rec.offset)
                        {
                            return;
                        }
                        bytes += rec.key.map_or(0, <[u8]>::len) + rec.value.map_or(0, <[u8]>::len) + 20;
                        records.push(rec.to_owned());
                    });
                    // The lab's own codec, a batch per run of data or control records.
                    let mut out = Vec::new();
                    for run in records.chunk_by(|a, b| a.control == b.control) {
                        let run: Vec<(i64, offsetlab_records::NewRecord<'_>)> =
                            run.iter().map(|r| (r.offset, r.as_new())).collect();
                        offsetlab_records::batch::encode(&mut out, &run, -1);
                    }
                    total += out.len();
                    base.with_records(Some(Bytes::from(out)))
                })
                .collect();
            FetchableTopicResponse::default()
                .with_topic(t.topic.clone())
                .with_partitions(partitions)
        })
        .collect();
    (FetchResponse::default().with_responses(responses), total)
}
