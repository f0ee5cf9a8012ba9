//! Token authentication (`serve --auth`): who may call what.
//!
//! Every request but `/health` and `/ping` needs a token whose scopes allow the route's
//! [`Scope`] ([`required_scope`], the one table of it). A token is taken from wherever
//! the clients users run put it ([`presented_token`]):
//! - `Authorization: Bearer <t>` (Prometheus' `authorization` block, curl),
//! - `Authorization: Token <t>` (InfluxDB 2 clients, Telegraf's `influxdb_v2` output),
//! - `Authorization: Basic` with the token as password (Grafana data sources,
//!   Prometheus' `basic_auth`, Telegraf's `influxdb` output, the `influx` CLI, a browser
//!   asked by the dashboard's 401) or, with an empty password, as user name,
//! - InfluxDB 1.x's `u`/`p` query parameters (`p` is the token).
//!
//! Missing or unknown: 401 with `WWW-Authenticate: Basic`, so a browser asks for it;
//! known but short of the scope: 403. The tokens are read from the store's
//! [`TokenStore`] at most once a second ([`RELOAD_EVERY`]), so a token made or revoked
//! with `tickertape admin token` takes effect within a second, without a restart.

use crate::AppState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use base64::Engine as _;
use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};
use tickertape_backend::{BackendError, TokenStore};
use tickertape_core::auth::{Scope, Scopes, TokenHash};

/// How stale the server's copy of the token list may get.
pub const RELOAD_EVERY: Duration = Duration::from_secs(1);

/// The scopes of every token of the store, refreshed from it at most every
/// [`RELOAD_EVERY`].
pub struct Authenticator {
    store: Arc<dyn TokenStore>,
    known: RwLock<Known>,
    /// Held while one request reloads, so a burst of requests reloads once.
    reloading: tokio::sync::Mutex<()>,
}

struct Known {
    scopes: HashMap<TokenHash, Scopes>,
    loaded: Instant,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tokens = self.read_known().scopes.len();
        f.debug_struct("Authenticator")
            .field("tokens", &tokens)
            .finish()
    }
}

impl Authenticator {
    /// Reads the store's tokens once. Refuses a store without any: a server started with
    /// `--auth` and no token would answer every request 401.
    pub async fn load(store: Arc<dyn TokenStore>) -> Result<Self, AuthSetupError> {
        let scopes = scopes_by_hash(store.as_ref()).await?;
        if scopes.is_empty() {
            return Err(AuthSetupError::NoTokens);
        }
        Ok(Self {
            store,
            known: RwLock::new(Known {
                scopes,
                loaded: Instant::now(),
            }),
            reloading: tokio::sync::Mutex::new(()),
        })
    }

    fn read_known(&self) -> std::sync::RwLockReadGuard<'_, Known> {
        self.known.read().unwrap_or_else(|p| p.into_inner())
    }

    /// The scopes of the token whose secret is `secret`, if the store has it.
    pub async fn scopes_of(&self, secret: &str) -> Option<Scopes> {
        self.refresh_if_stale().await;
        let hash = TokenHash::of(secret);
        self.read_known().scopes.get(&hash).cloned()
    }

    async fn refresh_if_stale(&self) {
        if self.read_known().loaded.elapsed() < RELOAD_EVERY {
            return;
        }
        // Another request is reloading: this one goes on with the list it has.
        let Ok(_reloading) = self.reloading.try_lock() else {
            return;
        };
        match scopes_by_hash(self.store.as_ref()).await {
            Ok(scopes) => {
                let mut known = self.known.write().unwrap_or_else(|p| p.into_inner());
                *known = Known {
                    scopes,
                    loaded: Instant::now(),
                };
            }
            Err(e) => {
                // The last list read stays in force (a store that is down now must not
                // lock everyone out); the next request past RELOAD_EVERY tries again.
                tracing::warn!(error = %e, "cannot read the API tokens again; keeping the last list");
                self.known.write().unwrap_or_else(|p| p.into_inner()).loaded = Instant::now();
            }
        }
    }
}

async fn scopes_by_hash(
    store: &dyn TokenStore,
) -> Result<HashMap<TokenHash, Scopes>, BackendError> {
    Ok(store
        .tokens()
        .await?
        .into_iter()
        .map(|t| (t.hash, t.scopes))
        .collect())
}

/// Why `--auth` cannot start.
#[derive(Debug, thiserror::Error)]
pub enum AuthSetupError {
    #[error(
        "--auth is on but the store has no API token, so every request would be refused. \
         Make one first: `tickertape admin token create --store <the same --store> --scope admin` \
         (it prints the token once), then start the server again"
    )]
    NoTokens,
    #[error("cannot read the store's API tokens: {0}")]
    Store(#[from] BackendError),
}

