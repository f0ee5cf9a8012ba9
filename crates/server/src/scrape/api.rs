//! `GET /prometheus/api/v1/targets` in Prometheus' shape (Grafana and `promtool` read
//! it) and `POST /-/reload`, which reads the scrape configuration again as SIGHUP does.

use super::{Scraping, TargetStatus};
use crate::params::RequestParams;
use crate::AppState;
use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{json, Map, Value};
use tickertape_scrape::Labels;

/// `state=active|dropped|any` (default any), as Prometheus takes it.
pub(crate) async fn targets(State(state): State<AppState>, params: RequestParams) -> Response {
    let which = params.get("state").unwrap_or("any").to_ascii_lowercase();
    let (show_active, show_dropped) = match which.as_str() {
        "active" => (true, false),
        "dropped" => (false, true),
        _ => (true, true),
    };
    let jobs = state
        .config
        .scrape
        .as_ref()
        .map(Scraping::targets)
        .unwrap_or_default();
    let mut active = Vec::new();
    let mut dropped = Vec::new();
    for (job, targets, dropped_targets) in jobs {
        if show_active {
            active.extend(targets.iter().map(|t| active_target(&job, t)));
        }
        if show_dropped {
            dropped.extend(
                dropped_targets
                    .iter()
                    .map(|labels| json!({ "discoveredLabels": object(labels.iter()) })),
            );
        }
    }
    let mut data = Map::new();
    if show_active {
        data.insert("activeTargets".into(), Value::Array(active));
    }
    if show_dropped {
        data.insert("droppedTargets".into(), Value::Array(dropped));
    }
    let body = json!({ "status": "success", "data": data });
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

fn object<'a>(labels: impl Iterator<Item = (&'a str, &'a str)>) -> Value {
    Value::Object(
        labels
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect(),
    )
}

fn active_target(job: &str, status: &TargetStatus) -> Value {
    let target = &status.target;
    let last_scrape = match status.last_scrape {
        Some(time) => chrono::DateTime::<chrono::Utc>::from(time)
            .to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true),
        // Go's zero time, which Prometheus shows for a target not scraped yet.
        None => "0001-01-01T00:00:00Z".to_string(),
    };
    let public: Labels = target.public_labels().collect();
    json!({
        "discoveredLabels": object(target.discovered.iter()),
        "labels": object(public.iter()),
        "scrapePool": job,
        "scrapeUrl": target.url,
        "globalUrl": target.url,
        "lastError": status.last_error,
        "lastScrape": last_scrape,
        "lastScrapeDuration": status.last_duration.as_secs_f64(),
        "health": status.health.as_str(),
        "scrapeInterval": target.labels.get(tickertape_scrape::labels::SCRAPE_INTERVAL),
        "scrapeTimeout": target.labels.get(tickertape_scrape::labels::SCRAPE_TIMEOUT),
    })
}

/// 200 once the new configuration runs; 500 with the reason when it cannot be taken
/// (the running one stays), as Prometheus answers; 404 when the server scrapes nothing.
pub(crate) async fn reload(State(state): State<AppState>) -> Response {
    let Some(scraping) = &state.config.scrape else {
        return (
            StatusCode::NOT_FOUND,
            "no scrape configuration to reload: start the server with --scrape-config\n",
        )
            .into_response();
    };
    match scraping.reload().await {
        Ok(()) => StatusCode::OK.into_response(),
        Err(e) => {
            tracing::warn!("reload refused: {e}");
            (
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("failed to reload config: {e}\n"),
            )
                .into_response()
        }
    }
}
