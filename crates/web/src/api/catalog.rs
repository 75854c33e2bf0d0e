//! What the page reads beside the lab: its meta (the settings' names and explanations), the
//! lessons, the explorer's matrix (computed once), and a replay of one of its cells.

use crate::json::{json_error, ApiJson};
use crate::scope::Scope;
use crate::state::AppState;
use crate::state::Matrix;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use offsetlab_engine::share::AcknowledgementMode;
use offsetlab_engine::sink::SinkKind;
use offsetlab_engine::strategy::CommitStrategy;
use offsetlab_scenario::explore::{self};
use offsetlab_scenario::explore_share;
use offsetlab_scenario::lessons::{self, LESSONS};
use offsetlab_scenario::Script;
use serde::Deserialize;

pub(super) async fn get_meta() -> Response {
    let strategies: Vec<_> = CommitStrategy::ALL
        .iter()
        .map(|s| {
            serde_json::json!({
                "name": s.name(),
                "explanation": s.explanation(),
                "commits_after_processing": s.commits_after_processing(),
                "auto_commits": s.auto_commits(),
                "fits_transactions": s.fits_transactions(),
            })
        })
        .collect();
    let sinks: Vec<_> = SinkKind::ALL
        .iter()
        .map(|k| serde_json::json!({ "name": k.name(), "explanation": k.explanation() }))
        .collect();
    Json(serde_json::json!({
        "strategies": strategies,
        "sinks": sinks,
        "resets": ["earliest", "latest", "none"],
        "commands": &offsetlab_scenario::command::COMMANDS[..],
        "lab_scenario": offsetlab_scenario::LAB_SCENARIO,
        "version": env!("CARGO_PKG_VERSION"),
    }))
    .into_response()
}

pub(super) async fn get_lessons() -> Response {
    let items: Vec<_> = LESSONS
        .iter()
        .map(|l| {
            serde_json::json!({
                "number": l.number(),
                "file": l.file,
                "title": l.title(),
                "introduction": l.introduction(),
                "recap": l.recap(),
                "minutes": l.minutes(),
                "steps": lessons::steps(l),
            })
        })
        .collect();
    Json(items).into_response()
}

fn seed_script() -> Result<Script, String> {
    Script::parse(offsetlab_scenario::SEED_SCENARIO).map_err(|e| e.to_string())
}

pub(super) async fn get_explore(State(app): State<AppState>) -> Response {
    let answer = |m: &Matrix| {
        Json(serde_json::json!({
            "scenario": offsetlab_scenario::SEED_SCENARIO,
            "cells": m.cells,
            "share": m.share,
        }))
        .into_response()
    };
    if let Some(m) = app.matrix.get() {
        return answer(m);
    }
    let computed = tokio::task::spawn_blocking(|| {
        let script = seed_script()?;
        let cells = explore::explore(&script, None).map_err(|e| e.to_string())?;
        let share = explore_share::explore_share(&script, None).map_err(|e| e.to_string())?;
        Ok::<_, String>(Matrix { cells, share })
    })
    .await;
    match computed {
        Ok(Ok(m)) => answer(app.matrix.get_or_init(|| m)),
        Ok(Err(e)) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e, 0),
        Err(e) => json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    }
}

#[derive(Deserialize)]
pub(super) struct ReplayRequest {
    /// A consumer-group cell: its strategy and sink.
    strategy: Option<String>,
    sink: Option<String>,
    /// A share row: its acknowledgement mode (`implicit`, `explicit`), instead of a cell.
    share: Option<String>,
    /// Crash point to replay; the cell's worst one when omitted.
    crash_point: Option<u64>,
}

/// What a replay request names: a consumer-group cell or a share row.
enum Replayed {
    Cell(CommitStrategy, SinkKind),
    Share(AcknowledgementMode),
}

pub(super) async fn post_explore_replay(scope: Scope, ApiJson(req): ApiJson<ReplayRequest>) -> Response {
    let replayed = match (&req.share, &req.strategy, &req.sink) {
        (Some(mode), None, None) => match mode.parse::<AcknowledgementMode>() {
            Ok(m) => Replayed::Share(m),
            Err(e) => return json_error(StatusCode::BAD_REQUEST, &e, 0),
        },
        (None, Some(strategy), Some(sink)) => {
            match (strategy.parse::<CommitStrategy>(), sink.parse::<SinkKind>()) {
                (Ok(st), Ok(sk)) => Replayed::Cell(st, sk),
                (Err(e), _) | (_, Err(e)) => return json_error(StatusCode::BAD_REQUEST, &e, 0),
            }
        }
        _ => {
            return json_error(
                StatusCode::BAD_REQUEST,
                "name a cell (strategy and sink) or a share row (share: implicit or explicit)",
                0,
            )
        }
    };
    let script = match seed_script() {
        Ok(s) => s,
        Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e, 0),
    };
    let what = match &replayed {
        Replayed::Cell(st, sk) => format!("{st} × {sk}"),
        Replayed::Share(m) => format!("share group ({m} acknowledgement)"),
    };
    let crash_point = req.crash_point;
    let prepared = tokio::task::spawn_blocking(move || match replayed {
        Replayed::Cell(strategy, sink) => {
            let point = match crash_point {
                Some(p) => p,
                None => explore::explore_cell(&script, "c1", strategy, sink)
                    .map(|c| c.worst_crash_point)
                    .map_err(|e| e.to_string())?,
            };
            explore::crash_replay(&script, "c1", strategy, sink, point)
                .map(|s| s.to_text())
                .map_err(|e| e.to_string())
        }
        Replayed::Share(mode) => {
            let point = match crash_point {
                Some(p) => p,
                None => explore_share::explore_share_cell(&script, "c1", mode)
                    .map(|c| c.worst_crash_point)
                    .map_err(|e| e.to_string())?,
            };
            explore_share::share_crash_replay(&script, "c1", mode, point)
                .map(|s| s.to_text())
                .map_err(|e| e.to_string())
        }
    })
    .await;
    let text = match prepared {
        Ok(Ok(t)) => t,
        Ok(Err(e)) => return json_error(StatusCode::UNPROCESSABLE_ENTITY, &e, 0),
        Err(e) => return json_error(StatusCode::INTERNAL_SERVER_ERROR, &e.to_string(), 0),
    };
    super::lab::load(scope, format!("replayed the explorer's {what} crash"), text).await
}
