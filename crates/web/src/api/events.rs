//! Server-sent events: the version the lab reached, pushed to every open tab when it changes
//! (each tab then fetches the new state); in a workshop, also the instructor's pushes.
//!
//! The server's one lab announces a version once its state is built ([`built_versions`]): the
//! tab's `GET /api/state?min_version=N` is then answered from what is kept, never waiting for
//! the lab's lock, however many tabs ask. A burst of changes is one announcement: the versions
//! that arrive while a state is being built are taken together, and a tab is told at most
//! [`ANNOUNCEMENTS_PER_SECOND`] versions a second — a page cannot draw more, and each state
//! built is a turn of the lab's lock that a producer waits for.

use crate::json::json_error;
use crate::state::{AppState, Labs};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use offsetlab_lab::LabHandle;
use std::convert::Infallible;
use std::time::Duration;
use tokio::sync::broadcast::{self, error::RecvError, error::TryRecvError};
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::{Stream, StreamExt};

/// At most this many announcements a second on one event stream.
const ANNOUNCEMENTS_PER_SECOND: u64 = 20;

/// A `state` event for `version`.
fn state_event(version: u64) -> SseEvent {
    SseEvent::default()
        .event("state")
        .data(format!("{{\"version\":{version}}}"))
}

/// What [`built_versions`] carries from one announcement to the next.
struct Following {
    lab: LabHandle,
    changes: broadcast::Receiver<u64>,
    /// The last version announced, and when.
    told: Option<(u64, tokio::time::Instant)>,
}

/// The lab's versions as `state` events, each announced once the page's state at it (or a newer
/// one) is built and kept: one build per burst of changes, shared by every tab.
fn built_versions(lab: LabHandle) -> impl Stream<Item = Result<SseEvent, Infallible>> + Send {
    let changes = lab.subscribe();
    let following = Following {
        lab,
        changes,
        told: None,
    };
    futures_util::stream::unfold(following, |mut f| async move {
        loop {
            // A change (or so many that some were dropped: a change all the same).
            let mut latest = match f.changes.recv().await {
                Ok(v) => Some(v),
                Err(RecvError::Lagged(_)) => None,
                Err(RecvError::Closed) => return None,
            };
            if let Some((_, at)) = f.told {
                tokio::time::sleep_until(at + Duration::from_millis(1000 / ANNOUNCEMENTS_PER_SECOND)).await;
            }
            // Every change announced meanwhile is in the state built next.
            loop {
                match f.changes.try_recv() {
                    Ok(v) => latest = Some(latest.map_or(v, |l: u64| l.max(v))),
                    Err(TryRecvError::Lagged(_)) => {}
                    Err(_) => break,
                }
            }
            let lab = f.lab.clone();
            let version = match tokio::task::spawn_blocking(move || lab.state_json(None)).await {
                Ok(Ok(built)) => built.version,
                // The state cannot be built (a sink that cannot be read): the change is announced
                // all the same, and the tab's own request is answered with why — a page left
                // showing the state before would say nothing changed.
                _ => latest.unwrap_or_else(|| f.lab.view().version()),
            };
            if f.told.is_some_and(|(v, _)| v >= version) {
                continue;
            }
            f.told = Some((version, tokio::time::Instant::now()));
            return Some((Ok(state_event(version)), f));
        }
    })
}

/// The versions the lab reaches, as `state` events; in a workshop also the instructor's
/// pushes, as `push` events (the page then asks `/api/workshop/me` what to apply).
pub(super) async fn get_events(State(app): State<AppState>, headers: axum::http::HeaderMap) -> Response {
    let versions = |rx| {
        BroadcastStream::new(rx)
            .filter_map(|v: Result<u64, _>| v.ok().map(|version| Ok::<_, Infallible>(state_event(version))))
    };
    let stream: std::pin::Pin<Box<dyn Stream<Item = Result<SseEvent, Infallible>> + Send>> = match &app.labs {
        // On a cluster the page's state is built per request, with the cluster's figures.
        Labs::One(lab) if app.cluster.is_some() => Box::pin(versions(lab.subscribe())),
        Labs::One(lab) => Box::pin(built_versions(lab.clone())),
        Labs::Workshop(w) => {
            let learner = match crate::workshop::access::learner_of(&headers, w) {
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
