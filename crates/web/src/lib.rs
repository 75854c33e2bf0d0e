//! # offsetlab-web
//!
//! The lab in a browser. An axum router serves the lab behind an [`offsetlab_lab::LabHandle`]
//! (shared with the Kafka listener) as a small JSON API (`docs/API.md`), pushes a version number to
//! every open tab over server-sent events when the lab changes (each tab then fetches the new
//! state, so several tabs stay in sync), and serves the page — plain HTML, CSS and JavaScript
//! embedded in the binary, so running the lab needs no Node build.

mod api;
mod assets;
pub mod cluster;
mod guard;
pub mod http;
mod json;
mod scope;
mod state;
pub mod workshop;

pub use api::{router, MAX_PAGE};
pub use state::AppState;

/// Largest request body accepted (a scenario import); actions are far smaller.
pub const MAX_BODY_BYTES: usize = 4 << 20;
