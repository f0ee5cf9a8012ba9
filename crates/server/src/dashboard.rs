//! The built-in dashboard at `GET /`: one HTML page, its JavaScript modules and
//! its stylesheet, all in `assets/dashboard/` and embedded in the binary, so that it works
//! with no network and no front-end build.
//!
//! Assets are served under `/assets/<version>/<file>`, where the version is a hash of every
//! asset: a browser may keep them forever (`immutable`), and a new binary with other assets
//! has other URLs. The page itself is never cached (`no-cache`), so it always names the
//! assets of the running binary. The page talks only to this server's API (same origin),
//! which its Content-Security-Policy also enforces.

use crate::AppState;
use axum::extract::Path;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use std::sync::OnceLock;

/// One embedded file.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static str,
}

macro_rules! asset {
    ($name:literal, $content_type:expr) => {
        Asset {
            name: $name,
            content_type: $content_type,
            body: include_str!(concat!("../assets/dashboard/", $name)),
        }
    };
}

const JAVASCRIPT: &str = "text/javascript; charset=utf-8";

/// Every asset the page loads; `app.js` imports the other modules.
const ASSETS: &[Asset] = &[
    asset!("style.css", "text/css; charset=utf-8"),
    asset!("app.js", JAVASCRIPT),
    asset!("api.js", JAVASCRIPT),
    asset!("cardinality.js", JAVASCRIPT),
    asset!("chart.js", JAVASCRIPT),
    asset!("chart-axes.js", JAVASCRIPT),
    asset!("controls.js", JAVASCRIPT),
    asset!("panel.js", JAVASCRIPT),
    asset!("pickers.js", JAVASCRIPT),
    asset!("series-names.js", JAVASCRIPT),
    asset!("table.js", JAVASCRIPT),
    asset!("tag-filters.js", JAVASCRIPT),
    asset!("targets.js", JAVASCRIPT),
    asset!("time-format.js", JAVASCRIPT),
    asset!("url-state.js", JAVASCRIPT),
];

/// The page, with `{{version}}` where the assets' version goes.
const INDEX_TEMPLATE: &str = include_str!("../assets/dashboard/index.html");

/// Only this server: no inline script, no other origin, nothing framing the page.
const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; \
     style-src 'self'; img-src 'self' data: blob:; connect-src 'self'; \
     frame-ancestors 'none'; base-uri 'none'; form-action 'none'";

const CACHE_FOREVER: &str = "public, max-age=31536000, immutable";

/// `GET /` and `GET /assets/{version}/{file}`.
pub fn routes() -> Router<AppState> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{version}/{file}", get(asset))
}

async fn index() -> Response {
    let mut response = (
        [
            (header::CONTENT_TYPE, "text/html; charset=utf-8"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        index_html(),
    )
        .into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

async fn asset(Path((version, file)): Path<(String, String)>) -> Response {
    let found = ASSETS.iter().find(|a| a.name == file);
    match found {
        Some(asset) if version == asset_version() => (
            [
                (header::CONTENT_TYPE, asset.content_type),
                (header::CACHE_CONTROL, CACHE_FOREVER),
                (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
            ],
            asset.body,
        )
            .into_response(),
        // Another binary's assets (a page loaded before an upgrade) or no such file.
        _ => (
            StatusCode::NOT_FOUND,
            [(header::CACHE_CONTROL, "no-cache")],
            "no such asset in this version of tickertape; reload the page",
        )
            .into_response(),
    }
}

fn index_html() -> &'static str {
    static HTML: OnceLock<String> = OnceLock::new();
    HTML.get_or_init(|| INDEX_TEMPLATE.replace("{{version}}", asset_version()))
}

/// 16 hex digits of FNV-1a over every asset's name and body: changes when any of them does.
fn asset_version() -> &'static str {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION.get_or_init(|| {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for asset in ASSETS {
            for byte in asset.name.bytes().chain([0]).chain(asset.body.bytes()) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0100_0000_01b3);
            }
        }
        format!("{hash:016x}")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every module a script imports is embedded (a missing one fails only in a browser).
    #[test]
    fn every_imported_module_is_an_asset() {
        for asset in ASSETS.iter().filter(|a| a.content_type == JAVASCRIPT) {
            for line in asset.body.lines() {
                let Some(rest) = line.split(" from './").nth(1) else {
                    continue;
                };
                let module = rest.split('\'').next().unwrap_or_default();
                assert!(
                    ASSETS.iter().any(|a| a.name == module),
                    "{} imports ./{module}, which is not in ASSETS",
                    asset.name
                );
            }
        }
    }

    /// The page names its stylesheet and entry module with the current version.
    #[test]
    fn the_page_names_versioned_assets() {
        let html = index_html();
        assert!(!html.contains("{{version}}"));
        for name in ["style.css", "app.js"] {
            let url = format!("/assets/{}/{name}", asset_version());
            assert!(html.contains(&url), "index.html lacks {url}");
        }
    }

    /// Every embedded file stays readable: the style rule of ~600 lines.
    #[test]
    fn no_asset_is_over_600_lines() {
        for asset in ASSETS {
            let lines = asset.body.lines().count();
            assert!(lines <= 600, "{} has {lines} lines", asset.name);
        }
    }
}
