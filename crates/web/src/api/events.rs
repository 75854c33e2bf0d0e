//! Server-sent events: the version the lab reached, pushed to every open tab when it changes
//! (each tab then fetches the new state); in a workshop, also the instructor's pushes.

use crate::json::json_error;
use crate::state::{AppState, Labs};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use std::convert::Infallible;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::{Stream, StreamExt};

/// The versions the lab reaches, as `state` events; in a workshop also the instructor's
/// pushes, as `push` events (the page then asks `/api/workshop/me` what to apply).
pub(super) async fn get_events(State(app): State<AppState>, headers: axum::http::HeaderMap) -> Response {
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
