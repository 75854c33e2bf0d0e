//! The HTTP API (documented in `docs/API.md`) and the router.

use crate::assets;
use crate::guard;
use crate::workshop::{Learner, Workshop};
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, Query, State};
use axum::http::{header, StatusCode};
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use offsetlab_engine::offsets::OffsetRecord;
use offsetlab_engine::record::{RecordBytes, TopicPartition};
use offsetlab_engine::sink::{SinkKind, SinkRow};
use offsetlab_engine::strategy::CommitStrategy;
use offsetlab_engine::txn::ControlType;
use offsetlab_engine::LabError;
use offsetlab_lab::clip::{clip, clip_row, shown_field, MAX_FIELD_BYTES};
use offsetlab_lab::session::{ActionError, ClockMode, PendingSave, Session, State as LabState};
use offsetlab_lab::LabHandle;
use offsetlab_scenario::explore::{self, Cell};
use offsetlab_scenario::lessons::{self, LESSONS};
use offsetlab_scenario::Script;
use serde::{Deserialize, Serialize};
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, OnceLock};
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::{Stream, StreamExt};

/// Most records one page of `/api/records` returns.
pub const MAX_PAGE: usize = 1000;

#[derive(Clone)]
pub struct AppState {
    labs: Labs,
    /// The `Host` headers the lab answers: its loopback names, and the public names it was
    /// given (`--public-host`). Any other is refused: a page whose name was made to resolve to
    /// the lab (DNS rebinding) sends its own name.
    hosts: Arc<Vec<String>>,
    matrix: Arc<OnceLock<Vec<Cell>>>,
    /// `serve --bootstrap-server`: the lab runs on a real cluster as well.
    cluster: Option<Arc<crate::cluster::ClusterMirror>>,
}

impl AppState {
    /// `public_hosts`: further names the lab answers to (`--public-host`), each `NAME` (on the
    /// lab's port) or `NAME:PORT`.
    pub fn new(lab: LabHandle, addr: SocketAddr, public_hosts: &[String]) -> Self {
        Self::serving(Labs::One(lab), addr, public_hosts)
    }

    /// A workshop's server: every request's lab is its learner's ([`crate::workshop`]).
    pub fn workshop(workshop: Arc<Workshop>, addr: SocketAddr, public_hosts: &[String]) -> Self {
        Self::serving(Labs::Workshop(workshop), addr, public_hosts)
    }

    fn serving(labs: Labs, addr: SocketAddr, public_hosts: &[String]) -> Self {
        let port = addr.port();
        let mut hosts = vec![
            format!("127.0.0.1:{port}"),
            format!("localhost:{port}"),
            format!("[::1]:{port}"),
            addr.to_string(),
        ];
        for h in public_hosts {
            let h = h.trim().to_ascii_lowercase();
            let has_port = h.rsplit_once(':').is_some_and(|(name, p)| {
                !name.ends_with(':') && p.parse::<u16>().is_ok() && !h.ends_with(']')
            });
            hosts.push(if has_port { h } else { format!("{h}:{port}") });
        }
        Self {
            labs,
            hosts: Arc::new(hosts),
            matrix: Arc::new(OnceLock::new()),
            cluster: None,
        }
    }

    /// The one lab, every action run on a real cluster first (`serve --bootstrap-server`).
    pub fn on_cluster(
        lab: LabHandle,
        addr: SocketAddr,
        public_hosts: &[String],
        mirror: Arc<crate::cluster::ClusterMirror>,
    ) -> Self {
        let mut state = Self::serving(Labs::One(lab), addr, public_hosts);
        state.cluster = Some(mirror);
        state
    }

    pub fn host_allowed(&self, host: &str) -> bool {
        let host = host.to_ascii_lowercase();
        self.hosts.contains(&host)
    }

