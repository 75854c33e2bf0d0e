//! The lab a request acts on ([`Scope`]), resolved before a handler runs, and how a change to
//! it is made: on a blocking thread under the session's lock, saved, synced under `--flush
//! always`, told to every page and noted for a workshop's instructor. The handlers of `api/`
//! take a `Scope`; what they share about changing a lab is written once, here.

use crate::json::{action_error, json_error};
use crate::state::{AppState, Labs};
use crate::workshop::Learner;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use offsetlab_engine::LabError;
use offsetlab_lab::clip::clip;
use offsetlab_lab::session::{ActionError, PendingSave, Session, State as LabState};
use offsetlab_lab::LabHandle;
use std::sync::Arc;

/// What the instructor's page is to show of a learner's change.
struct Note {
    figures: Vec<crate::workshop::learner::GroupFigures>,
    what: String,
    /// What the learner pressed, as their page named it (`None`: the change's lines say it).
    label: Option<String>,
}

/// The lab a request is about: the server's one lab, or — in workshop mode — the lab of the
/// learner whose cookie the request carries. Resolved before a handler runs; a request without
/// a learner's id, or with one that is not this room's, is refused here with nothing touched.
/// The instructor's view of learner N (`X-Offsetlab-Learner: N` and the instructor's token,
/// `workshop::viewer`) is learner N's lab, for reading only: any other method is `403`, and
/// the scope has no learner, so nothing is noted as theirs.
#[derive(Clone)]
pub(crate) struct Scope {
    pub(crate) lab: LabHandle,
    pub(crate) learner: Option<Arc<Learner>>,
    pub(crate) cluster: Option<Arc<crate::cluster::ClusterMirror>>,
    /// What the learner pressed to send this request, as their page named it (`post_actions`
    /// sets it from the body's `label`): noted for the instructor with the change.
    pub(crate) label: Option<String>,
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
        let viewed = crate::workshop::access::viewer_of(&parts.method, &parts.headers, app)
            .map_err(IntoResponse::into_response)?;
        let (learner, viewing) = match viewed {
            Some((_, learner)) => (learner, true),
            None => (
                crate::workshop::access::learner_of(&parts.headers, &workshop)
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
            Ok(Err(e)) => Err(crate::workshop::access::room_error(&e)),
            Err(e) => Err(json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0)),
        }
    }
}

impl Scope {
    /// Runs `f` on the session on a blocking thread (SQLite writes, big produces).
    pub(crate) async fn with_session<T: Send + 'static>(
        &self,
        f: impl FnOnce(&mut Session) -> T + Send + 'static,
    ) -> Result<T, Response> {
        self.on_session(LabHandle::lock, f).await
    }

    /// Runs `f` on the session locked by `lock` (`LabHandle::lock_for_change` brings a live
    /// clock to wall time first), on a blocking thread.
    async fn on_session<T: Send + 'static>(
        &self,
        lock: for<'a> fn(&'a LabHandle) -> offsetlab_lab::SessionGuard<'a>,
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
    pub(crate) async fn changing(
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
    pub(crate) fn shown(&self, state: &LabState) -> serde_json::Value {
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
    pub(crate) async fn change<T: 'static>(
        &self,
        what: String,
        lock: for<'a> fn(&'a LabHandle) -> offsetlab_lab::SessionGuard<'a>,
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
