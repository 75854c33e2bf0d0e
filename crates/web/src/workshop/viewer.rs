//! The instructor looking at a learner's lab through the learner's own page, read-only.
//!
//! The instructor's page opens `/?learner=N` in a new tab, the token in that tab's
//! `sessionStorage`; that page sends every request with `Authorization: Bearer TOKEN` and
//! `X-Offsetlab-Learner: N`. Such a request is learner N's, whatever cookie the browser has
//! (the instructor may have joined as a learner too): [`viewer_of`](super::access::viewer_of) checks it before anything
//! else — the token (`401`), a read (`GET`/`HEAD`, else `403`: nothing a viewer sends changes a
//! lab, a learner's file or the room), a learner the room has (`404`) — and the lab's `Scope`
//! (`scope.rs`) then serves learner N's lab. It is not counted against the learner's request rate.
//!
//! The instructor never holds a learner's id (it is their cookie): [`read_only`], a layer
//! around every endpoint, takes it out of what a viewer is answered (a lab's state says where
//! its files are, a narrative line names a sink's path) — `<learner N>` in its place.

use super::access::viewer_of;
use crate::json::json_error;
use crate::state::AppState;
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The most of an answer the viewer's layer reads to take the id out of it.
const MAX_VIEWED_BYTES: usize = 64 << 20;

/// A request naming no learner, untouched. A viewer's: refused as [`viewer_of`] says, or
/// answered with the learner's id taken out (an event stream, which names no path, as it is).
pub(crate) async fn read_only(State(app): State<AppState>, req: Request, next: Next) -> Response {
    let learner = match viewer_of(req.method(), req.headers(), &app) {
        Ok(None) => return next.run(req).await,
        Ok(Some((_, learner))) => learner,
        Err(refused) => return refused.into_response(),
    };
    let response = next.run(req).await;
    let streamed = response
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    if streamed {
        return response;
    }
    let (mut parts, body) = response.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_VIEWED_BYTES).await else {
        return json_error(
            StatusCode::INTERNAL_SERVER_ERROR,
            "this answer is too large to show the instructor",
            0,
        );
    };
    let hidden = replace(
        &bytes,
        learner.id.as_str().as_bytes(),
        format!("<learner {}>", learner.number).as_bytes(),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.insert(
        header::CACHE_CONTROL,
        header::HeaderValue::from_static("no-store"),
    );
    Response::from_parts(parts, axum::body::Body::from(hidden))
}

/// `haystack` with every `needle` replaced by `with` (`needle` is not empty).
fn replace(haystack: &[u8], needle: &[u8], with: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(haystack.len());
    let mut rest = haystack;
    while !rest.is_empty() {
        match rest.windows(needle.len().max(1)).position(|w| w == needle) {
            Some(at) if !needle.is_empty() => {
                out.extend_from_slice(&rest[..at]);
                out.extend_from_slice(with);
                rest = &rest[at + needle.len()..];
            }
            _ => {
                out.extend_from_slice(rest);
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::replace;

    #[test]
    fn every_occurrence_is_replaced_and_nothing_else() {
        assert_eq!(replace(b"a/abc/b/abc", b"abc", b"<n>"), b"a/<n>/b/<n>");
        assert_eq!(replace(b"abcabc", b"abc", b""), b"");
        assert_eq!(replace(b"ab", b"abc", b"x"), b"ab");
        assert_eq!(replace(b"\xff\xfeabc", b"abc", b"x"), b"\xff\xfex");
        assert_eq!(replace(b"xyz", b"", b"q"), b"xyz");
    }
}