    /// The `Host` headers the lab answers.
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The workshop this server runs, if it runs one.
    pub fn workshop_of(&self) -> Option<&Arc<Workshop>> {
        match &self.labs {
            Labs::One(_) => None,
            Labs::Workshop(w) => Some(w),
        }
    }

    /// The one lab the page shows, shared with the Kafka listener (`None` in workshop mode,
    /// where every learner has their own).
    pub fn lab(&self) -> Option<&LabHandle> {
        match &self.labs {
            Labs::One(lab) => Some(lab),
            Labs::Workshop(_) => None,
        }
    }

    /// The largest request body accepted.
    fn max_body_bytes(&self) -> usize {
        match &self.labs {
            Labs::One(_) => crate::MAX_BODY_BYTES,
            Labs::Workshop(w) => w.room.config().max_request_bytes,
        }
    }
}

/// What the instructor's page is to show of a learner's change.
struct Note {
    figures: Vec<crate::workshop::learner::GroupFigures>,
    what: String,
    /// What the learner pressed, as their page named it (`None`: the change's lines say it).
    label: Option<String>,
}

/// Which labs a server serves: one (the page's and the Kafka listener's), or a workshop's.
#[derive(Clone)]
enum Labs {
    One(LabHandle),
    Workshop(Arc<Workshop>),
}

/// The lab a request is about: the server's one lab, or — in workshop mode — the lab of the
/// learner whose cookie the request carries. Resolved before a handler runs; a request without
/// a learner's id, or with one that is not this room's, is refused here with nothing touched.
/// The instructor's view of learner N (`X-Offsetlab-Learner: N` and the instructor's token,
/// `workshop::viewer`) is learner N's lab, for reading only: any other method is `403`, and
/// the scope has no learner, so nothing is noted as theirs.
#[derive(Clone)]
pub(crate) struct Scope {
    lab: LabHandle,
    learner: Option<Arc<Learner>>,
    cluster: Option<Arc<crate::cluster::ClusterMirror>>,
    /// What the learner pressed to send this request, as their page named it (`post_actions`
    /// sets it from the body's `label`): noted for the instructor with the change.
    label: Option<String>,
}

impl axum::extract::FromRequestParts<AppState> for Scope {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        app: &AppState,
    ) -> Result<Self, Response> {
        let workshop = match &app.labs {
            Labs::One(lab) => {
                return Ok(Scope {
                    lab: lab.clone(),
                    learner: None,
                    cluster: app.cluster.clone(),
                    label: None,
                })
            }
            Labs::Workshop(w) => Arc::clone(w),
        };
        let viewed = crate::workshop::viewer::viewer_of(&parts.method, &parts.headers, app)
            .map_err(IntoResponse::into_response)?;
        let (learner, viewing) = match viewed {
            Some((_, learner)) => (learner, true),
            None => (
                crate::workshop::routes::learner_of(&parts.headers, &workshop)
                    .map_err(IntoResponse::into_response)?,
                false,
            ),
        };
        let room_learner = Arc::clone(&learner);
        let opened = tokio::task::spawn_blocking(move || workshop.room.lab(&room_learner)).await;
        match opened {
            Ok(Ok(lab)) => Ok(Scope {
                lab,
                learner: (!viewing).then_some(learner),
                cluster: None,
                label: None,
            }),
            Ok(Err(e)) => Err(crate::workshop::routes::room_error(&e)),
            Err(e) => Err(json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0)),
        }
    }
}

impl Scope {
    /// Runs `f` on the session on a blocking thread (SQLite writes, big produces).
    async fn with_session<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> Result<T, Response> {
        self.on_session(LabHandle::lock, f).await
    }

