//! Workshop mode (`serve --workshop`): one server, a lab per learner, and the instructor's view
//! of the room.
//!
//! - [`secret`]: learner ids and the instructor's token (128 random bits, compared in constant
//!   time).
//! - [`learner`]: one learner — name, number, their lab in memory or on disk, what the
//!   instructor sees of them.
//! - [`room`]: every learner, labs opened on demand and evicted when idle, pushes.
//! - [`rate`]: a learner's request rate.
//! - [`access`]: who is asking — a learner's cookie, the instructor's token, the learner an
//!   instructor views — or why the request is refused.
//! - [`routes`]: the endpoints: joining, a learner's progress and quiz answers; `instructor`:
//!   the instructor's API; [`summary`]: where the room is, counted for the instructor's page;
//!   [`viewer`]: the instructor viewing a learner's lab through the learner's page, read-only.
//!
//! Every endpoint of the lab itself (`/api/state`, `/api/actions`, …) is the same in workshop
//! mode: the cookie picks *which* lab it serves ([`crate::scope::Scope`]), before anything
//! else runs.

pub(crate) mod access;
mod instructor;
pub mod learner;
pub mod rate;
pub mod room;
pub(crate) mod routes;
pub mod secret;
pub mod summary;
pub mod unreadable;
pub mod viewer;

pub use learner::Learner;
pub use rate::RateLimit;
pub use room::{Push, Room, RoomError, WorkshopConfig};
pub use secret::{Secret, Token};
pub use unreadable::Unreadable;

/// Event streams (`/api/events`, one per open tab) a learner may hold at once. A closed tab's
/// stream is let go at its next keep-alive (15 s), so there is room for reloads.
pub const MAX_STREAMS_PER_LEARNER: usize = 6;

/// The cookie that carries a learner's id.
pub const LEARNER_COOKIE: &str = "offsetlab_learner";

/// A workshop: its room, the instructor's token, and the instructor's own lab when the Kafka
/// listener serves one.
pub struct Workshop {
    pub room: Room,
    pub token: Token,
    /// The data directory's own lab, served to Kafka clients (`--kafka` with `--workshop`):
    /// the instructor's page shows it beside the learners'.
    pub demo: Option<offsetlab_lab::LabHandle>,
}

/// The value of cookie `name` in a request's `Cookie` headers, if it has one.
pub(crate) fn cookie<'a>(headers: &'a axum::http::HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(axum::http::header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{header, HeaderMap, HeaderValue};

    #[test]
    fn the_cookie_is_found_among_others() {
        let mut h = HeaderMap::new();
        h.append(
            header::COOKIE,
            HeaderValue::from_static("a=1; offsetlab_learnerx=no"),
        );
        h.append(
            header::COOKIE,
            HeaderValue::from_static("b=2;offsetlab_learner=abc ; c=3"),
        );
        assert_eq!(cookie(&h, LEARNER_COOKIE), Some("abc"));
        assert_eq!(cookie(&h, "d"), None);
    }
}
