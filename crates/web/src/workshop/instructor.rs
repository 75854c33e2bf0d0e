//! The instructor's API (documented in `docs/API.md`): the room and its summary, a learner's
//! lab read, a lesson or a scenario pushed to everyone, learners removed. Every endpoint needs
//! the instructor's token ([`instructor`]); learners are named by number, never by id.

use super::access::{instructor, room_error};
use super::summary::summarize;
use super::Workshop;
use crate::json::{json_error, ApiJson};
use crate::state::AppState;
use axum::extract::{Path, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use offsetlab_lab::LabHandle;
use offsetlab_scenario::lessons::LESSONS;
use serde::Deserialize;
use std::sync::Arc;

/// Every learner — number, name, lesson and step, the lessons they completed, last action
/// (named as they pressed it), figures, whether their lab is in memory, their open pages —,
/// every quiz question's answers counted, and the room's summary.
pub(crate) async fn get_room(State(app): State<AppState>, headers: HeaderMap) -> Response {
    let w = match instructor(&app, &headers) {
        Ok(w) => w,
        Err(e) => return e.into_response(),
    };
    let mut tallies: std::collections::BTreeMap<u32, std::collections::BTreeMap<u32, u32>> =
        Default::default();
    let room: Vec<_> = w.room.learners().into_iter().map(|l| (l.activity(), l)).collect();
    let learners: Vec<serde_json::Value> = room
        .iter()
        .map(|(a, l)| {
            for (q, c) in &a.quiz {
                *tallies.entry(*q).or_default().entry(*c).or_default() += 1;
            }
            serde_json::json!({
                "number": a.number,
                "name": a.name,
                "joined_ms": a.joined_ms,
                "progress": a.progress,
                "completed": a.completed,
                "guided": a.guided,
                "last_action": a.last_action,
                "last_label": a.last_label,
                "last_action_ms": a.last_action_ms,
                "figures": a.figures,
                "quiz_answered": a.quiz.len(),
                "untouched": a.untouched(),
                "seen_ms": l.seen_ms(),
                "pages": l.pages(),
                "resident": l.is_resident(),
                "recovered": l.recovered(),
            })
        })
        .collect();
    Json(serde_json::json!({
        "learners": learners,
        "summary": summarize(room.iter().map(|(a, _)| a)),
        "quiz": tallies,
        "max_learners": w.room.config().max_learners,
        "resident": learners.iter().filter(|l| l["resident"] == true).count(),
        "push": w.room.push(),
        "demo": w.demo.is_some(),
        "unreadable": w.room.unreadable().iter().map(|u| u.for_instructor()).collect::<Vec<_>>(),
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
pub(crate) async fn get_learner_state(
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
pub(crate) async fn get_learner_scenario(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(number): Path<u32>,
) -> Response {
    read_learner(&app, &headers, number, |s, hide| match s.export() {
        Ok(text) => ([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], hide(text)).into_response(),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    })
    .await
    .unwrap_or_else(|e| e)
}

#[derive(Deserialize)]
pub(crate) struct PushRequest {
    lesson: Option<u32>,
    scenario: Option<String>,
}

/// "Everyone: lesson 2" — or a scenario to load. Each learner's page applies it once (now if
/// it is open, else when it next opens); a scenario is checked first (it parses, it fits the
/// caps), so no learner gets one their lab would refuse.
pub(crate) async fn post_push(
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

/// Removes learner `number` (`Room::remove`): `{"removed": [number]}`.
pub(crate) async fn delete_learner(
    State(app): State<AppState>,
    headers: HeaderMap,
    Path(number): Path<u32>,
) -> Response {
    let w = match instructor(&app, &headers) {
        Ok(w) => w,
        Err(e) => return e.into_response(),
    };
    match tokio::task::spawn_blocking(move || w.room.remove(number)).await {
        Ok(Ok(())) => Json(serde_json::json!({ "removed": [number] })).into_response(),
        Ok(Err(e)) => room_error(&e),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    }
}

/// The longest idle time `remove-untouched` takes: a day.
const MAX_IDLE_MINUTES: u64 = 24 * 60;

#[derive(Deserialize)]
pub(crate) struct RemoveUntouched {
    idle_minutes: u64,
}

/// Clears a flooded room: removes every learner who never did anything, has no page open and
/// made no request for `idle_minutes` (`Room::remove_untouched`): `{"removed": [numbers]}`.
pub(crate) async fn post_remove_untouched(
    State(app): State<AppState>,
    headers: HeaderMap,
    ApiJson(r): ApiJson<RemoveUntouched>,
) -> Response {
    let w = match instructor(&app, &headers) {
        Ok(w) => w,
        Err(e) => return e.into_response(),
    };
    if r.idle_minutes > MAX_IDLE_MINUTES {
        return json_error(
            StatusCode::BAD_REQUEST,
            &format!("idle_minutes is 0 to {MAX_IDLE_MINUTES}"),
            0,
        );
    }
    let idle = std::time::Duration::from_secs(r.idle_minutes * 60);
    match tokio::task::spawn_blocking(move || w.room.remove_untouched(idle)).await {
        Ok((removed, errors)) => match errors.first() {
            None => Json(serde_json::json!({ "removed": removed })).into_response(),
            Some(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                Json(serde_json::json!({
                    "error": format!("{} learners were not removed: {e}", errors.len()),
                    "line": 0,
                    "removed": removed,
                })),
            )
                .into_response(),
        },
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    }
}
