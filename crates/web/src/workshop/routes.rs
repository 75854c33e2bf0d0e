//! The workshop's endpoints (documented in `docs/API.md`): a learner joining and reporting
//! where they are, and the instructor's API behind its token.
//!
//! Learner endpoints answer `404` on a server that runs no workshop. Instructor endpoints need
//! `Authorization: Bearer TOKEN` (compared in constant time); the instructor names learners by
//! number, never by id, and reads their labs without changing them.

use super::learner::{Progress, MAX_QUIZ_OPTIONS, MAX_QUIZ_QUESTIONS};
use super::{cookie, Learner, RoomError, Workshop, LEARNER_COOKIE};
use crate::api::{json_error, ApiJson, AppState};
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use offsetlab_lab::LabHandle;
use offsetlab_scenario::lessons::LESSONS;
use serde::Deserialize;
use std::sync::Arc;

pub(crate) fn routes() -> Router<AppState> {
    Router::new()
        .route("/api/workshop/me", get(get_me))
        .route("/api/workshop/join", post(post_join))
        .route("/api/workshop/progress", post(post_progress))
        .route("/api/workshop/quiz", post(post_quiz))
        .route("/api/workshop/push-claim", post(post_push_claim))
        .route("/api/instructor/room", get(get_room))
        .route("/api/instructor/learners/{number}/state", get(get_learner_state))
        .route(
            "/api/instructor/learners/{number}/scenario",
            get(get_learner_scenario),
        )
        .route("/api/instructor/push", post(post_push))
}

/// Why a workshop request was refused before it reached a lab: answered as the API's JSON error.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// The server runs no workshop.
    NoWorkshop,
    /// No learner's id, or one that is not this room's (`"join": true`: the page shows its
    /// join form).
    MustJoin(&'static str),
    /// Past the learner's rate: try again after this long.
    TooFast {
        per_second: f64,
        wait: std::time::Duration,
    },
    /// The instructor's token is missing or wrong.
    NotInstructor,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        match self {
            Refusal::NoWorkshop => json_error(
                StatusCode::NOT_FOUND,
                "this server runs no workshop (start it with `offsetlab serve --workshop`)",
                0,
            ),
            Refusal::MustJoin(why) => (
                StatusCode::UNAUTHORIZED,
                Json(serde_json::json!({ "error": why, "line": 0, "join": true })),
            )
                .into_response(),
            Refusal::TooFast { per_second, wait } => {
                let mut r = json_error(
                    StatusCode::TOO_MANY_REQUESTS,
                    &format!(
                        "too many requests: a learner may make {per_second} a second (the server's --learner-rate); try again in {} ms",
                        wait.as_millis().max(1)
                    ),
                    0,
                );
                let secs = wait.as_secs().max(1).to_string();
                if let Ok(v) = HeaderValue::from_str(&secs) {
                    r.headers_mut().insert(header::RETRY_AFTER, v);
                }
                r
            }
            Refusal::NotInstructor => {
                let mut r = json_error(
                    StatusCode::UNAUTHORIZED,
                    "the instructor's token is missing or wrong (the server printed it when it started, or read it from --instructor-token-file)",
                    0,
                );
                r.headers_mut()
                    .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
                r
            }
        }
    }
}

fn workshop(app: &AppState) -> Result<Arc<Workshop>, Refusal> {
    app.workshop_of().cloned().ok_or(Refusal::NoWorkshop)
}

/// The learner whose cookie the request carries, their request counted against their rate.
/// No cookie, an id that is not 128 bits of hex, or one this room does not have: `401` — a
/// forged id opens nobody's lab.
pub(crate) fn learner_of(headers: &HeaderMap, w: &Workshop) -> Result<Arc<Learner>, Refusal> {
    let Some(id) = cookie(headers, LEARNER_COOKIE) else {
        return Err(Refusal::MustJoin(
            "join the workshop first: this browser has no lab here yet",
        ));
    };
    let Some(learner) = w.room.find(id) else {
        return Err(Refusal::MustJoin(
            "this browser's learner id is not one of this workshop's (a forged id, or a lab from another server): join again",
        ));
    };
    w.room.admit_request(&learner).map_err(|wait| Refusal::TooFast {
        per_second: w.room.config().rate.per_second,
        wait,
    })?;
    Ok(learner)
}