    /// Runs `f` on the session locked by `lock` (`LabHandle::lock_for_change` brings a live
    /// clock to wall time first), on a blocking thread.
    async fn on_session<T: Send + 'static>(
        &self,
        lock: for<'a> fn(&'a LabHandle) -> std::sync::MutexGuard<'a, Session>,
        f: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> Result<T, Response> {
        let lab = self.lab.clone();
        tokio::task::spawn_blocking(move || f(&mut lock(&lab)))
            .await
            .map_err(|e| json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0))
    }

    /// Runs `change` on the session; when it succeeds, saves the lab, tells every page and
    /// answers with the new state (after the fsync, under `--flush always`); otherwise answers
    /// with its error, nothing saved.
    async fn changing(
        &self,
        what: impl Into<String>,
        change: impl FnOnce(&mut Session) -> Result<(), ActionError> + Send + 'static,
    ) -> Response {
        if self.cluster.is_some() {
            return json_error(
                StatusCode::CONFLICT,
                "this lab runs on a real cluster: only action lines run there (one per request), so loading, resetting and the clock are off",
                0,
            );
        }
        self.change(what.into(), LabHandle::lock, change, |(), state| {
            Json(state).into_response()
        })
        .await
    }

    /// The lab's state as the page is sent it: on a cluster, with the cluster's figures.
    fn shown(&self, state: &LabState) -> serde_json::Value {
        let value = serde_json::to_value(state).unwrap_or_default();
        match &self.cluster {
            Some(mirror) => mirror.overlay(value),
            None => value,
        }
    }

    /// Runs `change` on the session locked by `lock`; when it succeeds, saves the lab, tells
    /// every page, notes it for the instructor and answers with `respond(its result, the new
    /// state)` (after the fsync, under `--flush always`); otherwise answers with its error,
    /// nothing saved.
    async fn change<T: 'static>(
        &self,
        what: String,
        lock: for<'a> fn(&'a LabHandle) -> std::sync::MutexGuard<'a, Session>,
        change: impl FnOnce(&mut Session) -> Result<T, ActionError> + Send + 'static,
        respond: impl FnOnce(T, &LabState) -> Response + Send + 'static,
    ) -> Response {
        let scope = self.clone();
        let result = self
            .on_session(lock, move |s| match change(s) {
                Ok(done) => {
                    let pending = scope.changed(s);
                    let (response, note) = scope.answer(s, &what, |state| respond(done, state));
                    (response, pending, note)
                }
                Err(e) => (action_error(&e), Ok(None), None),
            })
            .await;
        match result {
            Ok((response, pending, note)) => self.noted(self.sync(pending, response).await, note),
            Err(e) => e,
        }
    }

    /// The answer to a change that succeeded: the lab's new state, shaped by `respond`, and —
    /// in a workshop — what the instructor is to see of it (the learner's figures and `what`
    /// they did), noted by [`Scope::noted`] once the change is durable.
    fn answer(
        &self,
        s: &Session,
        what: &str,
        respond: impl FnOnce(&LabState) -> Response,
    ) -> (Response, Option<Note>) {
        let state = match s.state() {
            Ok(state) => state,
            Err(e) => {
                return (
                    json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
                    None,
                )
            }
        };
        let note = self.learner.as_ref().map(|_| Note {
            figures: crate::workshop::learner::GroupFigures::of(&state),
            what: clip(what, 200).into_owned(),
            label: self.label.clone(),
        });
        (respond(&state), note)
    }

    /// `response`, after noting what the instructor sees of the change — only when the change
    /// was acknowledged (saved, and synced under `--flush always`).
    fn noted(&self, response: Response, note: Option<Note>) -> Response {
        if let (Some(learner), Some(note), true) = (&self.learner, note, response.status().is_success()) {
            if let Err(e) = learner.update(|a| {
                a.figures = note.figures;
                a.last_action = Some(note.what);
                a.last_label = note.label;
                a.last_action_ms = Some(offsetlab_lab::session::wall_clock_ms());
            }) {
                tracing::warn!(
                    learner = learner.number,
                    "the learner's activity was not saved: {e}"
                );
            }
        }
        response
    }

    /// After a change: save the lab for the next start (or prepare the save that must follow
    /// the fsync, under `--flush always`) and tell every tab. An error means the change is not
    /// durable and must not be acknowledged.
    /// A save that fails took the change back (the session went back to its last save).
    pub(crate) fn changed(&self, session: &mut Session) -> Result<Option<PendingSave>, LabError> {
        self.lab.changed(session)
    }

    /// `--flush always`: the change is acknowledged once its appends are on disk and the lab's
    /// file after them. Runs outside the session's lock, so requests that arrive meanwhile share
    /// the next fsync (group commit).
    async fn sync(&self, pending: Result<Option<PendingSave>, LabError>, response: Response) -> Response {
        let pending = match pending {
            Ok(Some(p)) => p,
            Ok(None) => return response,
            Err(e) => {
                let status = match &e {
                    LabError::Storage(f) => offsetlab_lab::session::storage_status(f.kind),
                    _ => 500,
                };
                return json_error(
                    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
                    &format!("the lab could not be saved, and the change was taken back: {e}"),
                    0,
                );
            }
        };
        match tokio::task::spawn_blocking(move || pending.complete()).await {
            Ok(Ok(())) => response,
            Ok(Err(e)) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &format!("not durable: {e}"), 0),
            Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
        }
    }
}

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/api/state", get(get_state))
        .route("/api/actions", post(post_actions))
        .route("/api/clock", post(post_clock))
        .route("/api/reset", post(post_reset))
        .route("/api/records", get(get_records))
        .route("/api/record", get(get_record))
        .route("/api/sink-rows", get(get_sink_rows))
        .route("/api/consumer-offsets", get(get_consumer_offsets))
        .route("/api/scenario", get(get_scenario).post(post_scenario))
        .route("/api/meta", get(get_meta))
        .route("/api/lessons", get(get_lessons))
        .route("/api/explore", get(get_explore))
        .route("/api/explore/replay", post(post_explore_replay))
        .route("/api/events", get(get_events))
        .merge(crate::workshop::routes::routes())
        .merge(assets::routes())
        .fallback(|| async { json_error(StatusCode::NOT_FOUND, "no such endpoint", 0) })
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            crate::workshop::viewer::read_only,
        ))
        .layer(axum::middleware::from_fn_with_state(
            state.clone(),
            guard::same_origin,
        ))
        .layer(DefaultBodyLimit::max(state.max_body_bytes()))
        .layer(axum::middleware::from_fn(guard::answer_like_an_api))
        .with_state(state)
}

