//! The HTTP API (documented in `docs/API.md`) and the router that puts it together with the
//! workshop's endpoints, the page's assets and the guards in front of them all.
//!
//! - [`lab`]: the lab's state, actions, clock, reset and scenario — what changes the lab;
//! - [`records`]: the log, one record, the sinks' rows and `__consumer_offsets`, page by page;
//! - [`catalog`]: what the page reads beside the lab: its meta, the lessons, the explorer;
//! - [`events`]: the server-sent events that tell every tab the lab changed.

mod catalog;
mod events;
mod lab;
mod records;

pub use records::MAX_PAGE;

use crate::json::json_error;
use crate::state::AppState;
use crate::{assets, guard};
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::routing::{get, post};
use axum::Router;

pub fn router(state: AppState) -> Router {
    Router::new()
        .route("/api/state", get(lab::get_state))
        .route("/api/actions", post(lab::post_actions))
        .route("/api/clock", post(lab::post_clock))
        .route("/api/reset", post(lab::post_reset))
        .route("/api/records", get(records::get_records))
        .route("/api/record", get(records::get_record))
        .route("/api/sink-rows", get(records::get_sink_rows))
        .route("/api/consumer-offsets", get(records::get_consumer_offsets))
        .route("/api/scenario", get(lab::get_scenario).post(lab::post_scenario))
        .route("/api/meta", get(catalog::get_meta))
        .route("/api/lessons", get(catalog::get_lessons))
        .route("/api/explore", get(catalog::get_explore))
        .route("/api/explore/replay", post(catalog::post_explore_replay))
        .route("/api/events", get(events::get_events))
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
