//! The data set both stores hold: `cpu`, `mem` and `disk` over two hours from
//! 2020-08-01T00:00:00Z, with the irregularities hand-written statements meet — a series
//! without one of the measurement's tags (`cpu,host=h4` has no `dc`), a series that
//! starts later (`h4`), gaps (`cpu,host=h2` every 40 minutes, `mem,host=h3`), points
//! written late (after later ones, and off the 10-second grid), float and integer fields.
//! Values come from a fixed seed: the data is the same for every statement seed.

use super::rng::Rng;

/// 2020-08-01T00:00:00Z, seconds: the data's first time.
pub const T0: i64 = 1_596_240_000;
/// The data covers `[T0, T0 + SPAN)`, seconds.
pub const SPAN: i64 = 2 * 3600;

/// A measurement as the statements see it.
pub struct Measurement {
    pub name: &'static str,
    pub floats: &'static [&'static str],
    pub integers: &'static [&'static str],
    pub tags: &'static [&'static str],
}

pub const MEASUREMENTS: &[Measurement] = &[
    Measurement {
        name: "cpu",
        floats: &["usage_user", "usage_system"],
        integers: &["procs"],
        tags: &["host", "region", "dc"],
    },
    Measurement {
        name: "mem",
        floats: &["used_pct"],
        integers: &["free"],
        tags: &["host", "region"],
    },
    Measurement {
        name: "disk",
        floats: &["used_pct"],
        integers: &["inodes"],
        tags: &["host", "path", "dc"],
    },
];

/// The values a tag takes, for conditions (`""` matches the series without it).
pub fn tag_values(tag: &str) -> &'static [&'static str] {
    match tag {
        "host" => &["h1", "h2", "h3", "h4"],
        "region" => &["eu", "us"],
        "dc" => &["a", "b", ""],
        "path" => &["/", "/data"],
        _ => &[""],
    }
}

/// A float with four decimals in `[lo, lo + width)`: few ties between points.
fn float(rng: &mut Rng, lo: f64, width: f64) -> f64 {
    lo + (rng.below(10_000) as f64 / 10_000.0) * width
}

/// The line protocol, in the order it is written (late points last), precision seconds.
pub fn line_protocol() -> String {
    let mut rng = Rng::new(0x5eed_da7a);
    let mut early = String::new();
    let mut late = String::new();
    let cpu_hosts = [
        ("h1", "eu", Some("a")),
        ("h2", "eu", Some("b")),
        ("h3", "us", Some("a")),
        ("h4", "us", None),
    ];
    for i in 0..SPAN / 10 {
        let t = T0 + i * 10;
        for (host, region, dc) in cpu_hosts {
            if host == "h2" && (i / 60) % 4 == 3 {
                continue; // a 10-minute gap every 40 minutes
            }
            if host == "h4" && t < T0 + 50 * 60 {
                continue; // starts later
            }
            let dc = dc.map(|d| format!(",dc={d}")).unwrap_or_default();
            let line = format!(
                "cpu{dc},host={host},region={region} usage_user={:.4},usage_system={:.4},procs={}i {t}\n",
                float(&mut rng, 0.0, 100.0),
                float(&mut rng, 0.0, 20.0),
                100 + rng.below(60),
            );
            // h3's first hour arrives after its second.
            match host == "h3" && t < T0 + 3600 {
                true => late.push_str(&line),
                false => early.push_str(&line),
            }
        }
        // Off the grid, written last: h1 every 5 minutes, 5 seconds after the grid.
        if i % 30 == 0 {
            late.push_str(&format!(
                "cpu,dc=a,host=h1,region=eu usage_user={:.4},procs={}i {}\n",
                float(&mut rng, 0.0, 100.0),
                100 + rng.below(60),
                t + 5
            ));
        }
    }
    for i in 0..SPAN / 30 {
        let t = T0 + i * 30;
        for (host, region) in [("h1", "eu"), ("h2", "us"), ("h3", "us")] {
            if host == "h3" && (T0 + 20 * 60..T0 + 70 * 60).contains(&t) {
                continue;
            }
            early.push_str(&format!(
                "mem,host={host},region={region} used_pct={:.4},free={}i {t}\n",
                float(&mut rng, 20.0, 60.0),
                1000 + rng.below(9000),
            ));
        }
    }
    for i in 0..SPAN / 60 {
        let t = T0 + i * 60;
        for (host, path, dc) in [
            ("h1", "/", Some("a")),
            ("h1", "/data", Some("a")),
            ("h2", "/", None),
            ("h4", "/data", None),
        ] {
            if host == "h4" && t < T0 + 75 * 60 {
                continue;
            }
            let dc = dc.map(|d| format!(",dc={d}")).unwrap_or_default();
            // Disks fill slowly: a rising value with a little noise.
            let used = 40.0 + i as f64 * 0.05 + float(&mut rng, 0.0, 0.5);
            early.push_str(&format!(
                "disk{dc},host={host},path={path} used_pct={used:.4},inodes={}i {t}\n",
                50_000 + i * 7 + rng.below(5) as i64,
            ));
        }
    }
    early + &late
}