/// `{ "error": …, "line": … }` with a status.
pub fn json_error(status: StatusCode, error: &str, line: usize) -> Response {
    // An error names what it refused; a 10 kB topic name is not repeated whole.
    let error = clip(error, MAX_ERROR_BYTES);
    (status, Json(serde_json::json!({ "error": error, "line": line }))).into_response()
}

/// `Query<T>` whose rejection is the API's JSON error.
pub(crate) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Response> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| ApiQuery(q))
            .map_err(|e| json_error(e.status(), &e.body_text(), 0))
    }
}

/// `Json<T>` whose rejection is the API's JSON error (with 413 for an oversized body).
pub(crate) struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequest<S> for ApiJson<T> {
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Response> {
        Json::<T>::from_request(req, state)
            .await
            .map(|Json(v)| ApiJson(v))
            .map_err(|e: JsonRejection| {
                // A body too large stays 413; anything else about the JSON is the client's 400.
                let status = if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    e.status()
                } else {
                    StatusCode::BAD_REQUEST
                };
                json_error(status, &format!("malformed request body: {}", e.body_text()), 0)
            })
    }
}

/// A refused action: the error, the line number, and the line as it was written — cut short
/// (a refused 3 MB line is named, not echoed whole).
fn action_error(e: &ActionError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
    (
        status,
        Json(serde_json::json!({
            "error": clip(&e.error, MAX_ERROR_BYTES),
            "line": e.line,
            "text": clip(&e.text, MAX_ERROR_BYTES),
        })),
    )
        .into_response()
}

