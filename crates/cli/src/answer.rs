//! A query's answer, from a store opened here or from a running server (`--url`): the
//! selectors `tickertape query` and `tickertape plot` share, and the one way both obtain
//! the answer.

use crate::remote::{Remote, RemoteArgs};
use crate::store::{DatabaseArg, StoreArgs};
use anyhow::{bail, Context, Result};
use std::collections::BTreeMap;
use tickertape_core::time::{format_rfc3339, parse_time, parse_timestamp, Clock, SystemClock};

/// The selectors of `GET /api/v1/query`, and where to ask.
#[derive(clap::Args, Debug)]
pub struct QueryArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    #[command(flatten)]
    pub remote: RemoteArgs,
    #[command(flatten)]
    pub database: DatabaseArg,
    /// Measurement to read.
    #[arg(long, short)]
    pub measurement: String,
    /// Only this field.
    #[arg(long, short)]
    pub field: Option<String>,
    /// Only series with this tag: KEY:VALUE, or KEY!=VALUE, KEY=~REGEX, KEY!~REGEX (anchored;
    /// a missing tag counts as empty); repeat for several (all must match).
    #[arg(long = "tag", short)]
    pub tags: Vec<String>,
    /// Range start, inclusive: RFC 3339, integer nanoseconds, or relative to now (now-6h,
    /// or -6h; a relative start without --end ends now). Default: the beginning.
    #[arg(long, allow_hyphen_values = true)]
    pub start: Option<String>,
    /// Range end, exclusive: RFC 3339, integer nanoseconds, or relative to now (now,
    /// now-1h). Default: the end.
    #[arg(long, allow_hyphen_values = true)]
    pub end: Option<String>,
    /// Window width for agg (10s, 1m, 1h …).
    #[arg(long)]
    pub step: Option<String>,
    /// Aggregate: avg, min, max, sum, count, first, last.
    #[arg(long)]
    pub agg: Option<String>,
    /// Also return the last point before start and the first at or after end.
    #[arg(long)]
    pub neighbors: bool,
    /// Read windows from this resolution: raw, or a rollup that divides the step (1m …).
    #[arg(long)]
    pub resolution: Option<String>,
    /// Let the engine pick the step so each series gets at most this many points (needs
    /// --start; without --end the range ends now).
    #[arg(long)]
    pub max_points: Option<String>,
    /// Counters: total or avg_per_sec per window (implies sums).
    #[arg(long)]
    pub display: Option<String>,
}

/// The answer in the shape of the HTTP API, whichever way it was obtained.
#[derive(serde::Deserialize, serde::Serialize)]
pub struct Answer {
    pub series: Vec<SeriesAnswer>,
}

#[derive(serde::Deserialize, serde::Serialize)]
pub struct SeriesAnswer {
    pub measurement: String,
    pub tags: BTreeMap<String, String>,
    pub field: String,
    /// (time in ns since the epoch, value); a server may answer `null` for a value.
    pub points: Vec<(i64, Option<f64>)>,
}

impl SeriesAnswer {
    /// `measurement{k=v,…}#field`, the series' name in tables and CSV.
    pub fn label(&self) -> String {
        format!("{}{}#{}", self.measurement, self.tags_text(), self.field)
    }

    /// `{k=v,…}`: the tags in key order (`{}` for none).
    pub fn tags_text(&self) -> String {
        let tags: Vec<String> = self.tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
        format!("{{{}}}", tags.join(","))
    }
}

impl QueryArgs {
    /// The query string of `GET /api/v1/query` these flags ask for; the store path parses
    /// the same string, so both ways validate a query alike.
    fn query_string(&self) -> String {
        let mut s = form_urlencoded::Serializer::new(String::new());
        s.append_pair("measurement", &self.measurement);
        if let Some(f) = &self.field {
            s.append_pair("field", f);
        }
        for t in &self.tags {
            s.append_pair("tag", t);
        }
        for (name, value) in [
            ("start", &self.start),
            ("end", &self.end),
            ("step", &self.step),
            ("agg", &self.agg),
            ("resolution", &self.resolution),
            ("max_points", &self.max_points),
            ("display", &self.display),
        ] {
            if let Some(v) = value {
                s.append_pair(name, v);
            }
        }
        if self.neighbors {
            s.append_pair("neighbors", "true");
        }
        s.finish()
    }

    /// `--start`/`--end` relative to now (`-1h`, `now-1h`, `now`) made absolute, in RFC
    /// 3339, so that a server of `--url`, a chart's axis and messages all see one time. A
    /// relative start without `--end` ends now. Absolute times are left as written.
    pub fn resolve_relative_times(&mut self, now: i64) -> Result<()> {
        let is_relative = |text: &str| parse_timestamp(text).is_err();
        let relative_start = self.start.as_deref().is_some_and(is_relative);
        for (flag, bound) in [("--start", &mut self.start), ("--end", &mut self.end)] {
            if let Some(text) = bound.as_deref().filter(|t| is_relative(t)) {
                let time = parse_time(text, now).with_context(|| flag.to_string())?;
                *bound = Some(format_rfc3339(time));
            }
        }
        if relative_start && self.end.is_none() {
            self.end = Some(format_rfc3339(now));
        }
        Ok(())
    }

    /// The answer: from the server of `--url`, or from the store opened here.
    pub async fn fetch(&self) -> Result<Answer> {
        match self.remote.remote()? {
            Some(remote) => {
                let query = self.query_string() + &self.database.url_suffix();
                ask_server(&remote, &query).await
            }
            None => self.ask_store().await,
        }
    }

    async fn ask_store(&self) -> Result<Answer> {
        let query =
            tickertape_server::query::parse_query(&self.query_string(), SystemClock.now_nanos())
                .map_err(|e| anyhow::anyhow!("{e}"))?;
        let engine = self.database.engine(&self.store).await?;
        let result = engine.query(&query).await?;
        Ok(Answer {
            series: result
                .into_iter()
                .map(|s| SeriesAnswer {
                    measurement: s.key.measurement,
                    tags: s.key.tags.into_iter().collect(),
                    field: s.key.field,
                    points: s.points.iter().map(|p| (p.time, Some(p.value))).collect(),
                })
                .collect(),
        })
    }
}

async fn ask_server(remote: &Remote, query: &str) -> Result<Answer> {
    let url = remote.endpoint(&format!("/api/v1/query?{query}"));
    let response = remote
        .client
        .get(&url)
        .send()
        .await
        .with_context(|| format!("cannot reach {url}"))?;
    let status = response.status();
    let text = response.text().await?;
    if !status.is_success() {
        bail!("server answered {status}: {text}");
    }
    serde_json::from_str(&text).context("unexpected answer from the server")
}