/// The scope a request to `path` needs; `None` for the routes that stay open.
///
/// Unknown paths need `admin`: a route added without a line here is closed, not open.
pub fn required_scope(path: &str) -> Option<Scope> {
    let path = without_database(path);
    let path: &str = &path;
    const OPEN: [&str; 2] = ["/health", "/ping"];
    const WRITE: [&str; 4] = [
        "/write",
        "/api/v2/write",
        "/prometheus/api/v1/write",
        "/opentelemetry/v1/metrics",
    ];
    const ADMIN_PREFIXES: [&str; 2] = ["/api/v1/admin/", "/prometheus/api/v1/admin/"];
    const READ: [&str; 3] = ["/", "/metrics", "/query"];
    const READ_PREFIXES: [&str; 3] = ["/assets/", "/api/v1/", "/prometheus/api/v1/"];
    if OPEN.contains(&path) {
        return None;
    }
    if WRITE.contains(&path) {
        return Some(Scope::Write);
    }
    if ADMIN_PREFIXES.iter().any(|p| path.starts_with(p)) {
        return Some(Scope::Admin);
    }
    if READ.contains(&path) || READ_PREFIXES.iter().any(|p| path.starts_with(p)) {
        return Some(Scope::Read);
    }
    Some(Scope::Admin)
}

/// `/prometheus/db/<name>/rest` as `/prometheus/rest`: a database's Prometheus routes
/// need what the default database's do.
fn without_database(path: &str) -> std::borrow::Cow<'_, str> {
    let Some(rest) = path.strip_prefix("/prometheus/db/") else {
        return path.into();
    };
    match rest.split_once('/') {
        Some((_, rest)) => format!("/prometheus/{rest}").into(),
        None => path.into(),
    }
}

/// The token a request carries, from the first of: the `Authorization` header (Bearer,
/// Token or Basic), the `p` query parameter (InfluxDB 1.x).
pub fn presented_token(request: &Request) -> Option<String> {
    if let Some(value) = request.headers().get(header::AUTHORIZATION) {
        return from_authorization(value);
    }
    let query = request.uri().query()?;
    form_urlencoded::parse(query.as_bytes())
        .find(|(key, _)| key == "p")
        .map(|(_, value)| value.into_owned())
        .filter(|p| !p.is_empty())
}

fn from_authorization(value: &HeaderValue) -> Option<String> {
    let value = value.to_str().ok()?.trim();
    let (scheme, credentials) = value.split_once(' ')?;
    let credentials = credentials.trim();
    if scheme.eq_ignore_ascii_case("bearer") || scheme.eq_ignore_ascii_case("token") {
        return Some(credentials.to_string()).filter(|t| !t.is_empty());
    }
    if scheme.eq_ignore_ascii_case("basic") {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(credentials)
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (user, password) = text.split_once(':').unwrap_or((&text, ""));
        let token = if password.is_empty() { user } else { password };
        return Some(token.to_string()).filter(|t| !t.is_empty());
    }
    None
}

/// The scopes of the token a request was let through with (none without `--auth`), in
/// its extensions: for a handler whose statements need more than its route (InfluxQL's
/// `CREATE DATABASE` and `DROP DATABASE` on `/query` need admin).
#[derive(Clone, Debug)]
pub struct Granted(pub Scopes);

impl Granted {
    /// Whether a request let through with `granted` may do what needs `scope`.
    pub fn allows(granted: Option<&Granted>, scope: Scope) -> Result<(), String> {
        match granted {
            None => Ok(()),
            Some(Granted(scopes)) if scopes.allow(scope) => Ok(()),
            Some(Granted(scopes)) => Err(format!(
                "this statement needs a token with the {scope} scope; this token has {scopes}"
            )),
        }
    }
}

/// The middleware: lets a request through when its token allows the route.
pub async fn require(State(state): State<AppState>, mut request: Request, next: Next) -> Response {
    let Some(auth) = state.config.auth.clone() else {
        return next.run(request).await;
    };
    let path = request.uri().path().to_string();
    let Some(needed) = required_scope(&path) else {
        return next.run(request).await;
    };
    let Some(secret) = presented_token(&request) else {
        return refuse(&path, Refusal::Missing);
    };
    match auth.scopes_of(&secret).await {
        None => refuse(&path, Refusal::Unknown),
        Some(scopes) if scopes.allow(needed) => {
            request.extensions_mut().insert(Granted(scopes));
            next.run(request).await
        }
        Some(scopes) => refuse(&path, Refusal::Scope { needed, scopes }),
    }
}

enum Refusal {
    Missing,
    Unknown,
    Scope { needed: Scope, scopes: Scopes },
}

