use super::*;

const S: i64 = NANOS_PER_SECOND;
const D: i64 = 86_400 * S;

fn refused(text: &str) -> String {
    match Schema::from_toml(text) {
        Ok(s) => panic!("accepted {text:?} as {s:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_issue_example() {
    let schema = Schema::from_toml(
        r#"
        [measurements.pageviews]
        layout = "buckets"
        interval = "1s"
        kind = "counter"
        rollups = ["1m", "5m", "1h", "1d"]
        retention = { raw = "7d", "1m" = "90d", "1h" = "2y" }
        change_only = false
        "#,
    )
    .unwrap();
    let m = schema.for_measurement("pageviews");
    assert_eq!(m.layout, Layout::Buckets { interval_ns: S });
    assert_eq!(m.kind, Kind::Counter);
    assert_eq!(m.rollups, Resolution::STANDARD.to_vec());
    assert_eq!(m.retention_ns(ResolutionOrRaw::Raw), Some(7 * D));
    assert_eq!(m.retention_ns(Resolution::MINUTE.into()), Some(90 * D));
    assert_eq!(m.retention_ns(Resolution::HOUR.into()), Some(730 * D));
    assert_eq!(m.retention_ns(Resolution::DAY.into()), None);
    assert!(!m.change_only);
    assert_eq!(m.interval_ns(), Some(S));
    let g = m.raw_geometry().unwrap();
    assert_eq!((g.period_ns(), g.slots()), (3_600 * S, 3_600));
}

#[test]
fn unlisted_measurements_get_the_default() {
    let schema = Schema::from_toml("").unwrap();
    let m = schema.for_measurement("cpu");
    assert_eq!(m, &MeasurementSchema::default());
    assert_eq!(m.layout, Layout::Segments);
    assert_eq!(m.kind, Kind::Gauge);
    assert_eq!(m.rollups, vec![Resolution::HOUR, Resolution::DAY]);
    assert!(m.retention.is_empty() && !m.change_only);
    // An empty table is the default too; unordered and equivalent rollups normalise.
    let schema = Schema::from_toml(
        "[measurements.cpu]\n[measurements.temp]\nrollups = [\"1h\", \"60s\"]\nchange_only = true",
    )
    .unwrap();
    assert_eq!(schema.for_measurement("cpu"), &MeasurementSchema::default());
    let temp = schema.for_measurement("temp");
    assert_eq!(temp.rollups, vec![Resolution::MINUTE, Resolution::HOUR]);
    assert!(temp.change_only);
    let none = Schema::from_toml("[measurements.x]\nrollups = []").unwrap();
    assert!(none.for_measurement("x").rollups.is_empty());
}

#[test]
fn refusals_name_the_key() {
    let cases = [
        (
            "[measurements.pageviews]\nlayout = \"rows\"",
            r#"measurements.pageviews.layout: unknown layout "rows" (expected "segments" or "buckets")"#,
        ),
        (
            "[measurements.pageviews]\nkind = \"meter\"",
            r#"measurements.pageviews.kind: unknown kind "meter" (expected "gauge" or "counter")"#,
        ),
        (
            "[measurements.pageviews]\nintervl = \"1s\"",
            "measurements.pageviews.intervl: unknown key (expected one of layout, interval, \
             kind, rollups, retention, change_only, preallocate)",
        ),
        (
            "[measurement.pageviews]\nlayout = \"buckets\"",
            "measurement: unknown key (expected defaults or measurements)",
        ),
        (
            "[measurements.pageviews]\nlayout = \"buckets\"\ninterval = \"0s\"",
            r#"measurements.pageviews.interval: duration "0s" must be greater than zero"#,
        ),
        (
            "[measurements.pageviews]\nlayout = \"buckets\"",
            r#"measurements.pageviews.interval: required with layout = "buckets""#,
        ),
        (
            "[measurements.pageviews]\nlayout = \"buckets\"\ninterval = \"7s\"\nrollups = [\"1m\"]",
            "measurements.pageviews.rollups[0]: 1m is not a whole multiple of the interval 7s",
        ),
        (
            "[measurements.pageviews]\nretention = { \"1h\" = \"30m\" }",
            "measurements.pageviews.retention.1h: 30m is shorter than the resolution 1h",
        ),
        (
            "[measurements.pageviews]\nrollups = [\"1m\"]\nretention = { \"1h\" = \"30d\" }",
            "measurements.pageviews.retention.1h: 1h is not one of the rollups in \
             measurements.pageviews.rollups",
        ),
        (
            "[measurements.pageviews]\nlayout = \"buckets\"\ninterval = \"1m\"\nretention = { raw = \"30s\" }",
            "measurements.pageviews.retention.raw: 30s is shorter than the interval 1m",
        ),
        (
            "[measurements.pageviews]\nkind = \"counter\"",
            "measurements.pageviews.kind: a counter needs layout = \"buckets\" (increments add \
             into the slot of their time)",
        ),
        (
            "[measurements.pageviews]\npreallocate = true",
            "measurements.pageviews.preallocate: only layout = \"buckets\" has documents to \
             pre-allocate",
        ),
        (
            "[measurements.t]\nlayout = \"buckets\"\ninterval = \"1s\"\nchange_only = true",
            "measurements.t.change_only: only layout = \"segments\" can skip unchanged values \
             (a bucket slot that was never written reads as absent, not as the value before it)",
        ),
        (
            "[measurements.pageviews]\nretention = { daily = \"30d\" }",
            "measurements.pageviews.retention.daily: unknown key (expected raw or one of the \
             rollups, such as 1m)",
        ),
        (
            "[measurements.pageviews]\nretention = { \"1h\" = \"30d\", \"60m\" = \"40d\" }",
            "measurements.pageviews.retention.60m: 1h is given twice",
        ),
        (
            "[measurements.pageviews]\nrollups = [\"1m\", \"60s\"]",
            "measurements.pageviews.rollups[1]: 1m is listed twice",
        ),
        (
            "[measurements.pageviews]\ninterval = \"1s\"",
            "measurements.pageviews.interval: only layout = \"buckets\" has an interval \
             (segments store each point's time)",
        ),
        (
            "[measurements.\"page views\"]\nlayout = 5",
            "measurements.\"page views\".layout: invalid type: integer `5`, expected a string",
        ),
        (
            "[measurements.pageviews]\nlayout = \"buckets\"\ninterval = \"fast\"",
            "measurements.pageviews.interval: invalid duration \"fast\": expected a number and \
             a unit, such as 10s, 1m, 1h30m (units: ns, us, ms, s, m, h, d, w)",
        ),
        (
            "[measurements.pageviews]\nlayout = \"buckets\"\ninterval = \"365d\"",
            "measurements.pageviews.interval: 365d is longer than the longest supported, 364d",
        ),
        (
            "[measurements.pageviews]\nrollups = [\"1m\", \"0s\"]",
            r#"measurements.pageviews.rollups[1]: duration "0s" must be greater than zero"#,
        ),
        (
            "[measurements.pageviews]\nretention = { raw = \"2x\" }",
            "measurements.pageviews.retention.raw: invalid duration \"2x\": expected a number \
             and a unit, such as 7d, 90d, 2y (units: ns, us, ms, s, m, h, d, w, y)",
        ),
        (
            "[measurements.pageviews]\nretention = { raw = \"0y\" }",
            r#"measurements.pageviews.retention.raw: duration "0y" must be greater than zero"#,
        ),
        (
            "[measurements.pageviews]\nretention = { raw = \"300y\" }",
            r#"measurements.pageviews.retention.raw: duration "300y" is too long"#,
        ),
        (
            "measurements = 3",
            "measurements: expected a table of measurements",
        ),
        (
            "[measurements]\npageviews = \"buckets\"",
            "measurements.pageviews: expected a table",
        ),
    ];
    for (config, message) in cases {
        assert_eq!(refused(config), message, "{config}");
    }
    assert!(refused("[measurements.x\nlayout = 1").starts_with("invalid TOML: "));
}

#[test]
fn retention_years() {
    assert_eq!(parse_retention("2y"), Ok(730 * D));
    assert_eq!(parse_retention("1y30d"), Ok(395 * D));
    assert_eq!(parse_retention("90d"), Ok(90 * D));
    assert_eq!(parse_retention("1h30m"), Ok(5_400 * S));
    for bad in ["y", "1.5y", "-1y", "2yy", "", "d"] {
        assert!(parse_retention(bad).is_err(), "{bad}");
    }
    assert_eq!(format_retention(730 * D), "2y");
    assert_eq!(format_retention(90 * D), "90d");
}

#[test]
fn serialises_with_the_config_keys_and_round_trips() {
    let text = r#"
        [measurements.pageviews]
        layout = "buckets"
        interval = "1s"
        kind = "counter"
        rollups = ["1m", "1h"]
        retention = { raw = "7d", "1m" = "90d", "1h" = "2y" }
        preallocate = true

        [measurements."odd name.$"]
        change_only = true
    "#;
    let schema = Schema::from_toml(text).unwrap();
    let out = toml::to_string(&schema).unwrap();
    let mut table: toml::Table = toml::from_str(&out).unwrap();
    let default = table.remove("default").expect("the default is listed");
    assert_eq!(
        default
            .as_table()
            .unwrap()
            .get("rollups")
            .unwrap()
            .as_array()
            .unwrap()
            .len(),
        2
    );
    assert!(default.get("interval").is_none());
    let page = &table["measurements"]["pageviews"];
    assert_eq!(page["layout"].as_str(), Some("buckets"));
    assert_eq!(page["interval"].as_str(), Some("1s"));
    assert_eq!(page["kind"].as_str(), Some("counter"));
    assert_eq!(page["retention"]["1h"].as_str(), Some("2y"));
    assert_eq!(page["retention"]["raw"].as_str(), Some("7d"));
    assert_eq!(page["change_only"].as_bool(), Some(false));
    assert_eq!(page["preallocate"].as_bool(), Some(true));
    let again = Schema::from_toml(&toml::to_string(&table).unwrap()).unwrap();
    // The printed schema holds each listed measurement's retention resolved, so read
    // back it is the measurement's own (a database's retention policy no longer
    // replaces its raw retention); everything else is the same.
    let mut pinned = schema.clone();
    for m in pinned.measurements.values_mut() {
        m.raw_retention_from_defaults = false;
    }
    assert_eq!(again, pinned);
}

/// Value segments take a raw retention too: the embedded store drops whole time partitions
/// of raw points.
#[test]
fn value_segments_take_a_raw_retention() {
    let schema = Schema::from_toml("[measurements.cpu]\nretention = { raw = \"7d\" }").unwrap();
    let cpu = schema.for_measurement("cpu");
    assert_eq!(cpu.layout, Layout::Segments);
    assert_eq!(
        cpu.retention_ns(ResolutionOrRaw::Raw),
        Some(7 * 86_400_000_000_000)
    );
}

/// Found by the `schema_config` fuzz target: without `rollups`, a bucket measurement gets
/// the standard rollups its interval divides, so the schema it reports is one it accepts.
#[test]
fn default_rollups_fit_the_interval() {
    let text = "[measurements.w]\nlayout = \"buckets\"\ninterval = \"1w\"\n\
                [measurements.s]\nlayout = \"buckets\"\ninterval = \"2m\"\n";
    let schema = Schema::from_toml(text).unwrap();
    assert!(schema.for_measurement("w").rollups.is_empty());
    let names: Vec<String> = schema
        .for_measurement("s")
        .rollups
        .iter()
        .map(|r| r.to_string())
        .collect();
    assert_eq!(names, vec!["1h", "1d"]);
    let mut table: toml::Table = toml::from_str(&toml::to_string(&schema).unwrap()).unwrap();
    table.remove("default");
    assert_eq!(
        Schema::from_toml(&toml::to_string(&table).unwrap()).unwrap(),
        schema
    );
}
