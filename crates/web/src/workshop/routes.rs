//! The workshop's endpoints (documented in `docs/API.md`): a learner joining and reporting
//! where they are, and the instructor's API behind its token.
//!
//! Learner endpoints answer `404` on a server that runs no workshop. Instructor endpoints
//! (`instructor.rs`) need `Authorization: Bearer TOKEN` (compared in constant time); the
//! instructor names learners by number, never by id, and reads their labs without changing
//! them (`viewer.rs`: a learner's page, opened by the instructor, read-only).

use super::access::{learner_of, refuse_viewer, room_error, viewer_of, workshop};
use super::instructor;
use super::learner::{Progress, GUIDED_STEPS, MAX_QUIZ_OPTIONS, MAX_QUIZ_QUESTIONS};
use super::{cookie, Learner, LEARNER_COOKIE};
use crate::json::{json_error, ApiJson};
use crate::state::AppState;
use axum::extract::State;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
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
        .route("/api/instructor/room", get(instructor::get_room))
        .route(
            "/api/instructor/learners/{number}",
            delete(instructor::delete_learner),
        )
        .route(
            "/api/instructor/learners/{number}/state",
            get(instructor::get_learner_state),
        )
        .route(
            "/api/instructor/learners/{number}/scenario",
            get(instructor::get_learner_scenario),
        )
        .route(
            "/api/instructor/remove-untouched",
            post(instructor::post_remove_untouched),
        )
        .route("/api/instructor/push", post(instructor::post_push))
}

fn learner_json(l: &Learner) -> serde_json::Value {
    serde_json::json!({ "number": l.number, "name": l.name() })
}

/// `{workshop: false}`, or the learner this browser is (`null` before joining), the caps of
/// their lab and the instructor's push they have not applied yet. The instructor's view of
/// learner N (`X-Offsetlab-Learner`) is answered learner N, `"read_only": true` and no push.
async fn get_me(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let Some(w) = app.workshop_of() else {
        return Json(serde_json::json!({ "workshop": false })).into_response();
    };
    let (learner, read_only) = match viewer_of(&Method::GET, &headers, &app) {
        Ok(Some((_, learner))) => (Some(learner), true),
        Ok(None) => (
            cookie(&headers, LEARNER_COOKIE).and_then(|id| w.room.find(id)),
            false,
        ),
        Err(e) => return e.into_response(),
    };
    let caps = w.room.config().caps;
    let push = learner.as_ref().filter(|_| !read_only).and_then(|l| {
        let applied = l.activity().push_applied;
        w.room.push().filter(|p| p.seq > applied)
    });
    Json(serde_json::json!({
        "workshop": true,
        "learner": learner.as_deref().map(learner_json),
        "read_only": read_only,
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
    let w = match workshop(&app).and_then(|w| refuse_viewer(&app, &headers).map(|()| w)) {
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
    let learner = match workshop(app)
        .and_then(|w| refuse_viewer(app, headers).map(|()| w))
        .and_then(|w| learner_of(headers, &w))
    {
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
    /// The step of the guided experiment they reached (`GUIDED_STEPS`: finished), if the page
    /// says.
    #[serde(default)]
    guided: Option<u32>,
}

/// Where the learner's page is: a lesson and a step (the instructor's table shows it), and
/// how far they got in the guided experiment. The last step of a lesson completes it (kept:
/// the instructor sees who finished which lesson).
async fn post_progress(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(p): ApiJson<ProgressReport>,
) -> Response {
    on_learner(&app, &headers, |l| {
        if let Some(g) = p.guided.filter(|g| *g > GUIDED_STEPS) {
            return Err(bad(format!(
                "the guided experiment has steps 0 to {GUIDED_STEPS} ({GUIDED_STEPS}: finished), not {g}"
            )));
        }
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
        saved(l.update(|a| {
            if let Some(done) = progress.as_ref().filter(|p| p.step >= p.steps) {
                a.completed.insert(done.lesson);
            }
            a.progress = progress;
            if let Some(g) = p.guided {
                a.guided = Some(a.guided.map_or(g, |was| was.max(g)));
            }
        }))
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
