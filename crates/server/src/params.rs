//! The parameters of a request, read once at its edge: [`RequestParams`] holds every
//! `name=value` of the query string and, on a route whose body is a form of parameters
//! ([`form`]), of that body, and the database the request names, resolved from all of
//! them at once. Every handler takes its parameters from it and [`crate::database`]'s
//! extractors take the database from it: no handler reads a query string or a body for
//! parameters itself, so none can miss a `db` given where it did not look.
//!
//! A body is a form only on the routes [`form`] marks (Prometheus' query API and its
//! delete, InfluxQL's `/query`, the own API's admin routes), for POST and PUT, typed
//! `application/x-www-form-urlencoded` (gzip taken, as for every body: [`crate::body`]).
//! A line-protocol body is data even when its client types it as a form (curl's
//! `--data-binary` does). A body of another type on a form route is refused (415) rather
//! than ignored with the parameters in it.
//!
//! The database is named by the path `/prometheus/db/<name>/…` (a Grafana data source's
//! URL can name it), by `db` (InfluxDB 1.x, the own API, Prometheus' API) or by `bucket`
//! (InfluxDB 2's write; `db/rp` is read as `db`, as InfluxDB's 1.x compatibility reads
//! it), in the query string or the form body. Named alike in several places, it is that
//! one; named differently, the request is refused (400) naming both, never one chosen
//! over the other. A name that cannot be a database is refused (400), an empty one too
//! ([`RequestParams::database`]), except on `/query`, whose clients send an empty `db` for
//! "none chosen" ([`RequestParams::database_or_none_if_empty`]).

use crate::body::{self, Codings};
use crate::error::RequestError;
use crate::AppState;
use axum::body::{Body, Bytes};
use axum::extract::{FromRequestParts, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{header, Method};
use axum::middleware::Next;
use axum::response::Response;
use axum::routing::MethodRouter;
use std::sync::Arc;
use tickertape_core::database::DatabaseName;

/// The parameter, and the path capture, naming the database.
pub const DB_PARAM: &str = "db";
/// InfluxDB 2's name for it: `bucket=db` or `bucket=db/rp`.
pub const BUCKET_PARAM: &str = "bucket";

const FORM: &str = "application/x-www-form-urlencoded";

/// Every parameter of one request and the database it names; cheap to clone.
#[derive(Clone, Debug)]
pub struct RequestParams(Arc<Read>);

#[derive(Debug)]
struct Read {
    /// The query string's pairs, then the form body's, each in order (`match[]`, `tag`
    /// repeat).
    pairs: Vec<(String, String)>,
    database: Named,
}

#[derive(Debug, PartialEq, Eq)]
enum Named {
    Nothing,
    /// Named empty: where.
    Empty(String),
    Database(DatabaseName),
}

/// One place the request names a database.
struct Mention {
    name: String,
    place: String,
}

impl Mention {
    fn describe(&self) -> String {
        format!("{:?} ({})", self.name, self.place)
    }
}

impl RequestParams {
    /// The parameters of a request to a path whose `{db}` capture is `path_db`, with
    /// query string `query` and form body `form` (empty when there is none).
    pub fn new(path_db: Option<&str>, query: &str, form: &[u8]) -> Result<Self, RequestError> {
        let from_query: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
            .into_owned()
            .collect();
        let from_form: Vec<(String, String)> = form_urlencoded::parse(form).into_owned().collect();
        let mut mentions = Vec::new();
        if let Some(name) = path_db {
            mentions.push(Mention {
                name: name.to_owned(),
                place: format!("the path /prometheus/db/{name}/"),
            });
        }
        for (pairs, source) in [
            (&from_query, "the query string"),
            (&from_form, "the form body"),
        ] {
            for (key, value) in pairs {
                let name = match key.as_str() {
                    DB_PARAM => value.as_str(),
                    BUCKET_PARAM => value.split('/').next().unwrap_or_default(),
                    _ => continue,
                };
                mentions.push(Mention {
                    name: name.to_owned(),
                    place: format!("{key} in {source}"),
                });
            }
        }
        let database = named(&mentions)?;
        let mut pairs = from_query;
        pairs.extend(from_form);
        Ok(Self(Arc::new(Read { pairs, database })))
    }

    /// The first value of parameter `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .pairs
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value of parameter `name`, in order.
    pub fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .pairs
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// Every `name=value`, the query string's first.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.0.pairs
    }

    /// The database the request names, `None` when it names none (the default one). An
    /// empty name is refused, as InfluxDB 1.x refuses a write to `db=`: a request that
    /// meant a database must not land in the default one.
    pub fn database(&self) -> Result<Option<&DatabaseName>, RequestError> {
        match &self.0.database {
            Named::Nothing => Ok(None),
            Named::Empty(place) => Err(RequestError::EmptyDatabase(place.clone())),
            Named::Database(name) => Ok(Some(name)),
        }
    }

    /// [`database`](Self::database), an empty name counting as none: the `influx` shell
    /// sends `db=` until `USE db`, Grafana's InfluxDB data source when its database field
    /// is blank, and InfluxDB 1.x's `/query` reads it as no database chosen.
    pub fn database_or_none_if_empty(&self) -> Option<&DatabaseName> {
        match &self.0.database {
            Named::Database(name) => Some(name),
            Named::Nothing | Named::Empty(_) => None,
        }
    }

    /// The request's parameters, read on first use and kept in its extensions, so every
    /// extractor of one request sees the same reading.
    pub(crate) async fn of(parts: &mut Parts) -> Result<Self, RequestError> {
        if let Some(ReadOnce(read)) = parts.extensions.get::<ReadOnce>() {
            return read.clone();
        }
        let path_db = match RawPathParams::from_request_parts(parts, &()).await {
            Ok(params) => params
                .iter()
                .find(|(key, _)| *key == DB_PARAM)
                .map(|(_, value)| value.to_owned()),
            Err(_) => None,
        };
        let form = match parts.extensions.get::<FormBody>() {
            Some(FormBody(form)) => form.clone(),
            None => Ok(Bytes::new()),
        };
        let query = parts.uri.query().unwrap_or("");
        let read = form.and_then(|form| Self::new(path_db.as_deref(), query, &form));
        parts.extensions.insert(ReadOnce(read.clone()));
        read
    }
}

