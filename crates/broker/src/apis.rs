//! One request in, one response out: the request decoded, handed to the handler of its API
//! (`handlers/`, a file per API key, as Kafka's `KafkaApis` dispatches them), and the response
//! encoded. Handlers that take the lab's lock run on a blocking thread, so a slow save never
//! stalls the async workers that read other connections — except a Produce that cannot wait
//! (a free lock, a save that syncs nothing: [`produce_on_worker`]), which is appended where it
//! was read. Fetch, Metadata, ListOffsets and OffsetFetch read the lab's published view
//! ([`offsetlab_lab::read_view`]) where they were read, waiting for no lock.

use crate::broker::Broker;
use crate::handlers::*;
use bytes::{Bytes, BytesMut};
use offsetlab_lab::read_view::LogWait;
use offsetlab_wire::kafka_protocol::messages::{ApiKey, RequestKind, ResponseKind};
use offsetlab_wire::request::{decode, DecodeError, Request};
use offsetlab_wire::response::encode;
use std::sync::Arc;

/// What a request gets.
pub(crate) enum Reply {
    Frame(BytesMut),
    /// A failed SASL authentication: after [`FAILED_AUTHENTICATION_DELAY`], the answer (none
    /// for a bare v0 token) and then the connection closed.
    ///
    /// [`FAILED_AUTHENTICATION_DELAY`]: crate::auth_failures::FAILED_AUTHENTICATION_DELAY
    FailedAuthentication(Option<BytesMut>),
    /// A produce with `acks=0` is not answered.
    Nothing,
    /// Malformed or unserved: the connection is closed.
    Close,
}

/// The connection a request came on.
pub(crate) struct Client<'a> {
    /// The peer as Kafka prints a member's host, `/address`.
    pub(crate) host: &'a str,
    /// Where the connection stands in SASL authentication (always admitted without SASL).
    pub(crate) sasl: crate::sasl::SaslState,
    /// The connection's number: a share session is the connection's, and goes with it.
    pub(crate) connection: u64,
}

/// Runs `f` on a blocking thread; `None` if it panicked.
async fn blocking<T: Send + 'static>(
    broker: &Arc<Broker>,
    f: impl FnOnce(&Broker) -> T + Send + 'static,
) -> Option<T> {
    let broker = Arc::clone(broker);
    tokio::task::spawn_blocking(move || f(&broker)).await.ok()
}

/// A Produce request this size or smaller is checked on the async worker that read it: a
/// producer's request (`max.request.size` and librdkafka's `message.max.bytes` default to 1 MB)
/// takes well under a millisecond to check.
const CHECK_ON_WORKER_BYTES: usize = 2 << 20;

/// A Produce request, answered on this worker when it can be without waiting: its batches are
/// small enough to check here, the lab's lock is free, and the lab's save waits for no disk
/// (`--flush never`, or a lab in memory) — the append is then a write into the page cache.
/// Anything else goes to a blocking thread, as every handler that may wait does. The hop there
/// and back costs four context switches a request: at a million records a second, a sixth of
/// the broker's CPU.
async fn produce_on_worker(
    broker: &Arc<Broker>,
    r: offsetlab_wire::kafka_protocol::messages::ProduceRequest,
    version: i16,
    client_id: String,
) -> Option<offsetlab_wire::kafka_protocol::messages::ProduceResponse> {
    if produce::records_bytes(&r) > CHECK_ON_WORKER_BYTES {
        return blocking(broker, move |b| produce::handle(b, r, version, &client_id)).await;
    }
    let checked = produce::check(broker, r, version, &client_id);
    if let Some(s) = broker.lab.try_lock().filter(|s| !s.saves_wait_for_disk()) {
        return Some(produce::append(broker, broker.lab.caught_up(s), checked));
    }
    blocking(broker, move |b| {
        produce::append(b, b.lab.lock_for_change(), checked)
    })
    .await
}

/// Whether the frame's header names an API the lab knows in a version it does not serve.
fn is_unserved(frame: &[u8]) -> bool {
    let field = |at: usize| frame.get(at..at + 2).map(|b| i16::from_be_bytes([b[0], b[1]]));
    match (field(0).and_then(|k| ApiKey::try_from(k).ok()), field(2)) {
        (Some(api_key), Some(version)) => !offsetlab_wire::versions::is_served(api_key, version),
        _ => false,
    }
}

