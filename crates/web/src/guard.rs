//! Protection for a lab on 127.0.0.1: a page on another site must not be able to drive it.
//!
//! Two checks, before any handler runs: the `Host` header must name the lab itself (this defeats
//! DNS rebinding, where a hostile name resolves to 127.0.0.1), and an `Origin` header, when the
//! browser sends one, must be the lab's own origin (this defeats cross-site form posts and
//! fetches). Refusals are 403 with a JSON error.

use crate::api::{json_error, AppState};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

pub async fn same_origin(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("");
    if !app.host_allowed(host) {
        return json_error(
            StatusCode::FORBIDDEN,
            &format!("refused: Host '{host}' is not this lab"),
            0,
        );
    }
    if let Some(origin) = req.headers().get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        if origin != format!("http://{host}") {
            return json_error(
                StatusCode::FORBIDDEN,
                &format!("refused: requests from origin '{origin}' may not drive this lab"),
                0,
            );
        }
    }
    next.run(req).await
}
