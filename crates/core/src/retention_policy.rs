//! InfluxDB 1.x's retention policies of one database, with InfluxDB's rules for creating,
//! altering and dropping them and its error texts, so that `CREATE`/`ALTER`/`DROP
//! RETENTION POLICY` and `SHOW RETENTION POLICIES` answer as InfluxDB 1.x does.
//!
//! tickertape keeps one store of points per database, whatever policy a write names: a
//! policy is a name a client may use (`rp=` on `/write` and `/query`, `"db"."rp"."m"`)
//! and, for the database's default policy, the raw retention of its points (see
//! [`RetentionPolicies::raw_retention`]; the schema decides where it applies).
//!
//! The serde form is what the stores keep (`docs/format/`): short field names, the
//! policies in creation order (the order `SHOW RETENTION POLICIES` lists them in).

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::time::NANOS_PER_SECOND;

/// The policy InfluxDB gives a database created without one.
pub const AUTOGEN: &str = "autogen";

/// The shortest duration a policy may keep points for (InfluxDB's
/// `MinRetentionPolicyDuration`); 0 means forever.
pub const MIN_DURATION_NS: i64 = HOUR;

const HOUR: i64 = 3_600 * NANOS_PER_SECOND;
const DAY: i64 = 24 * HOUR;

/// One named policy.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPolicy {
    #[serde(rename = "n")]
    pub name: String,
    /// How long points are kept, ns; 0 is forever (InfluxDB's `INF`, shown as `0s`).
    #[serde(rename = "d")]
    pub duration_ns: i64,
    /// InfluxDB's shard group duration, ns: shown, kept, not used by tickertape's stores
    /// (their own time partitions are fixed by the layout).
    #[serde(rename = "sg")]
    pub shard_group_duration_ns: i64,
    /// InfluxDB's replication factor: shown and kept; replication is the store's (a
    /// MongoDB replica set), not a policy's.
    #[serde(rename = "r")]
    pub replica_n: u32,
}

/// What a database's policies say of how long its raw points are kept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyRetention {
    /// No policy was set, or the default policy was dropped: the store's defaults hold.
    Unset,
    /// The default policy's duration, ns; `None`: forever.
    Keep(Option<i64>),
}

/// What `CREATE RETENTION POLICY` or `CREATE DATABASE … WITH` asks for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicySpec {
    pub name: String,
    /// 0: forever.
    pub duration_ns: i64,
    /// `None`: InfluxDB's default for the duration.
    pub shard_group_duration_ns: Option<i64>,
    pub replica_n: u32,
}

/// What `ALTER RETENTION POLICY` changes; `None` keeps the value.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PolicyChange {
    pub duration_ns: Option<i64>,
    pub shard_group_duration_ns: Option<i64>,
    pub replica_n: Option<u32>,
    pub make_default: bool,
}

/// Why a change was refused, in InfluxDB 1.x's words.
#[derive(Clone, Debug, Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolicyError {
    #[error(
        "retention policy duration must be at least {}",
        go_duration(MIN_DURATION_NS)
    )]
    DurationTooLow,
    #[error("retention policy duration must be greater than the shard duration")]
    IncompatibleDurations,
    #[error("retention policy already exists")]
    Exists,
    #[error("retention policy conflicts with an existing policy")]
    Conflict,
    #[error("retention policy not found: {0}")]
    NotFound(String),
}

/// A database's policies. Invariant: names are distinct. `default` may name a policy that
/// was dropped, as in InfluxDB: writes and reads without `rp` are then refused naming it
/// until another policy is made the default.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetentionPolicies {
    #[serde(rename = "p")]
    policies: Vec<RetentionPolicy>,
    #[serde(rename = "df", default, skip_serializing_if = "Option::is_none")]
    default: Option<String>,
}

impl RetentionPolicies {
    /// A database created without a policy: `autogen`, keeping points for `duration_ns`
    /// (0: forever), the default.
    pub fn autogen(duration_ns: i64) -> Self {
        let spec = PolicySpec {
            name: AUTOGEN.to_string(),
            duration_ns,
            shard_group_duration_ns: None,
            replica_n: 1,
        };
        Self::with_default(&spec)
    }

    /// `CREATE DATABASE … WITH …`: one policy, the default. The spec is checked by
    /// [`check`](Self::check) first.
    fn with_default(spec: &PolicySpec) -> Self {
        let policy = spec.normalised();
        Self {
            default: Some(policy.name.clone()),
            policies: vec![policy],
        }
    }