pub(crate) fn room_error(e: &RoomError) -> Response {
    json_error(
        StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &e.to_string(),
        0,
    )
}

fn learner_json(l: &Learner) -> serde_json::Value {
    serde_json::json!({ "number": l.number, "name": l.name() })
}

/// `{workshop: false}`, or the learner this browser is (`null` before joining), the caps of
/// their lab and the instructor's push they have not applied yet.
async fn get_me(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let Some(w) = app.workshop_of() else {
        return Json(serde_json::json!({ "workshop": false })).into_response();
    };
    let learner = cookie(&headers, LEARNER_COOKIE).and_then(|id| w.room.find(id));
    let caps = w.room.config().caps;
    let push = learner.as_ref().and_then(|l| {
        let applied = l.activity().push_applied;
        w.room.push().filter(|p| p.seq > applied)
    });
    Json(serde_json::json!({
        "workshop": true,
        "learner": learner.as_deref().map(learner_json),
        "push": push,
        "caps": {
            "records": caps.records,
            "topics": caps.topics,
            "partitions": caps.partitions,
            "consumers": caps.consumers,
            "history_lines": caps.history_lines,
            "request_bytes": w.room.config().max_request_bytes,
        },
    }))
    .into_response()
}

#[derive(Deserialize)]
struct Join {
    name: String,
}