/// The most of a refused line (or its error) an error response repeats.
const MAX_ERROR_BYTES: usize = 500;

pub(crate) fn state_response(session: &Session) -> Response {
    match session.state() {
        Ok(state) => Json(state).into_response(),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    }
}

async fn get_state(scope: Scope) -> Response {
    let shown = scope.clone();
    scope
        .with_session(move |s| match (&shown.cluster, s.state()) {
            (Some(_), Ok(state)) => Json(shown.shown(&state)).into_response(),
            _ => state_response(s),
        })
        .await
        .unwrap_or_else(|e| e)
}

#[derive(Deserialize)]
struct Actions {
    lines: Vec<String>,
    /// What the learner pressed ("Crash mid-batch"), for the instructor's page: at most 80
    /// characters, no control characters. Checked on every server, kept only in a workshop.
    #[serde(default)]
    label: Option<String>,
}

async fn post_actions(scope: Scope, ApiJson(actions): ApiJson<Actions>) -> Response {
    // A learner's request does at most a hundred lines of work: each can be as costly as the
    // lab is large, and the rate limit counts requests.
    let most = if scope.learner.is_some() { 100 } else { 1000 };
    if actions.lines.len() > most {
        return json_error(
            StatusCode::BAD_REQUEST,
            &format!("at most {most} lines per request"),
            0,
        );
    }
    let label = match crate::workshop::learner::checked_label(actions.label.as_deref()) {
        Ok(label) => label,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &e, 0),
    };
    // The instructor's page shows the label, and the lines as its detail: the first, and how
    // many more.
    let scope = Scope { label, ..scope };
    let first = |line: &str| clip(line, 200).into_owned();
    let what = match actions.lines.as_slice() {
        [] => String::new(),
        [one] => first(one),
        [one, rest @ ..] => format!("{} +{} more", first(one), rest.len()),
    };
    if let Some(mirror) = scope.cluster.clone() {
        // Each line runs for real, and a failed one must leave the page's lab as the cluster
        // is: one at a time.
        let [line] = actions.lines.as_slice() else {
            return json_error(
                StatusCode::BAD_REQUEST,
                "on a cluster, one line per request: each runs for real",
                0,
            );
        };
        let line = line.clone();
        let shown = scope.clone();
        return scope
            .change(
                what,
                LabHandle::lock_for_change,
                move |s| mirror.apply(s, &line),
                move |applied, state| {
                    Json(serde_json::json!({ "applied": applied, "state": shown.shown(state) }))
                        .into_response()
                },
            )
            .await;
    }
    scope
        .change(
            what,
            LabHandle::lock_for_change,
            move |s| s.apply_lines(&actions.lines),
            |applied, state| Json(serde_json::json!({ "applied": applied, "state": state })).into_response(),
        )
        .await
}

/// Back to the seed lab, in the clock's mode (a live lab's seed is built at now).
async fn post_reset(scope: Scope) -> Response {
    scope
        .changing("reset the lab to the seed", |s| {
            s.reset_to_seed(offsetlab_lab::session::wall_clock_ms())
        })
        .await
}

#[derive(Deserialize)]
struct ClockRequest {
    mode: String,
}

/// `{"mode": "live"}` sets the clock to follow wall time — and brings it there at once, firing
/// what falls due on the way — or `{"mode": "paused"}` stops it where it is.
async fn post_clock(scope: Scope, ApiJson(req): ApiJson<ClockRequest>) -> Response {
    let mode = match req.mode.parse::<ClockMode>() {
        Ok(m) => m,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &e, 0),
    };
    scope
        .changing(format!("set the clock {mode}"), move |s| {
            let wall = offsetlab_lab::session::wall_clock_ms();
            // Paused where wall time is now, not at the last line: what the page showed.
            if mode == ClockMode::Paused {
                s.catch_up(wall)?;
            }
            s.set_clock_mode(mode).map_err(|e| ActionError {
                status: 500,
                error: format!("the clock's mode could not be saved: {e}"),
                line: 0,
                text: String::new(),
                cause: Some(Box::new(e)),
            })?;
            s.catch_up(wall).map(|_| ())
        })
        .await
}