    /// A new database's policies from `CREATE DATABASE … WITH …`.
    pub fn created_with(spec: &PolicySpec) -> Result<Self, PolicyError> {
        Self::check(spec)?;
        Ok(Self::with_default(spec))
    }

    /// `CREATE DATABASE … WITH …` of a database that exists: no error when it already has
    /// this policy as its default, else InfluxDB's conflict.
    pub fn recreated_with(&self, spec: &PolicySpec) -> Result<(), PolicyError> {
        Self::check(spec)?;
        match self.get(&spec.name) {
            Some(policy)
                if *policy == spec.normalised() && self.default_name() == Some(&spec.name) =>
            {
                Ok(())
            }
            _ => Err(PolicyError::Conflict),
        }
    }

    /// The policies in creation order.
    pub fn policies(&self) -> &[RetentionPolicy] {
        &self.policies
    }

    /// The default policy's name, which may name no policy (see the type's doc).
    pub fn default_name(&self) -> Option<&str> {
        self.default.as_deref()
    }

    pub fn get(&self, name: &str) -> Option<&RetentionPolicy> {
        self.policies.iter().find(|p| p.name == name)
    }

    /// The policy `rp` names, or the default one for `None` (a client's `rp=`, or a
    /// source without one).
    pub fn resolve(&self, rp: Option<&str>) -> Result<&RetentionPolicy, PolicyError> {
        let name = rp.or(self.default_name()).unwrap_or("");
        self.get(name)
            .ok_or_else(|| PolicyError::NotFound(name.to_string()))
    }

    /// How long the database's points are kept: the default policy's duration, or
    /// [`PolicyRetention::Unset`] where the default policy was dropped (its points are
    /// then kept as the store's defaults say, not dropped for want of a policy).
    pub fn raw_retention(&self) -> PolicyRetention {
        match self.default_name().and_then(|name| self.get(name)) {
            None => PolicyRetention::Unset,
            Some(policy) => {
                PolicyRetention::Keep((policy.duration_ns > 0).then_some(policy.duration_ns))
            }
        }
    }

    /// `CREATE RETENTION POLICY`: a policy of the same name and settings is no error
    /// (nor a change), unless `make_default` asks for more than it is.
    pub fn create(&mut self, spec: &PolicySpec, make_default: bool) -> Result<(), PolicyError> {
        Self::check(spec)?;
        let policy = spec.normalised();
        if let Some(existing) = self.get(&spec.name) {
            if *existing != policy {
                return Err(PolicyError::Exists);
            }
            if make_default && self.default_name() != Some(&spec.name) {
                return Err(PolicyError::Conflict);
            }
            return Ok(());
        }
        if make_default {
            self.default = Some(policy.name.clone());
        }
        self.policies.push(policy);
        Ok(())
    }

    /// `ALTER RETENTION POLICY`, with InfluxDB's checks: the new duration against the
    /// shard duration as given (or as kept), the shard duration then normalised.
    pub fn alter(&mut self, name: &str, change: &PolicyChange) -> Result<(), PolicyError> {
        if change
            .duration_ns
            .is_some_and(|d| d != 0 && d < MIN_DURATION_NS)
        {
            return Err(PolicyError::DurationTooLow);
        }
        let policy = self
            .policies
            .iter_mut()
            .find(|p| p.name == name)
            .ok_or_else(|| PolicyError::NotFound(name.to_string()))?;
        let shard = change
            .shard_group_duration_ns
            .unwrap_or(policy.shard_group_duration_ns);
        let duration = change.duration_ns.unwrap_or(policy.duration_ns);
        let checked = change.duration_ns.is_some() || change.shard_group_duration_ns.is_some();
        if checked && duration > 0 && duration < shard {
            return Err(PolicyError::IncompatibleDurations);
        }
        policy.duration_ns = duration;
        if let Some(replica_n) = change.replica_n {
            policy.replica_n = replica_n;
        }
        if let Some(shard) = change.shard_group_duration_ns {
            policy.shard_group_duration_ns = normalised_shard_duration(shard, duration);
        }
        if change.make_default {
            self.default = Some(name.to_string());
        }
        Ok(())
    }