/// A new learner and their lab; the answer sets the cookie that is their id. A browser that
/// already joined keeps its lab (and its name).
async fn post_join(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(join): ApiJson<Join>,
) -> Response {
    let w = match workshop(&app) {
        Ok(w) => w,
        Err(e) => return e.into_response(),
    };
    if let Some(l) = cookie(&headers, LEARNER_COOKIE).and_then(|id| w.room.find(id)) {
        return Json(learner_json(&l)).into_response();
    }
    let room = Arc::clone(&w);
    let joined = tokio::task::spawn_blocking(move || room.room.join(&join.name)).await;
    let learner = match joined {
        Ok(Ok(l)) => l,
        Ok(Err(e)) => return room_error(&e),
        Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    };
    let cookie = format!(
        "{LEARNER_COOKIE}={}; Path=/; HttpOnly; SameSite=Strict; Max-Age=2592000",
        learner.id.as_str()
    );
    let mut response = (StatusCode::CREATED, Json(learner_json(&learner))).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// Runs `f` on the requesting learner; its answer is `{"ok": true}`.
fn on_learner(
    app: &AppState,
    headers: &HeaderMap,
    f: impl FnOnce(&Learner) -> Result<serde_json::Value, (StatusCode, String)>,
) -> Response {
    let learner = match workshop(app).and_then(|w| learner_of(headers, &w)) {
        Ok(l) => l,
        Err(e) => return e.into_response(),
    };
    match f(&learner) {
        Ok(answer) => Json(answer).into_response(),
        Err((status, e)) => json_error(status, &e, 0),
    }
}

/// A learner's file written, or the server's `500` saying why not.
fn saved(r: std::io::Result<()>) -> Result<serde_json::Value, (StatusCode, String)> {
    r.map(|()| serde_json::json!({ "ok": true }))
        .map_err(|e| (StatusCode::INTERNAL_SERVER_ERROR, format!("not saved: {e}")))
}

fn bad(e: String) -> (StatusCode, String) {
    (StatusCode::BAD_REQUEST, e)
}

#[derive(Deserialize)]
struct ProgressReport {
    /// `null` when the learner left the lesson.
    lesson: Option<u32>,
    #[serde(default)]
    step: u32,
    #[serde(default)]
    steps: u32,
}

/// Where the learner's page is: a lesson and a step (the instructor's table shows it).
async fn post_progress(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(p): ApiJson<ProgressReport>,
) -> Response {
    on_learner(&app, &headers, |l| {
        let progress = match p.lesson {
            None => None,
            Some(n) => {
                let lesson = LESSONS
                    .iter()
                    .find(|x| x.number() == n)
                    .ok_or_else(|| bad(format!("there is no lesson {n}")))?;
                let steps = offsetlab_scenario::lessons::steps(lesson).len() as u32;
                if p.steps != steps || p.step > steps {
                    return Err(bad(format!(
                        "lesson {n} has {steps} steps: step {} of {} is not one of them",
                        p.step, p.steps
                    )));
                }
                Some(Progress {
                    lesson: n,
                    step: p.step,
                    steps,
                })
            }
        };
        saved(l.update(|a| a.progress = progress))
    })
}

#[derive(Deserialize)]
struct QuizAnswer {
    question: u32,
    choice: u32,
}

/// The option the learner chose for a quiz question (the last choice counts).
async fn post_quiz(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(q): ApiJson<QuizAnswer>,
) -> Response {
    on_learner(&app, &headers, |l| {
        if q.question >= MAX_QUIZ_QUESTIONS || q.choice >= MAX_QUIZ_OPTIONS {
            return Err(bad(format!(
                "no such quiz answer: questions are 0 to {}, options 0 to {}",
                MAX_QUIZ_QUESTIONS - 1,
                MAX_QUIZ_OPTIONS - 1
            )));
        }
        saved(l.update(|a| {
            a.quiz.insert(q.question, q.choice);
        }))
    })
}

#[derive(Deserialize)]
struct PushClaim {
    seq: u64,
}

/// The learner's page is about to apply the instructor's push `seq`: `{"claimed": true}` the
/// first time it is asked, `false` after — so two tabs, or a page that asked twice, apply it
/// once. Claimed before it is applied: a page that then fails to apply it says so, and the
/// learner starts the lesson themselves.
async fn post_push_claim(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(p): ApiJson<PushClaim>,
) -> Response {
    let latest = app.workshop_of().and_then(|w| w.room.push()).map_or(0, |p| p.seq);
    on_learner(&app, &headers, |l| {
        if p.seq == 0 || p.seq > latest {
            return Err(bad(format!(
                "there is no push {} (the latest is {latest})",
                p.seq
            )));
        }
        let mut claimed = false;
        saved(l.update(|a| {
            claimed = a.push_applied < p.seq;
            a.push_applied = a.push_applied.max(p.seq);
        }))?;
        Ok(serde_json::json!({ "claimed": claimed }))
    })
}

// ───────────────────────────── the instructor ─────────────────────────────

/// The workshop, if the request carries the instructor's token.
fn instructor(app: &AppState, headers: &HeaderMap) -> Result<Arc<Workshop>, Refusal> {
    let w = workshop(app)?;
    let offered = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .unwrap_or("");
    if !w.token.matches(offered.trim()) {
        return Err(Refusal::NotInstructor);
    }
    Ok(w)
}

/// Every learner — number, name, lesson and step, last action, figures, whether their lab is
/// in memory — and every quiz question's answers counted.
async fn get_room(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let w = match instructor(&app, &headers) {
        Ok(w) => w,
        Err(e) => return e.into_response(),
    };
    let mut tallies: std::collections::BTreeMap<u32, std::collections::BTreeMap<u32, u32>> =
        Default::default();
    let learners: Vec<serde_json::Value> = w
        .room
        .learners()
        .iter()
        .map(|l| {
            let a = l.activity();
            for (q, c) in &a.quiz {
                *tallies.entry(*q).or_default().entry(*c).or_default() += 1;
            }
            serde_json::json!({
                "number": a.number,
                "name": a.name,
                "joined_ms": a.joined_ms,
                "progress": a.progress,
                "last_action": a.last_action,
                "last_action_ms": a.last_action_ms,
                "figures": a.figures,
                "quiz_answered": a.quiz.len(),
                "resident": l.is_resident(),
            })
        })
        .collect();
    Json(serde_json::json!({
        "learners": learners,
        "quiz": tallies,
        "max_learners": w.room.config().max_learners,
        "resident": learners.iter().filter(|l| l["resident"] == true).count(),
        "push": w.room.push(),
        "demo": w.demo.is_some(),
    }))
    .into_response()
}

/// The lab of learner `number` (0: the instructor's own, with `--kafka`), for reading.
async fn learner_lab(w: &Arc<Workshop>, number: u32) -> Result<LabHandle, Response> {
    if number == 0 {
        return w.demo.clone().ok_or_else(|| {
            json_error(
                StatusCode::NOT_FOUND,
                "this workshop has no instructor's lab (it runs with --kafka)",
                0,
            )
        });
    }
    let Some(learner) = w.room.by_number(number) else {
        return Err(json_error(
            StatusCode::NOT_FOUND,
            &format!("there is no learner {number}"),
            0,
        ));
    };
    let room = Arc::clone(w);
    match tokio::task::spawn_blocking(move || room.room.lab(&learner)).await {
        Ok(Ok(lab)) => Ok(lab),
        Ok(Err(e)) => Err(room_error(&e)),
        Err(e) => Err(json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0)),
    }
}