/// 401 or 403, in the error shape of the API the path belongs to.
fn refuse(path: &str, refusal: Refusal) -> Response {
    let (status, message) = match refusal {
        Refusal::Missing => (
            StatusCode::UNAUTHORIZED,
            "authentication required: send an API token (Authorization: Bearer <token>, \
             or Basic auth with the token as password)"
                .to_string(),
        ),
        Refusal::Unknown => (
            StatusCode::UNAUTHORIZED,
            "the API token is not known to this server (revoked, or from another store)"
                .to_string(),
        ),
        Refusal::Scope { needed, scopes } => (
            StatusCode::FORBIDDEN,
            format!("{path} needs a token with the {needed} scope; this token has {scopes}"),
        ),
    };
    let body = if path.starts_with("/prometheus/") {
        let kind = if status == StatusCode::FORBIDDEN {
            "forbidden"
        } else {
            "unauthorized"
        };
        serde_json::json!({ "status": "error", "errorType": kind, "error": message })
    } else {
        serde_json::json!({ "error": message })
    };
    let mut response = (status, Json(body)).into_response();
    if status == StatusCode::UNAUTHORIZED {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"tickertape\", charset=\"UTF-8\""),
        );
    }
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;

    #[test]
    fn every_route_needs_the_scope_of_what_it_does() {
        for (path, scope) in [
            ("/health", None),
            ("/ping", None),
            ("/write", Some(Scope::Write)),
            ("/api/v2/write", Some(Scope::Write)),
            ("/prometheus/api/v1/write", Some(Scope::Write)),
            ("/opentelemetry/v1/metrics", Some(Scope::Write)),
            ("/api/v1/admin/compact", Some(Scope::Admin)),
            (
                "/prometheus/api/v1/admin/tsdb/delete_series",
                Some(Scope::Admin),
            ),
            ("/api/v1/query", Some(Scope::Read)),
            ("/api/v1/series", Some(Scope::Read)),
            ("/prometheus/api/v1/query_range", Some(Scope::Read)),
            ("/prometheus/api/v1/read", Some(Scope::Read)),
            ("/query", Some(Scope::Read)),
            ("/", Some(Scope::Read)),
            ("/assets/app.js", Some(Scope::Read)),
            ("/metrics", Some(Scope::Read)),
            ("/something/new", Some(Scope::Admin)),
            ("/writes", Some(Scope::Admin)),
            ("/api/v1/databases", Some(Scope::Read)),
            ("/api/v1/admin/databases", Some(Scope::Admin)),
            ("/-/reload", Some(Scope::Admin)),
            ("/prometheus/api/v1/targets", Some(Scope::Read)),
            ("/prometheus/db/app/api/v1/write", Some(Scope::Write)),
            ("/prometheus/db/app/api/v1/query", Some(Scope::Read)),
            (
                "/prometheus/db/app/api/v1/admin/tsdb/delete_series",
                Some(Scope::Admin),
            ),
            ("/prometheus/db/app", Some(Scope::Admin)),
        ] {
            assert_eq!(required_scope(path), scope, "{path}");
        }
    }

    fn request(auth: Option<&str>, uri: &str) -> Request {
        let mut builder = axum::http::Request::builder().uri(uri);
        if let Some(auth) = auth {
            builder = builder.header(header::AUTHORIZATION, auth);
        }
        builder.body(Body::empty()).unwrap()
    }

    #[test]
    fn a_token_is_read_from_every_place_clients_put_it() {
        let basic = |text: &str| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(text)
            )
        };
        for (auth, uri, expected) in [
            (Some("Bearer tt_a"), "/write", Some("tt_a")),
            (Some("bearer  tt_a "), "/write", Some("tt_a")),
            (Some("Token tt_b"), "/api/v2/write", Some("tt_b")),
            (Some(basic("grafana:tt_c").as_str()), "/", Some("tt_c")),
            (Some(basic("tt_d:").as_str()), "/", Some("tt_d")),
            (Some(basic("tt_e").as_str()), "/", Some("tt_e")),
            (None, "/write?db=x&u=me&p=tt_f", Some("tt_f")),
            (None, "/query?q=show%20databases&p=tt%5Fg", Some("tt_g")),
            (None, "/write?db=x&u=me&p=", None),
            (None, "/write?db=x", None),
            (Some("Digest abc"), "/write?p=tt_h", None),
            (Some("Bearer "), "/write", None),
            (Some("Basic !!!"), "/write", None),
        ] {
            let request = request(auth, uri);
            assert_eq!(
                presented_token(&request).as_deref(),
                expected,
                "{auth:?} {uri}"
            );
        }
    }
}
