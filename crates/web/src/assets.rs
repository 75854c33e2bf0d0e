//! The page: plain HTML, CSS and ES modules compiled into the binary.
//!
//! There is no build step between these files and the browser: each is served as it is in
//! `assets/`, so a newcomer changes the page by editing a file and rebuilding the binary. The
//! page's scripts are ES modules under `assets/js/` (one per concern, `main.js` first); the
//! table below names every one of them, and a test checks that it names them all.

use axum::extract::Path;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

/// One embedded file: the path it is served under (relative to `assets/`) and its text.
type Asset = (&'static str, &'static str);

/// Embeds `assets/<path>` under `<path>`.
macro_rules! assets {
    ($($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../assets/", $path)))),*]
    };
}

/// The page's ES modules, `assets/js/…` served as `/js/…`.
const MODULES: &[Asset] = assets![
    "js/actions.js",
    "js/api.js",
    "js/compare.js",
    "js/content.js",
    "js/dom.js",
    "js/experiment.js",
    "js/explorer.js",
    "js/format.js",
    "js/forms.js",
    "js/guided.js",
    "js/learn.js",
    "js/lessons.js",
    "js/main.js",
    "js/store.js",
    "js/toast.js",
    "js/view.js",
    "js/workshop.js",
    "js/panels/cards.js",
    "js/panels/cluster.js",
    "js/panels/consumer_offsets.js",
    "js/panels/consumers.js",
    "js/panels/experiment.js",
    "js/panels/group_bar.js",
    "js/panels/log.js",
    "js/panels/log_strip.js",
    "js/panels/narrative.js",
    "js/panels/plan.js",
    "js/panels/share_group.js",
    "js/panels/consumer_group.js",
    "js/panels/sink.js",
    "js/panels/transactions.js",
];

/// The pages and their stylesheet, served at the root.
const FILES: &[Asset] = assets!["index.html", "style.css", "instructor.html", "instructor.js",];

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        _ => "text/javascript; charset=utf-8",
    }
}

fn serve(table: &[Asset], path: &str) -> Response {
    match table.iter().find(|(p, _)| *p == path) {
        Some((p, body)) => (
            [
                (header::CONTENT_TYPE, content_type(p)),
                (header::CACHE_CONTROL, "no-cache"),
            ],
            *body,
        )
            .into_response(),
        None => crate::json::json_error(StatusCode::NOT_FOUND, "no such file", 0),
    }
}

/// `/` and `/instructor`, the stylesheet, and every module under `/js/`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(|| async { serve(FILES, "index.html") }))
        .route("/instructor", get(|| async { serve(FILES, "instructor.html") }))
        .route(
            "/{file}",
            get(|Path(file): Path<String>| async move { serve(FILES, &file) }),
        )
        .route(
            "/js/{*module}",
            get(|Path(module): Path<String>| async move { serve(MODULES, &format!("js/{module}")) }),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.js` file under `assets/js/` is in [`MODULES`], so none is left unserved.
    #[test]
    fn every_module_is_served() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("assets");
        let mut found = Vec::new();
        let mut dirs = vec![root.join("js")];
        while let Some(dir) = dirs.pop() {
            let Ok(entries) = std::fs::read_dir(&dir) else {
                continue;
            };
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    dirs.push(p);
                } else if p.extension().is_some_and(|x| x == "js") {
                    let rel = p
                        .strip_prefix(&root)
                        .map(|r| r.to_string_lossy().replace('\\', "/"));
                    found.extend(rel.ok());
                }
            }
        }
        found.sort();
        let mut listed: Vec<String> = MODULES.iter().map(|(p, _)| p.to_string()).collect();
        listed.sort();
        assert_eq!(found, listed, "assets/js and MODULES differ");
    }

    #[test]
    fn unknown_files_are_404() {
        assert_eq!(serve(FILES, "secret.txt").status(), StatusCode::NOT_FOUND);
        assert_eq!(serve(MODULES, "js/../index.html").status(), StatusCode::NOT_FOUND);
        assert_eq!(serve(MODULES, "js/main.js").status(), StatusCode::OK);
        assert_eq!(serve(FILES, "style.css").status(), StatusCode::OK);
    }
}