/// Reads learner `number`'s lab with `f`, which is handed a function that takes the
/// learner's id out of a text (a narrative line names where a sink's files are, and the path
/// holds the id): the instructor never holds an id, so never acts as a learner.
async fn read_learner<T: Send + 'static>(
    app: &AppState,
    headers: &HeaderMap,
    number: u32,
    f: impl FnOnce(&offsetlab_lab::Session, &dyn Fn(String) -> String) -> T + Send + 'static,
) -> Result<T, Response> {
    let w = instructor(app, headers).map_err(IntoResponse::into_response)?;
    let lab = learner_lab(&w, number).await?;
    let id = w.room.by_number(number).map(|l| l.id.as_str().to_string());
    tokio::task::spawn_blocking(move || {
        let hide = |text: String| match &id {
            Some(id) => text.replace(id.as_str(), &format!("<learner {number}>")),
            None => text,
        };
        f(&lab.lock(), &hide)
    })
    .await
    .map_err(|e| json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0))
}

/// A learner's lab as their page sees it (`/api/state`'s shape), read-only.
async fn get_learner_state(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(number): Path<u32>,
) -> Response {
    read_learner(&app, &headers, number, |s, hide| match s.state() {
        Ok(mut state) => {
            state.storage.dir = None;
            match serde_json::to_string(&state) {
                Ok(json) => ([(header::CONTENT_TYPE, "application/json")], hide(json)).into_response(),
                Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
            }
        }
        // A sink's error names its file, whose path holds the learner's id.
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &hide(e.to_string()), 0),
    })
    .await
    .unwrap_or_else(|e| e)
}

/// A learner's lab as a scenario (what Export gives them).
async fn get_learner_scenario(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(number): Path<u32>,
) -> Response {
    read_learner(&app, &headers, number, |s, hide| {
        (
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            hide(s.export()),
        )
            .into_response()
    })
    .await
    .unwrap_or_else(|e| e)
}

#[derive(Deserialize)]
struct PushRequest {
    lesson: Option<u32>,
    scenario: Option<String>,
}

/// "Everyone: lesson 2" — or a scenario to load. Each learner's page applies it once (now if
/// it is open, else when it next opens); a scenario is checked first (it parses, it fits the
/// caps), so no learner gets one their lab would refuse.
async fn post_push(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(p): ApiJson<PushRequest>,
) -> Response {
    let w = match instructor(&app, &headers) {
        Ok(w) => w,
        Err(e) => return e.into_response(),
    };
    match (&p.lesson, &p.scenario) {
        (Some(n), None) => {
            if !LESSONS.iter().any(|l| l.number() == *n) {
                return json_error(StatusCode::BAD_REQUEST, &format!("there is no lesson {n}"), 0);
            }
        }
        (None, Some(text)) => {
            let script = match offsetlab_scenario::Script::parse(text) {
                Ok(s) => s,
                Err(e) => return json_error(StatusCode::BAD_REQUEST, &e.to_string(), e.line()),
            };
            if let Err(e) = w.room.config().caps.admit_script(&script) {
                return json_error(StatusCode::FORBIDDEN, &e.to_string(), e.line);
            }
            // Replayed once here, in memory, with the learners' caps: a scenario that fails
            // (a line the lab refuses, an expectation that does not hold) fails for the
            // instructor, not for every learner.
            let (caps, text) = (w.room.config().caps, text.clone());
            let tried = tokio::task::spawn_blocking(move || {
                let mut s = offsetlab_lab::Session::new(offsetlab_lab::SinkBackend::Memory, "")?;
                s.set_caps(Some(caps));
                s.load(&text)
            })
            .await;
            match tried {
                Ok(Ok(())) => {}
                Ok(Err(e)) => {
                    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
                    return json_error(
                        status,
                        &format!("this scenario does not run: {}", e.error),
                        e.line,
                    );
                }
                Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
            }
        }
        _ => {
            return json_error(
                StatusCode::BAD_REQUEST,
                "push one thing: {\"lesson\": N} or {\"scenario\": \"…\"}",
                0,
            )
        }
    }
    match w.room.send_push(p.lesson, p.scenario) {
        Ok(push) => Json(push).into_response(),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    }
}
