//! The page: plain HTML, CSS and JavaScript compiled into the binary.

use axum::http::header;
use axum::response::IntoResponse;

pub const INDEX_HTML: &str = include_str!("../assets/index.html");
pub const APP_JS: &str = include_str!("../assets/app.js");
pub const CONTENT_JS: &str = include_str!("../assets/content.js");
pub const STYLE_CSS: &str = include_str!("../assets/style.css");

fn asset(content_type: &'static str, body: &'static str) -> impl IntoResponse {
    (
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
}

pub async fn index() -> impl IntoResponse {
    asset("text/html; charset=utf-8", INDEX_HTML)
}

pub async fn app_js() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", APP_JS)
}

pub async fn content_js() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", CONTENT_JS)
}

pub async fn style_css() -> impl IntoResponse {
    asset("text/css; charset=utf-8", STYLE_CSS)
}

pub const INSTRUCTOR_HTML: &str = include_str!("../assets/instructor.html");
pub const INSTRUCTOR_JS: &str = include_str!("../assets/instructor.js");

pub async fn instructor() -> impl IntoResponse {
    asset("text/html; charset=utf-8", INSTRUCTOR_HTML)
}

pub async fn instructor_js() -> impl IntoResponse {
    asset("text/javascript; charset=utf-8", INSTRUCTOR_JS)
}
