//! The log and what was made of it, a page at a time: a partition's records (from the model, or
//! from the cluster the lab mirrors), one record whole, a sink's rows and the records of
//! `__consumer_offsets`.

use crate::json::{json_error, ApiQuery};
use crate::scope::Scope;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use offsetlab_engine::offsets::OffsetRecord;
use offsetlab_engine::record::{RecordBytes, TopicPartition};
use offsetlab_engine::sink::SinkRow;
use offsetlab_engine::txn::ControlType;
use offsetlab_lab::clip::{clip_row, shown_field, MAX_FIELD_BYTES};
use offsetlab_lab::session::Session;
use serde::{Deserialize, Serialize};

/// Most records one page of `/api/records` returns.
pub const MAX_PAGE: usize = 1000;

#[derive(Deserialize)]
pub(super) struct RecordsQuery {
    topic: String,
    #[serde(default)]
    partition: i32,
    from: Option<i64>,
    limit: Option<usize>,
}

#[derive(Serialize)]
struct RecordJson {
    offset: i64,
    timestamp: i64,
    /// The key as text; for bytes that are not text, their hex digits (`key_form`).
    key: Option<String>,
    value: Option<String>,
    /// `hex` for a key that is not text, `schema-registry` for one in the Schema Registry's
    /// framing (magic byte 0, a 4-byte schema id: `key` holds the payload's hex); absent for text.
    #[serde(skip_serializing_if = "Option::is_none")]
    key_form: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_form: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_schema_id: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_schema_id: Option<u32>,
    /// The whole key's and value's sizes in bytes, when they were cut to [`MAX_FIELD_BYTES`]
    /// (`GET /api/record` has them whole).
    #[serde(skip_serializing_if = "Option::is_none")]
    key_bytes: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    value_bytes: Option<usize>,
    /// `COMMIT` or `ABORT` for a transaction marker (a control record).
    #[serde(skip_serializing_if = "Option::is_none")]
    control: Option<&'static str>,
    /// `open` or `aborted` for a record of a transaction that is not committed.
    #[serde(skip_serializing_if = "Option::is_none")]
    txn: Option<&'static str>,
}

/// `aborted` or `open` for a record of a transaction that did not commit (yet); none otherwise.
fn txn_state(txns: &offsetlab_engine::txn::PartitionTxns, offset: i64) -> Option<&'static str> {
    if txns.is_aborted(offset) {
        Some("aborted")
    } else if txns.is_open(offset) {
        Some("open")
    } else {
        None
    }
}

impl RecordJson {
    /// A record of the log window: key and value cut to [`MAX_FIELD_BYTES`] and shown as text,
    /// hex or Schema Registry framing.
    fn new(
        offset: i64,
        timestamp: i64,
        key: Option<&[u8]>,
        value: Option<&[u8]>,
        control: Option<&'static str>,
        txn: Option<&'static str>,
    ) -> Self {
        let k = key.map(|k| shown_field(k, MAX_FIELD_BYTES));
        let v = value.map(|v| shown_field(v, MAX_FIELD_BYTES));
        Self {
            offset,
            timestamp,
            key_form: k.as_ref().and_then(|k| k.form),
            value_form: v.as_ref().and_then(|v| v.form),
            key_schema_id: k.as_ref().and_then(|k| k.schema_id),
            value_schema_id: v.as_ref().and_then(|v| v.schema_id),
            key_bytes: key.filter(|_| k.as_ref().is_some_and(|k| k.cut)).map(<[u8]>::len),
            value_bytes: value
                .filter(|_| v.as_ref().is_some_and(|v| v.cut))
                .map(<[u8]>::len),
            key: k.map(|k| k.text),
            value: v.map(|v| v.text),
            control,
            txn,
        }
    }
}

/// The log window on a cluster (`serve --bootstrap-server`): the records, log start and log
/// end as the cluster holds them, read with Fetch and ListOffsets. Which records belong to an
/// aborted or open transaction, and the last stable offset, are the page's lab's (the same log,
/// checked record by record); the cluster's reader does not see transaction markers.
/// The window is read from the cluster before the page's session is locked: a slow read holds
/// up no action.
fn cluster_records(
    window: Result<offsetlab_cluster::run::LogWindow, offsetlab_cluster::run::RunError>,
    s: &Session,
    q: &RecordsQuery,
) -> Response {
    let tp = TopicPartition::new(q.topic.clone(), q.partition);
    let txns = match s.lab().partition_txns(&tp) {
        Ok(t) => t,
        Err(e) => return json_error(StatusCode::NOT_FOUND, &e.to_string(), 0),
    };
    let window = match window {
        Ok(w) => w,
        Err(e) => return json_error(StatusCode::BAD_GATEWAY, &e.to_string(), 0),
    };
    let records: Vec<RecordJson> = window
        .records
        .iter()
        .map(|r| {
            RecordJson::new(
                r.offset,
                r.timestamp.unwrap_or_default(),
                r.key.as_ref().map(|k| k.as_bytes()),
                r.value.as_ref().map(|v| v.as_bytes()),
                None,
                txn_state(txns, r.offset),
            )
        })
        .collect();
    Json(serde_json::json!({
        "topic": q.topic,
        "partition": q.partition,
        "log_start_offset": window.log_start,
        "log_end_offset": window.log_end,
        "last_stable_offset": txns.last_stable_offset(window.log_end),
        "records": records,
        "source": "cluster",
    }))
    .into_response()
}