/// The database `mentions` agree on.
fn named(mentions: &[Mention]) -> Result<Named, RequestError> {
    let Some(first) = mentions.first() else {
        return Ok(Named::Nothing);
    };
    if let Some(other) = mentions.iter().find(|m| m.name != first.name) {
        return Err(RequestError::DatabaseConflict {
            first: first.describe(),
            second: other.describe(),
        });
    }
    if first.name.is_empty() {
        return Ok(Named::Empty(first.place.clone()));
    }
    DatabaseName::new(&first.name)
        .map(Named::Database)
        .map_err(|error| RequestError::BadDatabase {
            mention: first.place.clone(),
            error,
        })
}

/// Refusals in the own API's shape (InfluxQL's `/query` shares it); Prometheus' routes
/// take theirs through `prometheus::params::Params`.
impl<S: Send + Sync> FromRequestParts<S> for RequestParams {
    type Rejection = RequestError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, RequestError> {
        Self::of(parts).await
    }
}

/// The reading of a request's parameters, kept in its extensions.
#[derive(Clone)]
struct ReadOnce(Result<RequestParams, RequestError>);

/// A form body read by [`form`]'s layer, or why it could not be.
#[derive(Clone)]
struct FormBody(Result<Bytes, RequestError>);

/// `route` with its POST and PUT bodies read as forms of parameters (see the module's
/// doc), for [`RequestParams`].
pub(crate) fn form(route: MethodRouter<AppState>, state: &AppState) -> MethodRouter<AppState> {
    route.layer(axum::middleware::from_fn_with_state(
        state.clone(),
        read_form,
    ))
}

