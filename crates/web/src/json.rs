//! The API's JSON in and out: extractors whose rejections are the API's JSON error, that error
//! (`{ "error": …, "line": … }`), and a refused action's answer. Every endpoint — the lab's, the
//! workshop's, the guards', the assets' 404 — answers errors the same way, so this is the one
//! place that shapes them.

use axum::extract::rejection::JsonRejection;
use axum::extract::Query;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use offsetlab_lab::clip::clip;
use offsetlab_lab::session::ActionError;

/// `{ "error": …, "line": … }` with a status.
pub fn json_error(status: StatusCode, error: &str, line: usize) -> Response {
    // An error names what it refused; a 10 kB topic name is not repeated whole.
    let error = clip(error, MAX_ERROR_BYTES);
    (status, Json(serde_json::json!({ "error": error, "line": line }))).into_response()
}

/// `Query<T>` whose rejection is the API's JSON error.
pub(crate) struct ApiQuery<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequestParts<S> for ApiQuery<T> {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut axum::http::request::Parts, state: &S) -> Result<Self, Response> {
        Query::<T>::from_request_parts(parts, state)
            .await
            .map(|Query(q)| ApiQuery(q))
            .map_err(|e| json_error(e.status(), &e.body_text(), 0))
    }
}

/// `Json<T>` whose rejection is the API's JSON error (with 413 for an oversized body).
pub(crate) struct ApiJson<T>(pub T);

impl<S: Send + Sync, T: serde::de::DeserializeOwned> axum::extract::FromRequest<S> for ApiJson<T> {
    type Rejection = Response;

    async fn from_request(req: axum::extract::Request, state: &S) -> Result<Self, Response> {
        Json::<T>::from_request(req, state)
            .await
            .map(|Json(v)| ApiJson(v))
            .map_err(|e: JsonRejection| {
                // A body too large stays 413; anything else about the JSON is the client's 400.
                let status = if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
                    e.status()
                } else {
                    StatusCode::BAD_REQUEST
                };
                json_error(status, &format!("malformed request body: {}", e.body_text()), 0)
            })
    }
}

/// A refused action: the error, the line number, and the line as it was written — cut short
/// (a refused 3 MB line is named, not echoed whole).
pub(crate) fn action_error(e: &ActionError) -> Response {
    let status = StatusCode::from_u16(e.status).unwrap_or(StatusCode::UNPROCESSABLE_ENTITY);
    (
        status,
        Json(serde_json::json!({
            "error": clip(&e.error, MAX_ERROR_BYTES),
            "line": e.line,
            "text": clip(&e.text, MAX_ERROR_BYTES),
        })),
    )
        .into_response()
}

/// The most of a refused line (or its error) an error response repeats.
pub(crate) const MAX_ERROR_BYTES: usize = 500;