pub(super) async fn get_records(scope: Scope, ApiQuery(q): ApiQuery<RecordsQuery>) -> Response {
    if let Some(mirror) = scope.cluster.clone() {
        let (topic, partition, from) = (q.topic.clone(), q.partition, q.from);
        let limit = q.limit.unwrap_or(100).min(MAX_PAGE);
        let window = match tokio::task::spawn_blocking(move || {
            mirror.log_window(&topic, partition, from, limit)
        })
        .await
        {
            Ok(w) => w,
            Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
        };
        return scope
            .with_session(move |s| cluster_records(window, s, &q))
            .await
            .unwrap_or_else(|e| e);
    }
    scope
        .with_session(move |s| {
            let tp = TopicPartition::new(q.topic.clone(), q.partition);
            let log = match s.lab().partition_log(&tp) {
                Ok(l) => l,
                Err(e) => return json_error(StatusCode::NOT_FOUND, &e.to_string(), 0),
            };
            let txns = match s.lab().partition_txns(&tp) {
                Ok(t) => t,
                Err(e) => return json_error(StatusCode::NOT_FOUND, &e.to_string(), 0),
            };
            let limit = q.limit.unwrap_or(100).min(MAX_PAGE);
            let from = q.from.unwrap_or(log.log_start_offset());
            let mut records = Vec::with_capacity(limit);
            log.read(from, limit, &mut |r| {
                let control = r
                    .control
                    .then(|| txns.marker(r.offset).map_or("CONTROL", ControlType::name));
                let txn = txn_state(txns, r.offset);
                let key = (!r.control).then_some(r.key).flatten();
                let value = (!r.control).then_some(r.value).flatten();
                records.push(RecordJson::new(r.offset, r.timestamp, key, value, control, txn))
            });
            Json(serde_json::json!({
                "topic": q.topic,
                "partition": q.partition,
                "log_start_offset": log.log_start_offset(),
                "log_end_offset": log.log_end_offset(),
                "last_stable_offset": txns.last_stable_offset(log.log_end_offset()),
                "records": records,
            }))
            .into_response()
        })
        .await
        .unwrap_or_else(|e| e)
}

#[derive(Deserialize)]
pub(super) struct RecordQuery {
    topic: String,
    #[serde(default)]
    partition: i32,
    offset: i64,
}

/// One record, whole: its key and value however large (the window cuts them).
pub(super) async fn get_record(scope: Scope, ApiQuery(q): ApiQuery<RecordQuery>) -> Response {
    scope
        .with_session(move |s| {
            let tp = TopicPartition::new(q.topic.clone(), q.partition);
            let log = match s.lab().partition_log(&tp) {
                Ok(l) => l,
                Err(e) => return json_error(StatusCode::NOT_FOUND, &e.to_string(), 0),
            };
            let mut found = None;
            log.read(q.offset, 1, &mut |r| {
                if r.offset == q.offset && !r.control {
                    found = Some(serde_json::json!({
                        "topic": q.topic,
                        "partition": q.partition,
                        "offset": r.offset,
                        "timestamp": r.timestamp,
                        // Byte for byte: a string when UTF-8, {"base64": …} otherwise.
                        "key": r.key.map(RecordBytes::from),
                        "value": r.value.map(RecordBytes::from),
                    }));
                }
            });
            match found {
                Some(record) => Json(record).into_response(),
                None => json_error(
                    StatusCode::NOT_FOUND,
                    &format!("{} holds no record at offset {}", tp, q.offset),
                    0,
                ),
            }
        })
        .await
        .unwrap_or_else(|e| e)
}

#[derive(Deserialize)]
pub(super) struct SinkRowsQuery {
    group: String,
    from: Option<usize>,
    limit: Option<usize>,
}

pub(super) async fn get_sink_rows(scope: Scope, ApiQuery(q): ApiQuery<SinkRowsQuery>) -> Response {
    scope
        .with_session(move |s| {
            let g = match s.lab().group(&q.group) {
                Ok(g) => g,
                Err(e) => return json_error(StatusCode::NOT_FOUND, &e.to_string(), 0),
            };
            let result = g.sink.stats().and_then(|stats| {
                g.sink
                    .rows(q.from.unwrap_or(0), q.limit.unwrap_or(100).min(MAX_PAGE))
                    .map(|rows| (stats, rows))
            });
            match result {
                Ok((stats, rows)) => {
                    let rows: Vec<SinkRow> = rows.into_iter().map(clip_row).collect();
                    Json(serde_json::json!({ "group": q.group, "total": stats.rows, "rows": rows }))
                        .into_response()
                }
                Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
            }
        })
        .await
        .unwrap_or_else(|e| e)
}

#[derive(Deserialize)]
pub(super) struct PageQuery {
    from: Option<i64>,
    limit: Option<usize>,
}

pub(super) async fn get_consumer_offsets(scope: Scope, ApiQuery(q): ApiQuery<PageQuery>) -> Response {
    scope
        .with_session(move |s| {
            let offsets = s.lab().offsets();
            let records: Vec<OffsetRecord> =
                offsets.records(q.from.unwrap_or(0), q.limit.unwrap_or(100).min(MAX_PAGE));
            Json(serde_json::json!({
                "log_start_offset": offsets.log().log_start_offset(),
                "log_end_offset": offsets.log().log_end_offset(),
                "segments": offsets.log().segments(),
                "records": records,
            }))
            .into_response()
        })
        .await
        .unwrap_or_else(|e| e)
}