/// Reads the form body into the request's extensions, the handler getting an empty body.
/// A refusal is kept there too, so that the extractor answers it in its API's shape.
async fn read_form(State(state): State<AppState>, request: Request, next: Next) -> Response {
    if !matches!(*request.method(), Method::POST | Method::PUT) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let read = body::read(
        Request::from_parts(parts.clone(), body),
        &state,
        Codings::Gzip,
    )
    .await;
    let form = read.and_then(|bytes| {
        let content_type = parts
            .headers
            .get(header::CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_default();
        let media = content_type.split(';').next().unwrap_or("").trim();
        match bytes.is_empty() || media.eq_ignore_ascii_case(FORM) {
            true => Ok(bytes),
            false => Err(RequestError::NotAForm(content_type)),
        }
    });
    parts.extensions.insert(FormBody(form));
    next.run(Request::from_parts(parts, Body::empty())).await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn database(path: Option<&str>, query: &str, form: &str) -> Result<Option<String>, String> {
        RequestParams::new(path, query, form.as_bytes())
            .and_then(|p| p.database().map(|d| d.map(|d| d.to_string())))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn query_string_and_form_body_read_together() {
        let p = RequestParams::new(None, "match[]=a&start=1", b"match[]=b&end=2").unwrap();
        assert_eq!(p.all("match[]"), vec!["a", "b"]);
        assert_eq!((p.get("start"), p.get("end")), (Some("1"), Some("2")));
        assert_eq!(p.pairs().len(), 4);
        assert_eq!(p.get("db"), None);
    }

    #[test]
    fn the_database_from_wherever_it_is_named() {
        assert_eq!(database(None, "u=x", ""), Ok(None));
        assert_eq!(database(None, "db=app&u=x", ""), Ok(Some("app".into())));
        assert_eq!(database(None, "", "db=app"), Ok(Some("app".into())));
        assert_eq!(database(Some("app"), "", ""), Ok(Some("app".into())));
        assert_eq!(
            database(None, "bucket=app%2Fautogen&org=o", ""),
            Ok(Some("app".into()))
        );
        assert_eq!(database(None, "bucket=app", ""), Ok(Some("app".into())));
        // Named alike in several places: that one.
        assert_eq!(
            database(Some("app"), "db=app&bucket=app/autogen", "db=app"),
            Ok(Some("app".into()))
        );
    }

    #[test]
    fn a_database_named_differently_twice_is_refused_naming_both() {
        for (path, query, form, a, b) in [
            (
                None,
                "db=a",
                "db=b",
                "db in the query string",
                "db in the form body",
            ),
            (
                None,
                "db=a&db=b",
                "",
                "db in the query string",
                "db in the query string",
            ),
            (
                Some("a"),
                "db=b",
                "",
                "the path /prometheus/db/a/",
                "db in the query string",
            ),
            (Some("a"), "", "db=b", "the path", "db in the form body"),
            (
                None,
                "db=a&bucket=b",
                "",
                "db in",
                "bucket in the query string",
            ),
            (
                None,
                "db=a",
                "bucket=b/rp",
                "db in",
                "bucket in the form body",
            ),
            (None, "db=&db=a", "", "db in", "db in"),
        ] {
            let e = RequestParams::new(path, query, form.as_bytes()).unwrap_err();
            let message = e.to_string();
            assert!(
                matches!(e, RequestError::DatabaseConflict { .. }),
                "{message}"
            );
            for needle in [a, b, "\"a\"", "\"b\""] {
                // `db=&db=a` names "" and "a".
                if query.starts_with("db=&") && needle == "\"b\"" {
                    continue;
                }
                assert!(message.contains(needle), "{needle}: {message}");
            }
        }
    }

    #[test]
    fn names_that_cannot_be_databases_are_refused() {
        for (path, query) in [
            (Some(".."), ""),
            (Some("."), ""),
            (None, "db=.."),
            (None, "db=a%2Fb"),
            (None, "bucket=../rp"),
        ] {
            let e = RequestParams::new(path, query, b"").unwrap_err();
            assert!(matches!(e, RequestError::BadDatabase { .. }), "{e}");
        }
        // Empty: refused where a database is resolved, none where `/query` reads it.
        for (path, query, form) in [
            (Some(""), "", ""),
            (None, "db=", ""),
            (None, "", "db="),
            (None, "bucket=/autogen", ""),
        ] {
            let p = RequestParams::new(path, query, form.as_bytes()).unwrap();
            let e = p.database().unwrap_err();
            assert!(matches!(e, RequestError::EmptyDatabase(_)), "{e}");
            assert!(e.to_string().contains("database name required"), "{e}");
            assert_eq!(p.database_or_none_if_empty(), None);
        }
        let p = RequestParams::new(None, "db=app", b"").unwrap();
        assert_eq!(
            p.database_or_none_if_empty().map(DatabaseName::as_str),
            Some("app")
        );
    }
}