    /// `DROP RETENTION POLICY`: answers whether it was there (dropping one that is not is
    /// no error in InfluxDB 1.x). The default's name stays (see the type's doc).
    pub fn drop_policy(&mut self, name: &str) -> bool {
        let before = self.policies.len();
        self.policies.retain(|p| p.name != name);
        self.policies.len() != before
    }

    /// The checks InfluxDB makes of a new policy before looking at the existing ones.
    fn check(spec: &PolicySpec) -> Result<(), PolicyError> {
        if spec.duration_ns != 0 && spec.duration_ns < MIN_DURATION_NS {
            return Err(PolicyError::DurationTooLow);
        }
        let policy = spec.normalised();
        if policy.duration_ns > 0 && policy.duration_ns < policy.shard_group_duration_ns {
            return Err(PolicyError::IncompatibleDurations);
        }
        Ok(())
    }
}

impl PolicySpec {
    fn normalised(&self) -> RetentionPolicy {
        RetentionPolicy {
            name: self.name.clone(),
            duration_ns: self.duration_ns,
            shard_group_duration_ns: normalised_shard_duration(
                self.shard_group_duration_ns.unwrap_or(0),
                self.duration_ns,
            ),
            replica_n: self.replica_n,
        }
    }
}

/// InfluxDB's shard group duration for a policy: the one given, at least an hour, or
/// for none (0) one by the policy's duration.
fn normalised_shard_duration(shard_ns: i64, duration_ns: i64) -> i64 {
    match shard_ns {
        0 => default_shard_duration(duration_ns),
        s if s < MIN_DURATION_NS => default_shard_duration(MIN_DURATION_NS),
        s => s,
    }
}

/// A week for forever or six months and more, a day from two days, else an hour.
fn default_shard_duration(duration_ns: i64) -> i64 {
    if duration_ns == 0 || duration_ns >= 180 * DAY {
        7 * DAY
    } else if duration_ns >= 2 * DAY {
        DAY
    } else {
        HOUR
    }
}

/// A duration as Go's `time.Duration` prints it, which is what InfluxDB answers:
/// `168h0m0s`, `1h0m0s`, `0s`, `1m30s`, `1.5s`, `500ms`.
pub fn go_duration(ns: i64) -> String {
    if ns == 0 {
        return "0s".into();
    }
    let sign = if ns < 0 { "-" } else { "" };
    let ns = ns.unsigned_abs();
    if ns < 1_000_000_000 {
        let (unit, size) = match ns {
            n if n < 1_000 => ("ns", 1),
            n if n < 1_000_000 => ("µs", 1_000),
            _ => ("ms", 1_000_000),
        };
        return format!("{sign}{}{unit}", decimal(ns, size));
    }
    let seconds = decimal(ns % 60_000_000_000, 1_000_000_000);
    let minutes = ns / 60_000_000_000;
    match (minutes / 60, minutes % 60) {
        (0, 0) => format!("{sign}{seconds}s"),
        (0, m) => format!("{sign}{m}m{seconds}s"),
        (h, m) => format!("{sign}{h}h{m}m{seconds}s"),
    }
}