/// The client id of a request header (v1 and later: after the API key, version and correlation
/// id, a nullable INT16-length string), read from the raw frame, lossily: for a log line.
fn sender_of(frame: &[u8]) -> String {
    let Some(len) = frame.get(8..10).map(|b| i16::from_be_bytes([b[0], b[1]])) else {
        return String::new();
    };
    let end = 10 + len.max(0) as usize;
    frame
        .get(10..end)
        .map_or_else(String::new, |id| String::from_utf8_lossy(id).into_owned())
}

/// A client id names a client in member ids, history lines and the narrative: kept as sent, up
/// to what a classic STRING holds.
fn client_id(request: &Request) -> String {
    request.header.client_id.as_ref().map_or_else(String::new, |c| {
        let c = c.as_str();
        let mut end = c.len().min(offsetlab_engine::names::MAX_ID_BYTES);
        while !c.is_char_boundary(end) {
            end -= 1;
        }
        c[..end].to_string()
    })
}

/// The reply to one request frame.
pub(crate) async fn answer(frame: Bytes, broker: &Arc<Broker>, client: &mut Client<'_>) -> Reply {
    if crate::sasl::awaits_bare_token(&client.sasl) {
        // After a v0 SaslHandshake the frame is the client's SASL token, not a request.
        let users = broker.config.sasl_plain.as_deref();
        let log = &broker.auth_failures;
        return match crate::sasl::authenticate_bare(users, &mut client.sasl, &frame, ("", client.host), log) {
            Some(bare) => Reply::Frame(BytesMut::from(&bare[..])),
            None => Reply::FailedAuthentication(None),
        };
    }
    // Read before the frame is decoded (and taken), and only for a version the lab does not
    // serve: no other request pays for the copy.
    let sender = if is_unserved(&frame) {
        sender_of(&frame)
    } else {
        String::new()
    };
    let request = match decode(frame) {
        Ok(r) => r,
        Err(DecodeError::NotServed {
            api_key: ApiKey::ApiVersions,
            correlation_id,
            ..
        }) => {
            let body = ResponseKind::ApiVersions(api_versions::unsupported());
            return encode(correlation_id, ApiKey::ApiVersions, 0, &body).map_or(Reply::Close, Reply::Frame);
        }
        Err(DecodeError::NotServed { api_key, version, .. }) => {
            // Kafka closes the connection too; it leaves a line that says why, and so does the
            // lab (the connection ends here, so this is once per connection).
            let served = offsetlab_wire::versions::served(api_key)
                .map_or("does not serve it".to_string(), |(lo, hi)| {
                    format!("serves v{lo}–v{hi}")
                });
            tracing::warn!(
                client = ?sender,
                host = %client.host,
                api = ?api_key,
                version,
                "a request at a version the lab does not serve (it {served}): connection closed"
            );
            return Reply::Close;
        }
        Err(_) => return Reply::Close,
    };
    let (api_key, version, correlation_id) = (request.api_key, request.version(), request.correlation_id());
    let client_id = client_id(&request);
    // The header's strings are views of the frame: gone, they leave a Produce request's batches
    // the frame's only owners.
    let Request { body, header, .. } = request;
    drop(header);
    let users = broker.config.sasl_plain.as_deref();
    if !crate::sasl::admits(users, &client.sasl, api_key) {
        // Kafka's authenticator takes nothing else before authentication, and closes.
        tracing::warn!(
            client = ?client_id,
            host = %client.host,
            api = ?api_key,
            "a request before authenticating (the listener is SASL_PLAINTEXT): connection closed"
        );
        return Reply::Close;
    }
    let body = match body {
        RequestKind::SaslHandshake(r) => {
            let a = crate::sasl::handshake(users, &mut client.sasl, r.mechanism.as_str(), version);
            return sasl_reply(correlation_id, api_key, version, a, broker);
        }
        RequestKind::SaslAuthenticate(r) => {
            let who = (client_id.as_str(), client.host);
            let a = crate::sasl::authenticate(users, &mut client.sasl, &r.auth_bytes, who);
            return sasl_reply(correlation_id, api_key, version, a, broker);
        }
        RequestKind::Produce(r) => {
            let acks = r.acks;
            let Some(response) = produce_on_worker(broker, r, version, client_id).await else {
                return Reply::Close;
            };
            if acks == 0 {
                return Reply::Nothing;
            }
            ResponseKind::Produce(response)
        }
        body => match dispatch(body, version, broker, client, client_id).await {
            Some(response) => response,
            None => return Reply::Close,
        },
    };
    encode(correlation_id, api_key, version, &body).map_or(Reply::Close, Reply::Frame)
}

