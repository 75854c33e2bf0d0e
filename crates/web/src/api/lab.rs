//! The endpoints that read or change the lab as a whole: its state (what the page draws), action
//! lines, the clock's mode, a reset to the seed, and a scenario exported or loaded.

use crate::json::{json_error, ApiJson};
use crate::scope::Scope;
use axum::extract::RawQuery;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use offsetlab_lab::clip::clip;
use offsetlab_lab::session::{ActionError, ClockMode, Session};
use offsetlab_lab::LabHandle;
use serde::Deserialize;

pub(crate) fn state_response(session: &Session) -> Response {
    match session.state() {
        Ok(state) => Json(state).into_response(),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    }
}

/// `GET /api/state[?min_version=N]`: the lab's state, built once per version and kept
/// ([`LabHandle::state_json`]) — every page asking for the same version is sent the same bytes,
/// and only the first waits for the lab's lock to build them. Without `min_version` the state is
/// at least the version the lab had when asked (a client that just changed the lab sees its
/// change); with it, at least version `N` — what a page that was told `N` by `/api/events`
/// asks, answered at once from what is kept, as the events announce only versions whose state
/// is built. On a cluster the state is overlaid with the cluster's figures, built each time.
pub(super) async fn get_state(scope: Scope, RawQuery(query): RawQuery) -> Response {
    let min_version = match min_version(query.as_deref()) {
        Ok(v) => v,
        Err(e) => return json_error(StatusCode::BAD_REQUEST, &e, 0),
    };
    if scope.cluster.is_some() {
        let shown = scope.clone();
        return scope
            .with_session(move |s| match s.state() {
                Ok(state) => Json(shown.shown(&state)).into_response(),
                Err(_) => state_response(s),
            })
            .await
            .unwrap_or_else(|e| e);
    }
    let built = match scope.lab.built_state(min_version) {
        Some(built) => Ok(built),
        None => {
            let lab = scope.lab.clone();
            match tokio::task::spawn_blocking(move || lab.state_json(min_version)).await {
                Ok(built) => built,
                Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
            }
        }
    };
    match built {
        Ok(built) => ([(header::CONTENT_TYPE, "application/json")], built.json).into_response(),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    }
}

/// The `min_version` of a state request's query, if it has one (other parameters are ignored).
fn min_version(query: Option<&str>) -> Result<Option<u64>, String> {
    let Some(query) = query else {
        return Ok(None);
    };
    match query.split('&').find_map(|p| p.strip_prefix("min_version=")) {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| "min_version must be a version number (0 or more)".to_string()),
    }
}

#[derive(Deserialize)]
pub(super) struct Actions {
    lines: Vec<String>,
    /// What the learner pressed ("Crash mid-batch"), for the instructor's page: at most 80
    /// characters, no control characters. Checked on every server, kept only in a workshop.
    #[serde(default)]
    label: Option<String>,
}

pub(super) async fn post_actions(scope: Scope, ApiJson(actions): ApiJson<Actions>) -> Response {
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
            LabHandle::lock,
            move |s| {
                // Refused before the live clock catches up: a refused request adds no `clock`
                // line either — it changes nothing.
                let wall = offsetlab_lab::session::wall_clock_ms();
                Session::parse_lines(&actions.lines)?;
                s.refuse_far_ahead(&actions.lines, wall)?;
                s.catch_up_if_stale(wall)?;
                s.apply_lines(&actions.lines)
            },
            |applied, state| Json(serde_json::json!({ "applied": applied, "state": state })).into_response(),
        )
        .await
}

/// Back to the seed lab, in the clock's mode (a live lab's seed is built at now).
pub(super) async fn post_reset(scope: Scope) -> Response {
    scope
        .changing("reset the lab to the seed", |s| {
            s.reset_to_seed(offsetlab_lab::session::wall_clock_ms())
        })
        .await
}

#[derive(Deserialize)]
pub(super) struct ClockRequest {
    mode: String,
}

/// `{"mode": "live"}` sets the clock to follow wall time — and brings it there at once, firing
/// what falls due on the way — or `{"mode": "paused"}` stops it where it is.
pub(super) async fn post_clock(scope: Scope, ApiJson(req): ApiJson<ClockRequest>) -> Response {
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

pub(super) async fn get_scenario(scope: Scope) -> Response {
    scope
        .with_session(|s| match s.export() {
            Ok(text) => (
                [
                    (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
                    (
                        header::CONTENT_DISPOSITION,
                        "attachment; filename=\"offsetlab-session.scn\"",
                    ),
                ],
                text,
            )
                .into_response(),
            Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
        })
        .await
        .unwrap_or_else(|e| e)
}

pub(super) async fn post_scenario(
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
pub(super) async fn load(scope: Scope, what: String, source: String) -> Response {
    scope.changing(what, move |s| s.load(&source)).await
}