/// `value / size` with the fraction's digits and no trailing zeros (`1.5`, `2`).
fn decimal(value: u64, size: u64) -> String {
    let whole = value / size;
    let fraction = value % size;
    if fraction == 0 {
        return whole.to_string();
    }
    let width = size.ilog10() as usize;
    let digits = format!("{fraction:0width$}");
    format!("{whole}.{}", digits.trim_end_matches('0'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(name: &str, duration_ns: i64, shard: Option<i64>) -> PolicySpec {
        PolicySpec {
            name: name.into(),
            duration_ns,
            shard_group_duration_ns: shard,
            replica_n: 1,
        }
    }

    #[test]
    fn durations_print_as_go_prints_them() {
        assert_eq!(go_duration(0), "0s");
        assert_eq!(go_duration(7 * DAY), "168h0m0s");
        assert_eq!(go_duration(HOUR), "1h0m0s");
        assert_eq!(go_duration(90 * NANOS_PER_SECOND), "1m30s");
        assert_eq!(go_duration(1_500_000_000), "1.5s");
        assert_eq!(go_duration(500_000_000), "500ms");
        assert_eq!(go_duration(200 * DAY), "4800h0m0s");
    }

    #[test]
    fn shard_durations_follow_influxdb() {
        let mut rps = RetentionPolicies::autogen(0);
        rps.create(&spec("one", DAY, None), false).unwrap();
        rps.create(&spec("three", HOUR, Some(600 * NANOS_PER_SECOND)), false)
            .unwrap();
        rps.create(&spec("four", 200 * DAY, None), true).unwrap();
        rps.create(&spec("mid", 3 * DAY, None), false).unwrap();
        let shards: Vec<_> = rps
            .policies()
            .iter()
            .map(|p| go_duration(p.shard_group_duration_ns))
            .collect();
        assert_eq!(
            shards,
            ["168h0m0s", "1h0m0s", "1h0m0s", "168h0m0s", "24h0m0s"]
        );
        assert_eq!(rps.default_name(), Some("four"));
        assert_eq!(rps.raw_retention(), PolicyRetention::Keep(Some(200 * DAY)));
    }

    #[test]
    fn refusals_are_influxdbs() {
        let mut rps = RetentionPolicies::autogen(0);
        let short = spec("x", 1_800 * NANOS_PER_SECOND, None);
        assert_eq!(rps.create(&short, false), Err(PolicyError::DurationTooLow));
        let wide = spec("x", HOUR, Some(2 * HOUR));
        assert_eq!(
            rps.create(&wide, false),
            Err(PolicyError::IncompatibleDurations)
        );
        rps.create(&spec("one", DAY, None), false).unwrap();
        rps.create(&spec("one", DAY, None), false).unwrap();
        assert_eq!(
            rps.create(&spec("one", 2 * DAY, None), false),
            Err(PolicyError::Exists)
        );
        assert_eq!(
            rps.create(&spec("one", DAY, None), true),
            Err(PolicyError::Conflict)
        );
        let error = rps.alter("nope", &PolicyChange::default()).unwrap_err();
        assert_eq!(error.to_string(), "retention policy not found: nope");
        assert_eq!(
            PolicyError::DurationTooLow.to_string(),
            "retention policy duration must be at least 1h0m0s"
        );
    }

    #[test]
    fn alter_checks_then_changes() {
        let mut rps = RetentionPolicies::autogen(0);
        rps.create(&spec("one", DAY, None), false).unwrap();
        let change = PolicyChange {
            shard_group_duration_ns: Some(2 * HOUR),
            make_default: true,
            ..PolicyChange::default()
        };
        rps.alter("one", &change).unwrap();
        let shorter = PolicyChange {
            duration_ns: Some(HOUR),
            ..PolicyChange::default()
        };
        assert_eq!(
            rps.alter("one", &shorter),
            Err(PolicyError::IncompatibleDurations)
        );
        assert_eq!(rps.default_name(), Some("one"));
        assert_eq!(rps.get("one").unwrap().shard_group_duration_ns, 2 * HOUR);
        // Dropping the default keeps its name: what has no policy is refused naming it.
        assert!(rps.drop_policy("one"));
        assert!(!rps.drop_policy("one"));
        assert_eq!(
            rps.resolve(None).unwrap_err().to_string(),
            "retention policy not found: one"
        );
        assert_eq!(rps.raw_retention(), PolicyRetention::Unset);
        assert_eq!(rps.resolve(Some(AUTOGEN)).unwrap().name, AUTOGEN);
    }

    #[test]
    fn recreating_a_database_with_its_policy_is_no_error() {
        let with = spec("short", 3 * DAY, Some(HOUR));
        let rps = RetentionPolicies::created_with(&with).unwrap();
        rps.recreated_with(&with).unwrap();
        assert_eq!(
            rps.recreated_with(&spec("short", 4 * DAY, Some(HOUR))),
            Err(PolicyError::Conflict)
        );
    }

    #[test]
    fn the_stored_form_round_trips() {
        let mut rps = RetentionPolicies::autogen(0);
        rps.create(&spec("one", DAY, None), true).unwrap();
        let text = serde_json::to_string(&rps).unwrap();
        assert_eq!(
            text,
            r#"{"p":[{"n":"autogen","d":0,"sg":604800000000000,"r":1},{"n":"one","d":86400000000000,"sg":3600000000000,"r":1}],"df":"one"}"#
        );
        assert_eq!(
            serde_json::from_str::<RetentionPolicies>(&text).unwrap(),
            rps
        );
    }
}