/// A SASL response, the connection closed after it when authentication failed.
fn sasl_reply<T: Into<ResponseKind>>(
    correlation_id: i32,
    api_key: ApiKey,
    version: i16,
    answer: crate::sasl::Answer<T>,
    broker: &Broker,
) -> Reply {
    if let Some(failure) = &answer.log {
        broker.auth_failures.record(failure);
    }
    match encode(correlation_id, api_key, version, &answer.response.into()) {
        Ok(frame) if answer.close => Reply::FailedAuthentication(Some(frame)),
        Ok(frame) => Reply::Frame(frame),
        Err(_) => Reply::Close,
    }
}

/// The response to every request but Produce; `None` for an API the listener does not serve
/// (or a handler that panicked).
///
/// Over 100 lines, and kept whole on purpose: it is Kafka's `KafkaApis.handle`, one arm per
/// API key, each a line or two naming the handler and whether it runs on a blocking thread.
/// Split in groups it would only hide which APIs are served and how, which this one `match`
/// shows at a glance (and the compiler checks it against `RequestKind`).
pub(crate) async fn dispatch(
    body: RequestKind,
    version: i16,
    broker: &Arc<Broker>,
    client: &Client<'_>,
    client_id: String,
) -> Option<ResponseKind> {
    Some(match body {
        RequestKind::ApiVersions(_) => ResponseKind::ApiVersions(api_versions::handle()),
        // Read from the lab's published view, here; on a blocking thread only what waits for the
        // lab's lock: a topic to create, a log that lost records since the view.
        RequestKind::Metadata(r) if metadata::may_create(broker, &r, version) => {
            ResponseKind::Metadata(blocking(broker, move |b| metadata::handle(b, &r, version)).await?)
        }
        RequestKind::Metadata(r) => ResponseKind::Metadata(metadata::answer(broker, &r, version, &[])),
        RequestKind::ListOffsets(r) => ResponseKind::ListOffsets(
            match list_offsets::answer(&broker.lab.view(), &r, version, LogWait::Never) {
                Some(answer) => answer,
                None => blocking(broker, move |b| list_offsets::handle(b, &r, version)).await?,
            },
        ),
        RequestKind::Fetch(r) => ResponseKind::Fetch(fetch::handle(broker, r, version).await?),
        RequestKind::InitProducerId(r) => {
            ResponseKind::InitProducerId(blocking(broker, move |b| init_producer_id::handle(b, &r)).await?)
        }
        RequestKind::AddPartitionsToTxn(r) => ResponseKind::AddPartitionsToTxn(
            blocking(broker, move |b| add_partitions_to_txn::handle(b, &r, version)).await?,
        ),
        RequestKind::AddOffsetsToTxn(r) => {
            ResponseKind::AddOffsetsToTxn(blocking(broker, move |b| add_offsets_to_txn::handle(b, &r)).await?)
        }
        RequestKind::TxnOffsetCommit(r) => {
            ResponseKind::TxnOffsetCommit(blocking(broker, move |b| txn_offset_commit::handle(b, &r)).await?)
        }
        RequestKind::EndTxn(r) => {
            ResponseKind::EndTxn(blocking(broker, move |b| end_txn::handle(b, &r, version)).await?)
        }
        RequestKind::CreateTopics(r) => ResponseKind::CreateTopics(
            blocking(broker, move |b| create_topics::handle(b, &r, version)).await?,
        ),
        RequestKind::CreatePartitions(r) => {
            ResponseKind::CreatePartitions(blocking(broker, move |b| create_partitions::handle(b, &r)).await?)
        }
        RequestKind::IncrementalAlterConfigs(r) => ResponseKind::IncrementalAlterConfigs(
            blocking(broker, move |b| incremental_alter_configs::handle(b, &r)).await?,
        ),
        RequestKind::DescribeTopicPartitions(r) => ResponseKind::DescribeTopicPartitions(
            blocking(broker, move |b| describe_topic_partitions::handle(b, &r)).await?,
        ),
        RequestKind::DescribeLogDirs(r) => {
            ResponseKind::DescribeLogDirs(blocking(broker, move |b| describe_log_dirs::handle(b, &r)).await?)
        }
        RequestKind::ElectLeaders(r) => {
            ResponseKind::ElectLeaders(blocking(broker, move |b| elect_leaders::handle(b, &r)).await?)
        }
        RequestKind::ListPartitionReassignments(_) => {
            ResponseKind::ListPartitionReassignments(list_partition_reassignments::handle())
        }
        RequestKind::DescribeAcls(_) => ResponseKind::DescribeAcls(describe_acls::handle()),
        RequestKind::CreateAcls(r) => ResponseKind::CreateAcls(create_acls::handle(&r)),
        RequestKind::DeleteAcls(r) => ResponseKind::DeleteAcls(delete_acls::handle(&r)),
        RequestKind::AlterReplicaLogDirs(r) => ResponseKind::AlterReplicaLogDirs(
            blocking(broker, move |b| alter_replica_log_dirs::handle(b, &r)).await?,
        ),
        RequestKind::AlterPartitionReassignments(r) => ResponseKind::AlterPartitionReassignments(
            blocking(broker, move |b| alter_partition_reassignments::handle(b, &r)).await?,
        ),
        RequestKind::DescribeQuorum(r) => ResponseKind::DescribeQuorum(
            blocking(broker, move |b| describe_quorum::handle(b, &r, version)).await?,
        ),
        RequestKind::DescribeCluster(r) => {
            ResponseKind::DescribeCluster(describe_cluster::handle(broker, &r, version))
        }
        RequestKind::UpdateFeatures(r) => ResponseKind::UpdateFeatures(update_features::handle(&r)),
        RequestKind::AlterUserScramCredentials(r) => {
            ResponseKind::AlterUserScramCredentials(alter_user_scram_credentials::handle(&r))
        }
        RequestKind::DescribeClientQuotas(r) => {
            ResponseKind::DescribeClientQuotas(describe_client_quotas::handle(&r))
        }
        RequestKind::AlterClientQuotas(r) => ResponseKind::AlterClientQuotas(alter_client_quotas::handle(&r)),
        RequestKind::DescribeProducers(r) => ResponseKind::DescribeProducers(
            blocking(broker, move |b| describe_producers::handle(b, &r)).await?,
        ),
        RequestKind::DescribeTransactions(r) => ResponseKind::DescribeTransactions(
            blocking(broker, move |b| describe_transactions::handle(b, &r)).await?,
        ),
        RequestKind::ListTransactions(r) => ResponseKind::ListTransactions(
            blocking(broker, move |b| list_transactions::handle(b, &r, version)).await?,
        ),
        RequestKind::OffsetForLeaderEpoch(r) => ResponseKind::OffsetForLeaderEpoch(
            blocking(broker, move |b| offset_for_leader_epoch::handle(b, &r)).await?,
        ),
        RequestKind::AlterConfigs(r) => {
            ResponseKind::AlterConfigs(blocking(broker, move |b| alter_configs::handle(b, &r)).await?)
        }
        RequestKind::DescribeUserScramCredentials(r) => {
            ResponseKind::DescribeUserScramCredentials(describe_user_scram_credentials::handle(&r))
        }
        RequestKind::DeleteRecords(r) => {
            ResponseKind::DeleteRecords(blocking(broker, move |b| delete_records::handle(b, &r)).await?)
        }
        RequestKind::DeleteTopics(r) => {
            ResponseKind::DeleteTopics(blocking(broker, move |b| delete_topics::handle(b, &r)).await?)
        }
        RequestKind::DeleteGroups(r) => {
            ResponseKind::DeleteGroups(blocking(broker, move |b| delete_groups::handle(b, &r)).await?)
        }
        RequestKind::OffsetDelete(r) => {
            ResponseKind::OffsetDelete(blocking(broker, move |b| offset_delete::handle(b, &r)).await?)
        }
        RequestKind::DescribeConfigs(r) => {
            ResponseKind::DescribeConfigs(blocking(broker, move |b| describe_configs::handle(b, &r)).await?)
        }
        RequestKind::FindCoordinator(r) => {
            ResponseKind::FindCoordinator(find_coordinator::handle(broker, &r, version))
        }
        RequestKind::ListGroups(r) => {
            ResponseKind::ListGroups(blocking(broker, move |b| list_groups::handle(b, &r)).await?)
        }
        RequestKind::DescribeGroups(r) => ResponseKind::DescribeGroups(
            blocking(broker, move |b| describe_groups::handle(b, &r, version)).await?,
        ),
        RequestKind::JoinGroup(r) => {
            ResponseKind::JoinGroup(join_group::handle(broker, r, version, &client_id, client.host).await?)
        }
        RequestKind::SyncGroup(r) => ResponseKind::SyncGroup(sync_group::handle(broker, r).await?),
        RequestKind::Heartbeat(r) => ResponseKind::Heartbeat(heartbeat::handle(broker, &r)),
        RequestKind::ConsumerGroupHeartbeat(r) => {
            let (client_id, host) = (client_id.to_string(), client.host.to_string());
            ResponseKind::ConsumerGroupHeartbeat(
                blocking(broker, move |b| {
                    consumer_group_heartbeat::handle(b, &r, version, &client_id, &host)
                })
                .await?,
            )
        }
        RequestKind::ConsumerGroupDescribe(r) => ResponseKind::ConsumerGroupDescribe(
            blocking(broker, move |b| consumer_group_describe::handle(b, &r)).await?,
        ),
        RequestKind::ShareGroupHeartbeat(r) => {
            let (client_id, host) = (client_id.to_string(), client.host.to_string());
            ResponseKind::ShareGroupHeartbeat(
                blocking(broker, move |b| {
                    share_group_heartbeat::handle(b, &r, &client_id, &host)
                })
                .await?,
            )
        }
        RequestKind::ShareGroupDescribe(r) => ResponseKind::ShareGroupDescribe(
            blocking(broker, move |b| share_group_describe::handle(b, &r)).await?,
        ),
        RequestKind::DescribeShareGroupOffsets(r) => ResponseKind::DescribeShareGroupOffsets(
            blocking(broker, move |b| describe_share_group_offsets::handle(b, &r)).await?,
        ),
        RequestKind::AlterShareGroupOffsets(r) => ResponseKind::AlterShareGroupOffsets(
            blocking(broker, move |b| alter_share_group_offsets::handle(b, &r)).await?,
        ),
        RequestKind::DeleteShareGroupOffsets(r) => ResponseKind::DeleteShareGroupOffsets(
            blocking(broker, move |b| delete_share_group_offsets::handle(b, &r)).await?,
        ),
        RequestKind::ShareFetch(r) => {
            ResponseKind::ShareFetch(share_fetch::handle(broker, r, client.connection).await?)
        }
        RequestKind::ShareAcknowledge(r) => ResponseKind::ShareAcknowledge({
            let connection = client.connection;
            blocking(broker, move |b| share_acknowledge::handle(b, &r, connection)).await?
        }),
        RequestKind::LeaveGroup(r) => {
            ResponseKind::LeaveGroup(leave_group::handle(broker, r, version).await?)
        }
        RequestKind::OffsetFetch(r) => ResponseKind::OffsetFetch(offset_fetch::handle(broker, &r, version)),
        RequestKind::OffsetCommit(r) => {
            ResponseKind::OffsetCommit(blocking(broker, move |b| offset_commit::handle(b, &r)).await?)
        }
        _ => return None,
    })
}
