//! InfluxDB's retention policies on `/query`: `SHOW RETENTION POLICIES`, `CREATE`,
//! `ALTER` and `DROP RETENTION POLICY`, `CREATE DATABASE … WITH …`, and the check that a
//! statement names only policies its database has (`rp=`, `"rp"."m"`), each answered in
//! InfluxDB 1.x's shape and words. The policies themselves and their rules are the
//! engine's (`Engine::retention_policies`); a database keeps one store of points whatever
//! policy names them.

use tickertape_core::retention_policy::{go_duration, PolicyChange, PolicySpec, AUTOGEN};
use tickertape_engine::{Engine, EngineError};
use tickertape_influxql::{PolicyDefinition, Source, Statement};

use tickertape_influxql::eval::{Cell, Series, StatementResult};

/// The columns of `SHOW RETENTION POLICIES`, InfluxDB 1.x's.
const COLUMNS: [&str; 5] = [
    "name",
    "duration",
    "shardGroupDuration",
    "replicaN",
    "default",
];

/// `SHOW RETENTION POLICIES` of `engine`'s database: its policies in creation order.
pub async fn show(engine: &Engine) -> StatementResult {
    let policies = engine.retention_policies().await.map_err(message)?;
    let default = policies.default_name();
    let values = policies
        .policies()
        .iter()
        .map(|p| {
            vec![
                Cell::Text(p.name.clone()),
                Cell::Text(go_duration(p.duration_ns)),
                Cell::Text(go_duration(p.shard_group_duration_ns)),
                Cell::Integer(i64::from(p.replica_n)),
                Cell::Bool(default == Some(p.name.as_str())),
            ]
        })
        .collect();
    Ok(vec![Series {
        name: String::new(),
        tags: Vec::new(),
        columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
        values,
    }])
}

/// `CREATE`, `ALTER` or `DROP RETENTION POLICY … ON db` (any other statement is refused).
pub async fn change(root: &Engine, statement: &Statement) -> StatementResult {
    let database = match statement {
        Statement::CreateRetentionPolicy { database, .. }
        | Statement::AlterRetentionPolicy { database, .. }
        | Statement::DropRetentionPolicy { database, .. } => database,
        other => return Err(format!("not a retention policy statement: {other}")),
    };
    let engine = match root.database(Some(database)).await {
        Ok(engine) => engine,
        // As in InfluxDB 1.x, dropping a policy of a database that does not exist is no
        // error (dropping what is not there never is).
        Err(EngineError::UnknownDatabase(_))
            if matches!(statement, Statement::DropRetentionPolicy { .. }) =>
        {
            return Ok(Vec::new())
        }
        Err(e) => return Err(message(e)),
    };
    let changed = match statement {
        Statement::CreateRetentionPolicy {
            name,
            duration,
            replication,
            shard_duration,
            default,
            ..
        } => {
            let spec = PolicySpec {
                name: name.clone(),
                duration_ns: *duration,
                shard_group_duration_ns: *shard_duration,
                replica_n: *replication,
            };
            engine
                .change_retention_policies(|p| p.create(&spec, *default))
                .await
        }
        Statement::AlterRetentionPolicy {
            name,
            duration,
            replication,
            shard_duration,
            default,
            ..
        } => {
            let change = PolicyChange {
                duration_ns: *duration,
                shard_group_duration_ns: *shard_duration,
                replica_n: *replication,
                make_default: *default,
            };
            engine
                .change_retention_policies(|p| p.alter(name, &change))
                .await
        }
        Statement::DropRetentionPolicy { name, .. } => engine
            .change_retention_policies(|p| Ok(p.drop_policy(name)))
            .await
            .map(|_| ()),
        _ => Ok(()),
    };
    changed.map_err(message)?;
    Ok(Vec::new())
}

/// `CREATE DATABASE name WITH …`.
pub async fn create_database_with(
    root: &Engine,
    name: &str,
    with: &PolicyDefinition,
) -> StatementResult {
    let spec = PolicySpec {
        name: with.name.clone().unwrap_or_else(|| AUTOGEN.to_string()),
        duration_ns: with.duration.unwrap_or(0),
        shard_group_duration_ns: with.shard_duration,
        replica_n: with.replication.unwrap_or(1),
    };
    root.create_database_with(name, &spec)
        .await
        .map_err(message)?;
    Ok(Vec::new())
}

/// Refuses a statement naming a retention policy its database does not have, as InfluxDB
/// does: a `SELECT`'s sources (their own `"rp"."m"`, else the request's `rp`, else the
/// database's default policy, which may have been dropped), the sources of `SHOW SERIES`
/// and `SHOW FIELD KEYS` that name one. The other statements read past policies, as
/// InfluxDB 1.x's do.
pub async fn check_sources(
    engine: &Engine,
    statement: &Statement,
    rp: Option<&str>,
) -> Result<(), String> {
    let (sources, fallback) = match statement {
        Statement::Select(select) => (select.from.as_slice(), true),
        Statement::ShowSeries { from, .. } | Statement::ShowFieldKeys { from, .. } => {
            (from.as_slice(), false)
        }
        _ => return Ok(()),
    };
    let mut named: Vec<Option<&str>> = sources
        .iter()
        .filter_map(|source| match source {
            Source::Measurement {
                retention_policy: Some(rp),
                ..
            } => Some(Some(rp.as_str())),
            _ if fallback => Some(rp),
            _ => None,
        })
        .collect();
    named.dedup();
    for rp in named {
        engine.check_retention_policy(rp).await.map_err(message)?;
    }
    Ok(())
}

/// An engine error as the statement's error: InfluxDB's words for an unknown database.
fn message(e: EngineError) -> String {
    match e {
        EngineError::UnknownDatabase(name) => format!("database not found: {name}"),
        e => e.to_string(),
    }
}