#[derive(Deserialize)]
struct RecordsQuery {
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

async fn get_records(scope: Scope, ApiQuery(q): ApiQuery<RecordsQuery>) -> Response {
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
struct RecordQuery {
    topic: String,
    #[serde(default)]
    partition: i32,
    offset: i64,
}

/// One record, whole: its key and value however large (the window cuts them).
async fn get_record(scope: Scope, ApiQuery(q): ApiQuery<RecordQuery>) -> Response {
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
struct SinkRowsQuery {
    group: String,
    from: Option<usize>,
    limit: Option<usize>,
}

async fn get_sink_rows(scope: Scope, ApiQuery(q): ApiQuery<SinkRowsQuery>) -> Response {
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
struct PageQuery {
    from: Option<i64>,
    limit: Option<usize>,
}

async fn get_consumer_offsets(scope: Scope, ApiQuery(q): ApiQuery<PageQuery>) -> Response {
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

async fn get_scenario(scope: Scope) -> Response {
    scope
        .with_session(|s| {
            (
                [
                    (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                    (
                        header::CONTENT_DISPOSITION,
                        "attachment; filename=\"offsetlab-session.scn\"",
                    ),
                ],
                s.export(),
            )
                .into_response()
        })
        .await
        .unwrap_or_else(|e| e)
}

async fn post_scenario(
    scope: Scope,
    body: Result<String, axum::extract::rejection::StringRejection>,
) -> Response {
    let body = match body {
        Ok(b) => b,
        Err(e) => return json_error(e.status(), &e.body_text(), 0),
    };
    let what = if body.trim().is_empty() {
        "started an empty lab (a lesson)".to_string()
    } else {
        format!("loaded a scenario of {} lines", body.lines().count())
    };
    load(scope, what, body).await
}

/// Replaces the session with the lab `source` builds and answers with the new state.
async fn load(scope: Scope, what: String, source: String) -> Response {
    scope.changing(what, move |s| s.load(&source)).await
}

async fn get_meta() -> Response {
    let strategies: Vec<_> = CommitStrategy::ALL
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name(),
                "explanation": s.explanation(),
                "commits_after_processing": s.commits_after_processing(),
                "auto_commits": s.auto_commits(),
                "fits_transactions": s.fits_transactions(),
            })
        })
        .collect();
    let sinks: Vec<_> = SinkKind::ALL
        .iter()
        .map(|k| serde_json::json!({ "name": k.name(), "explanation": k.explanation() }))
        .collect();
    Json(serde_json::json!({
        "strategies": strategies,
        "sinks": sinks,
        "resets": ["earliest", "latest", "none"],
        "commands": &offsetlab_scenario::command::COMMANDS[..],
        "lab_scenario": offsetlab_scenario::LAB_SCENARIO,
        "version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response()
}

async fn get_lessons() -> Response {
    let items: Vec<_> = LESSONS
        .iter()
        .map(|l| {
            serde_json::json!({
                "number": l.number(),
                "file": l.file,
                "title": l.title(),
                "introduction": l.introduction(),
                "recap": l.recap(),
                "minutes": l.minutes(),
                "steps": lessons::steps(l),
            })
        })
        .collect();
    Json(items).into_response()
}

fn seed_script() -> Result<Script, String> {
    Script::parse(offsetlab_scenario::SEED_SCENARIO).map_err(|e| e.to_string())
}

async fn get_explore(State(app): State<AppState>) -> Response {
    if let Some(m) = app.matrix.get() {
        return Json(serde_json::json!({ "scenario": offsetlab_scenario::SEED_SCENARIO, "cells": m }))
            .into_response();
    }
    let computed = tokio::task::spawn_blocking(|| {
        let script = seed_script()?;
        explore::explore(&script, None).map_err(|e| e.to_string())
    })
    .await;
    match computed {
        Ok(Ok(cells)) => {
            let cells = app.matrix.get_or_init(|| cells);
            Json(serde_json::json!({ "scenario": offsetlab_scenario::SEED_SCENARIO, "cells": cells }))
                .into_response()
        }
        Ok(Err(e)) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e, 0),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    }
}

#[derive(Deserialize)]
struct ReplayRequest {
    strategy: String,
    sink: String,
    /// Crash point to replay; the cell's worst one when omitted.
    crash_point: Option<u64>,
}

async fn post_explore_replay(scope: Scope, ApiJson(req): ApiJson<ReplayRequest>) -> Response {
    let (strategy, sink) = match (
        req.strategy.parse::<CommitStrategy>(),
        req.sink.parse::<SinkKind>(),
    ) {
        (Ok(st), Ok(sk)) => (st, sk),
        (Err(e), _) | (_, Err(e)) => return json_error(StatusCode::BAD_REQUEST, &e, 0),
    };
    let script = match seed_script() {
        Ok(s) => s,
        Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e, 0),
    };
    let names = (req.strategy.clone(), req.sink.clone());
    let prepared = tokio::task::spawn_blocking(move || {
        let point = match req.crash_point {
            Some(p) => p,
            None => explore::explore_cell(&script, "c1", strategy, sink)
                .map(|c| c.worst_crash_point)
                .map_err(|e| e.to_string())?,
        };
        explore::crash_replay(&script, "c1", strategy, sink, point)
            .map(|s| s.to_text())
            .map_err(|e| e.to_string())
    })
    .await;
    let text = match prepared {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return json_error(StatusCode::UNPROCESSABLE_ENTITY, &e, 0),
        Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    };
    load(
        scope,
        format!("replayed the explorer's {} × {} crash", names.0, names.1),
        text,
    )
    .await
}

/// The versions the lab reaches, as `state` events; in a workshop also the instructor's
/// pushes, as `push` events (the page then asks `/api/workshop/me` what to apply).
async fn get_events(State(app): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let versions = |rx| {
        BroadcastStream::new(rx).filter_map(|v: Result<u64, _>| {
            v.ok().map(|version| {
                Ok::<_, Infallible>(
                    SseEvent::default()
                        .event("state")
                        .data(format!("{{\"version\":{version}}}")),
                )
            })
        })
    };
    let stream: std::pin::Pin<Box<dyn Stream<Item = Result<SseEvent, Infallible>> + Send>> = match &app.labs {
        Labs::One(lab) => Box::pin(versions(lab.subscribe())),
        Labs::Workshop(w) => {
            let learner = match crate::workshop::routes::learner_of(&headers, w) {
                Ok(l) => l,
                Err(e) => return e.into_response(),
            };
            // A learner's tabs, not a script's thousand streams: each holds a connection.
            let Some(guard) = learner.open_stream(crate::workshop::MAX_STREAMS_PER_LEARNER) else {
                return json_error(
                    StatusCode::TOO_MANY_REQUESTS,
                    &format!(
                        "too many live-update streams: a learner may have {} open (close a tab)",
                        crate::workshop::MAX_STREAMS_PER_LEARNER
                    ),
                    0,
                );
            };
            let pushes = BroadcastStream::new(w.room.subscribe_pushes()).filter_map(|p| {
                p.ok().map(|seq| {
                    Ok::<_, Infallible>(
                        SseEvent::default()
                            .event("push")
                            .data(format!("{{\"seq\":{seq}}}")),
                    )
                })
            });
            let stream = versions(learner.changes.subscribe()).merge(pushes);
            // The guard lives as long as the stream: dropped with it when the tab goes.
            Box::pin(stream.map(move |e| {
                let _open = &guard;
                e
            }))
        }
    };
    Sse::new(stream).keep_alive(KeepAlive::default()).into_response()
}
