//! Protection for a lab on 127.0.0.1: a page on another site must not be able to drive it.
//!
//! Checks before any handler runs: exactly one `Host` header, naming the lab itself (this
//! defeats DNS rebinding, where a hostile name resolves to 127.0.0.1 — with `--allow-remote`
//! the names are the ones `--public-host` gave), and an `Origin` header, when the browser sends
//! one, must be the lab's own origin (this defeats cross-site form posts and fetches).
//! Refusals are 403 (400 for two `Host` headers) with a JSON error. Every response says the
//! page may not be framed by another (`X-Frame-Options`, CSP `frame-ancestors`: no clickjacking),
//! and every error has a JSON body, whoever produced it.

use crate::json::json_error;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::Response;

/// The longest URI the lab answers.
const MAX_URI_BYTES: usize = 16 << 10;

pub async fn same_origin(State(app): State<AppState>, req: Request, next: Next) -> Response {
    if req.headers().get_all(header::HOST).iter().count() > 1 {
        return json_error(StatusCode::BAD_REQUEST, "refused: more than one Host header", 0);
    }
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

/// The outermost layer: security headers on every response, and a JSON body on every error
/// response — axum's own (405, 413, a rejected extractor) included.
pub async fn answer_like_an_api(req: Request, next: Next) -> Response {
    // A request line longer than any the page sends (a head over 64 KiB never gets this far:
    // the HTTP layer refuses it itself, without a body).
    let mut response = if req.uri().to_string().len() > MAX_URI_BYTES {
        json_error(
            StatusCode::URI_TOO_LONG,
            "refused: the request's URI is longer than 16 KiB",
            0,
        )
    } else {
        next.run(req).await
    };
    let status = response.status();
    let is_json = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    if (status.is_client_error() || status.is_server_error()) && !is_json {
        let body = axum::body::to_bytes(std::mem::take(response.body_mut()), 4096)
            .await
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&body);
        let reason = if text.trim().is_empty() {
            status.canonical_reason().unwrap_or("error").to_string()
        } else {
            text.trim().to_string()
        };
        let mut json = json_error(status, &offsetlab_lab::clip::clip(&reason, 500), 0);
        for (k, v) in response.headers() {
            if k != header::CONTENT_TYPE && k != header::CONTENT_LENGTH {
                json.headers_mut().insert(k.clone(), v.clone());
            }
        }
        response = json;
    }
    let headers = response.headers_mut();
    headers.insert(header::X_FRAME_OPTIONS, header::HeaderValue::from_static("DENY"));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        header::HeaderValue::from_static("frame-ancestors 'none'"),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        header::HeaderValue::from_static("nosniff"),
    );
    response
}
