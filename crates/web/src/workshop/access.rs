//! Who is asking, decided before a workshop's request reaches a lab: the learner a cookie names
//! (counted against their rate), the instructor a token proves, the learner an instructor's
//! `X-Offsetlab-Learner` names — or why the request is refused ([`Refusal`], answered as the
//! API's JSON error). The learner's endpoints, the instructor's, the read-only viewer and the
//! lab's own [`crate::scope::Scope`] all ask the same questions, so the answers live here, below
//! all of them.

use super::{cookie, Learner, RoomError, Workshop, LEARNER_COOKIE};
use crate::json::json_error;
use crate::state::AppState;
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use std::sync::Arc;

/// The header that names the learner whose lab the instructor views.
pub const LEARNER_HEADER: &str = "x-offsetlab-learner";

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
    /// `X-Offsetlab-Learner` is not one learner's number.
    BadViewer,
    /// The instructor's view of a learner's lab changes nothing.
    ReadOnly,
    /// The instructor named a learner the room does not have.
    NoSuchLearner(u32),
    /// The cookie names a learner whose file did not read when the server started: set aside
    /// until the instructor fixes it (never sent to join again as somebody new).
    Unreadable,
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
            Refusal::BadViewer => json_error(
                StatusCode::BAD_REQUEST,
                "X-Offsetlab-Learner names one learner by number (X-Offsetlab-Learner: 3)",
                0,
            ),
            Refusal::ReadOnly => json_error(
                StatusCode::FORBIDDEN,
                "read-only: the instructor views this lab",
                0,
            ),
            Refusal::Unreadable => json_error(
                StatusCode::SERVICE_UNAVAILABLE,
                "your lab is here but could not be read when the server started; nothing was changed or deleted — ask the instructor (the server's console names the file)",
                0,
            ),
            Refusal::NoSuchLearner(n) => json_error(
                StatusCode::NOT_FOUND,
                &format!("there is no learner {n} (removed, or never joined)"),
                0,
            ),
        }
    }
}

pub(crate) fn workshop(app: &AppState) -> Result<Arc<Workshop>, Refusal> {
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
        if w.room.is_unreadable(id) {
            return Err(Refusal::Unreadable);
        }
        return Err(Refusal::MustJoin(
            "this browser's learner id is not one of this workshop's (a forged id, or a lab from another server): join again",
        ));
    };
    w.room.admit_request(&learner).map_err(|wait| Refusal::TooFast {
        per_second: w.room.config().rate.per_second,
        wait,
    })?;
    learner.seen();
    Ok(learner)
}

/// Refuses a request that changes something when it comes from the instructor's view of a
/// learner's lab (`X-Offsetlab-Learner`): `401` without the token, else `403`.
pub(crate) fn refuse_viewer(app: &AppState, headers: &HeaderMap) -> Result<(), Refusal> {
    viewer_of(&Method::POST, headers, app).map(|_| ())
}

pub(crate) fn room_error(e: &RoomError) -> Response {
    if let RoomError::Removed = e {
        // As a cookie the room does not have: the page shows its join form.
        return Refusal::MustJoin("the instructor removed you from the workshop: join again").into_response();
    }
    json_error(
        StatusCode::from_u16(e.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
        &e.to_string(),
        0,
    )
}

/// The workshop, if the request carries the instructor's token.
pub(crate) fn instructor(app: &AppState, headers: &HeaderMap) -> Result<Arc<Workshop>, Refusal> {
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

/// The workshop and the learner whose lab the instructor views.
pub(crate) type Viewed = (Arc<Workshop>, Arc<Learner>);

/// `Ok(None)` for a request that names no learner (no `X-Offsetlab-Learner`); learner N, for a
/// read by the instructor naming them; else why not.
pub(crate) fn viewer_of(
    method: &Method,
    headers: &HeaderMap,
    app: &AppState,
) -> Result<Option<Viewed>, Refusal> {
    let mut named = headers.get_all(LEARNER_HEADER).iter();
    let Some(value) = named.next() else {
        return Ok(None);
    };
    let w = instructor(app, headers)?;
    let number = value
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|v| v.bytes().all(|b| b.is_ascii_digit()))
        .and_then(|v| v.parse::<u32>().ok());
    let (Some(number), None) = (number, named.next()) else {
        return Err(Refusal::BadViewer);
    };
    if *method != Method::GET && *method != Method::HEAD {
        return Err(Refusal::ReadOnly);
    }
    let learner = w.room.by_number(number).ok_or(Refusal::NoSuchLearner(number))?;
    Ok(Some((w, learner)))
}
