//! The devops "cpu" dataset (TSBS cpu-only shape): generated here or
//! loaded from a file written by `gen.py`, held in memory as ready-to-send bodies, with
//! what the checks need to know about it.
//!
//! The bodies are slices of one buffer ([`Bytes`]), so handing a body to a client copies
//! nothing and no byte is produced while the clock runs.

use anyhow::{bail, Context, Result};
use bytes::Bytes;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;
use tickertape_core::model::Point;

/// 2016-01-01T00:00:00Z, the first timestamp gen.py writes.
pub const START_NS: i64 = 1_451_606_400_000_000_000;
/// One row per host every 10 s.
const INTERVAL_NS: i64 = 10_000_000_000;
pub const HOUR_NS: i64 = 3_600_000_000_000;

/// The devops fields, in gen.py's order.
pub const FIELDS: [&str; 10] = [
    "usage_user",
    "usage_system",
    "usage_idle",
    "usage_nice",
    "usage_iowait",
    "usage_irq",
    "usage_softirq",
    "usage_steal",
    "usage_guest",
    "usage_guest_nice",
];

/// TSBS's devops vocabulary, as in gen.py (regions sorted by name, as gen.py draws them).
const REGIONS: [(&str, &[&str]); 9] = [
    ("ap-northeast-1", &["ap-northeast-1a", "ap-northeast-1c"]),
    ("ap-southeast-1", &["ap-southeast-1a", "ap-southeast-1b"]),
    ("ap-southeast-2", &["ap-southeast-2a", "ap-southeast-2b"]),
    ("eu-central-1", &["eu-central-1a", "eu-central-1b"]),
    ("eu-west-1", &["eu-west-1a", "eu-west-1b", "eu-west-1c"]),
    ("sa-east-1", &["sa-east-1a", "sa-east-1b", "sa-east-1c"]),
    (
        "us-east-1",
        &["us-east-1a", "us-east-1b", "us-east-1c", "us-east-1e"],
    ),
    ("us-west-1", &["us-west-1a", "us-west-1b"]),
    ("us-west-2", &["us-west-2a", "us-west-2b", "us-west-2c"]),
];
const OSES: [&str; 3] = ["Ubuntu16.10", "Ubuntu16.04LTS", "Ubuntu15.10"];
const ARCHS: [&str; 2] = ["x64", "x86"];
const TEAMS: [&str; 4] = ["SF", "NYC", "LON", "CHI"];
const ENVS: [&str; 3] = ["production", "staging", "test"];

/// Upper bounds that keep a typo from asking for terabytes.
pub const MAX_HOSTS: usize = 100_000;
pub const MAX_HOURS: u64 = 24 * 366;
/// gen.py-style files are ~330 bytes a line; 16 GiB is far beyond any sensible run.
const MAX_FILE_BYTES: u64 = 16 << 30;

/// The parameters of a generated dataset.
#[derive(Clone, Copy, Debug)]
pub struct Shape {
    pub hosts: usize,
    pub hours: u64,
    pub seed: u64,
    /// Round values to this many decimals.
    pub round: Option<u32>,
}

/// The dataset, ready to send.
pub struct Dataset {
    /// Where it came from, for the report.
    pub source: String,
    /// One stream of bodies per client; see [`Stream`].
    pub streams: Vec<Stream>,
    pub lines: u64,
    pub points: u64,
    pub bytes: u64,
    pub measurement: String,
    /// Host names in order of first appearance.
    pub hosts: Vec<String>,
    /// The field names of the first line.
    pub fields: Vec<String>,
    /// Earliest and latest timestamp, nanoseconds (both inclusive).
    pub first_time: i64,
    pub last_time: i64,
}

/// The bodies one client sends, in order.
///
/// Hosts are dealt round-robin to the streams (in order of first appearance) and a
/// stream keeps its lines in file order, so the points of a series never travel in two
/// concurrent requests. tickertape refuses a point older than its series' last one; with
/// one shared queue of time-major bodies, two clients would race and one body would be
/// refused. (TSBS calls this `--hash-workers`.) Every store compared gets the same bodies.
#[derive(Clone)]
pub struct Stream {
    /// Bodies of `batch_lines` lines each (the last may be shorter).
    pub bodies: Vec<Bytes>,
    /// Points in each body, for the progress bar.
    pub points: Vec<u64>,
}

/// One line of a gen.py-shaped body, split but not otherwise interpreted.
struct RawLine<'a> {
    measurement: &'a str,
    hostname: &'a str,
    /// `name=value,name=value…`.
    fields: &'a str,
    time: i64,
}

/// The reference values of some series: (hostname, field) → points in time order, each
/// value parsed from the dataset's text with Rust's f64 parser.
pub type Reference = HashMap<(String, String), Vec<(i64, f64)>>;

impl Dataset {
    /// Generates the dataset in memory. Same shape as gen.py, not the same bytes (another
    /// random generator); use a gen.py file to compare stores on identical data.
    pub fn generate(shape: Shape, batch_lines: usize, streams: usize) -> Result<Self> {
        let text = generate_text(shape);
        let source = format!(
            "generated in Rust: --hosts {} --hours {} --seed {}{}",
            shape.hosts,
            shape.hours,
            shape.seed,
            shape
                .round
                .map_or(String::new(), |r| format!(" --round {r}"))
        );
        Self::from_text(source, text, batch_lines, streams)
    }

    /// Loads a file written by gen.py (or any line protocol of the same shape: a `hostname`
    /// tag, no escapes or quoted strings, a timestamp on every line).
    pub fn load(path: &Path, batch_lines: usize, streams: usize) -> Result<Self> {
        let size = std::fs::metadata(path)
            .with_context(|| format!("cannot read {}", path.display()))?
            .len();
        if size > MAX_FILE_BYTES {
            bail!("{} is {size} bytes; the benchmark holds the whole dataset in memory and stops at {MAX_FILE_BYTES}", path.display());
        }
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        Self::from_text(
            format!("file {}", path.display()),
            text,
            batch_lines,
            streams,
        )
    }

    /// Splits the text into `streams` streams of bodies and learns its hosts, fields and
    /// time range, checking that every line has the expected shape. Blank and comment
    /// lines are dropped.
    fn from_text(source: String, text: String, batch_lines: usize, streams: usize) -> Result<Self> {
        struct Building {
            text: String,
            /// End offset of each finished body.
            cuts: Vec<usize>,
            points: Vec<u64>,
            lines_in_body: usize,
            points_in_body: u64,
        }
        let mut building: Vec<Building> = (0..streams.max(1))
            .map(|_| Building {
                text: String::with_capacity(text.len() / streams.max(1) + 1024),
                cuts: Vec::new(),
                points: Vec::new(),
                lines_in_body: 0,
                points_in_body: 0,
            })
            .collect();
        let mut host_index: HashMap<&str, usize> = HashMap::new();
        let mut hosts = Vec::new();
        let mut fields: Option<Vec<String>> = None;
        let mut measurement: Option<&str> = None;
        let (mut first_time, mut last_time) = (i64::MAX, i64::MIN);
        let (mut lines, mut points) = (0u64, 0u64);
        for (number, line) in text.split('\n').enumerate() {
            let content = line.trim_end_matches('\r');
            if content.is_empty() || content.starts_with('#') {
                continue;
            }
            let at = || format!("{source}, line {}", number + 1);
            let raw = split_line(content).with_context(at)?;
            let n = check_fields(raw.fields).with_context(at)?;
            if fields.is_none() {
                fields = Some(
                    raw.fields
                        .split(',')
                        .map(|f| f.split('=').next().unwrap_or("").to_string())
                        .collect(),
                );
            }
            match measurement {
                None => measurement = Some(raw.measurement),
                Some(m) if m != raw.measurement => {
                    bail!(
                        "{}: measurement {:?} differs from the first line's {m:?}",
                        at(),
                        raw.measurement
                    )
                }
                Some(_) => {}
            }
            let host = *host_index.entry(raw.hostname).or_insert_with(|| {
                hosts.push(raw.hostname.to_string());
                hosts.len() - 1
            });
            first_time = first_time.min(raw.time);
            last_time = last_time.max(raw.time);
            lines += 1;
            points += n;
            let count = building.len();
            let b = &mut building[host % count];
            b.text.push_str(content);
            b.text.push('\n');
            b.lines_in_body += 1;
            b.points_in_body += n;
            if b.lines_in_body == batch_lines {
                b.cuts.push(b.text.len());
                b.points.push(b.points_in_body);
                (b.lines_in_body, b.points_in_body) = (0, 0);
            }
        }
        if lines == 0 {
            bail!("{source} holds no line");
        }
        let bytes = building.iter().map(|b| b.text.len() as u64).sum();
        let measurement = measurement.unwrap_or_default().to_string();
        let fields = fields.unwrap_or_default();
        drop(host_index);
        drop(text);
        let streams = building
            .into_iter()
            .map(|mut b| {
                if b.lines_in_body > 0 {
                    b.cuts.push(b.text.len());
                    b.points.push(b.points_in_body);
                }
                let all = Bytes::from(b.text);
                let mut start = 0;
                let bodies = b
                    .cuts
                    .iter()
                    .map(|&end| {
                        let body = all.slice(start..end);
                        start = end;
                        body
                    })
                    .collect();
                Stream {
                    bodies,
                    points: b.points,
                }
            })
            .collect();
        Ok(Self {
            source,
            streams,
            lines,
            points,
            bytes,
            measurement,
            hosts,
            fields,
            first_time,
            last_time,
        })
    }

    /// Bodies in all streams.
    pub fn bodies(&self) -> usize {
        self.streams.iter().map(|s| s.bodies.len()).sum()
    }

    /// Whole hours the dataset spans, rounded up (24 for gen.py's `--hours 24`).
    pub fn hours(&self) -> i64 {
        let span = self.last_time - self.first_time + 1;
        (span + HOUR_NS - 1) / HOUR_NS
    }

    /// Every point of `hosts`, read back from the bodies' text.
    pub fn reference(&self, hosts: &[String]) -> Result<Reference> {
        let mut out = Reference::new();
        for batch in self.streams.iter().flat_map(|s| &s.bodies) {
            let text = std::str::from_utf8(batch).context("dataset is not UTF-8")?;
            for line in text.lines() {
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let raw = split_line(line)?;
                if !hosts.iter().any(|h| h == raw.hostname) {
                    continue;
                }
                for pair in raw.fields.split(',') {
                    let (name, value) = pair.split_once('=').context("field without '='")?;
                    let value: f64 = value
                        .parse()
                        .with_context(|| format!("field {name}: {value:?} is not a float"))?;
                    out.entry((raw.hostname.to_string(), name.to_string()))
                        .or_default()
                        .push((raw.time, value));
                }
            }
        }
        for points in out.values_mut() {
            points.sort_by_key(|p| p.0);
        }
        Ok(out)
    }
}

/// Splits `measurement,tags fields time`. Escapes and quoted strings are refused: the
/// benchmark's own checks read the text with this simple splitter.
fn split_line(line: &str) -> Result<RawLine<'_>> {
    if line.contains(['\\', '"']) {
        bail!("escapes and quoted strings are not supported by the benchmark: {line:.80}");
    }
    let mut parts = line.split(' ');
    let (Some(series), Some(fields), Some(time), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        bail!("expected `measurement,tags fields timestamp`: {line:.80}");
    };
    let time: i64 = time
        .parse()
        .with_context(|| format!("bad timestamp {time:?}"))?;
    let mut tags = series.split(',');
    let measurement = tags.next().unwrap_or("");
    let hostname = tags
        .filter_map(|t| t.split_once('='))
        .find(|(k, _)| *k == "hostname")
        .map(|(_, v)| v)
        .context("no hostname tag")?;
    Ok(RawLine {
        measurement,
        hostname,
        fields,
        time,
    })
}

/// The number of fields, each `name=float`.
fn check_fields(fields: &str) -> Result<u64> {
    let mut n = 0;
    for pair in fields.split(',') {
        let (name, value) = pair
            .split_once('=')
            .with_context(|| format!("field {pair:?} has no '='"))?;
        if name.is_empty() || value.parse::<f64>().is_err() {
            bail!("field {pair:?} is not name=float");
        }
        n += 1;
    }
    Ok(n)
}

/// The dataset as gen.py lays it out: time-major rows, random walks clamped to [0, 100].
fn generate_text(shape: Shape) -> String {
    let mut walk = Walk::new(shape);
    let mut out = String::with_capacity(shape.hosts * walk.steps() as usize * 340);
    for s in 0..walk.steps() {
        let time = START_NS + s as i64 * INTERVAL_NS;
        walk.step(|_, prefix, values| {
            out.push_str(prefix);
            for (j, v) in values.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                // `{v}` prints the shortest text that parses back to the same f64.
                let _ = write!(out, "{}={v}", FIELDS[j]);
            }
            let _ = writeln!(out, " {time}");
        });
    }
    out
}

/// The same dataset as [`generate_text`], point for point and bit for bit, as one column
/// of points per series without the detour through text: series `host × 10 + field`, in
/// time order.
pub fn generate_columns(shape: Shape) -> Vec<Vec<Point>> {
    let mut walk = Walk::new(shape);
    let steps = walk.steps() as usize;
    let mut columns: Vec<Vec<Point>> = (0..shape.hosts * FIELDS.len())
        .map(|_| Vec::with_capacity(steps))
        .collect();
    for s in 0..steps {
        let time = START_NS + s as i64 * INTERVAL_NS;
        walk.step(|host, _, values| {
            for (j, &v) in values.iter().enumerate() {
                columns[host * FIELDS.len() + j].push(Point::new(time, v));
            }
        });
    }
    columns
}

/// gen.py's random walks: the host prefixes are drawn first, then one step of every host
/// per row time, each field a step U[-1, 1] clamped to [0, 100].
struct Walk {
    rng: StdRng,
    prefixes: Vec<String>,
    state: Vec<[f64; 10]>,
    shape: Shape,
}

impl Walk {
    fn new(shape: Shape) -> Self {
        let mut rng = StdRng::seed_from_u64(shape.seed);
        let prefixes = (0..shape.hosts).map(|i| host_prefix(&mut rng, i)).collect();
        let state = (0..shape.hosts)
            .map(|_| std::array::from_fn(|_| rng.gen_range(0.0..100.0)))
            .collect();
        Self {
            rng,
            prefixes,
            state,
            shape,
        }
    }

    /// Row times in the dataset.
    fn steps(&self) -> u64 {
        self.shape.hours * 3600 * 1_000_000_000 / INTERVAL_NS as u64
    }

    /// Advances every host one step, in host order, and hands `row` the host's index, its
    /// line prefix (`cpu,tags `) and its values as the dataset holds them (rounded if the
    /// shape says so; the walk itself goes on unrounded).
    fn step(&mut self, mut row: impl FnMut(usize, &str, &[f64; 10])) {
        for (host, values) in self.state.iter_mut().enumerate() {
            let mut shown = [0.0; 10];
            for (v, out) in values.iter_mut().zip(&mut shown) {
                *v = (*v + (self.rng.gen::<f64>() * 2.0 - 1.0)).clamp(0.0, 100.0);
                *out = match self.shape.round {
                    // `{:.N}` rounds the exact binary value; parsing it back gives the f64
                    // nearest to the rounded decimal, as Python's round(x, N) does.
                    Some(n) => format!("{:.*}", n as usize, *v).parse().unwrap_or(*v),
                    None => *v,
                };
            }
            row(host, &self.prefixes[host], &shown);
        }
    }
}

fn host_prefix(rng: &mut StdRng, i: usize) -> String {
    let (region, zones) = REGIONS[rng.gen_range(0..REGIONS.len())];
    // Array elements are evaluated left to right: the draws happen in gen.py's order.
    let tags = [
        ("hostname", format!("host_{i}")),
        ("region", region.to_string()),
        ("datacenter", pick(rng, zones)),
        ("rack", rng.gen_range(0..100).to_string()),
        ("os", pick(rng, &OSES)),
        ("arch", pick(rng, &ARCHS)),
        ("team", pick(rng, &TEAMS)),
        ("service", rng.gen_range(0..20).to_string()),
        ("service_version", rng.gen_range(0..2).to_string()),
        ("service_environment", pick(rng, &ENVS)),
    ];
    let tags: Vec<String> = tags.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("cpu,{} ", tags.join(","))
}

fn pick(rng: &mut StdRng, from: &[&str]) -> String {
    from.choose(rng).copied().unwrap_or_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_dataset_has_the_reference_shape() {
        let shape = Shape {
            hosts: 3,
            hours: 1,
            seed: 7,
            round: Some(2),
        };
        let d = Dataset::generate(shape, 100, 2).unwrap();
        assert_eq!(d.lines, 3 * 360);
        assert_eq!(d.points, 3 * 360 * 10);
        assert_eq!(d.hosts, ["host_0", "host_1", "host_2"]);
        assert_eq!(d.fields.len(), 10);
        assert_eq!(d.first_time, START_NS);
        assert_eq!(d.last_time, START_NS + 359 * INTERVAL_NS);
        assert_eq!(d.hours(), 1);
        // host_0 and host_2 in one stream (720 lines), host_1 in the other (360).
        assert_eq!(d.streams.len(), 2);
        assert_eq!(d.streams[0].bodies.len(), 8);
        assert_eq!(d.streams[1].bodies.len(), 4);
        assert_eq!(d.bodies(), 12);
        let sent: u64 = d.streams.iter().flat_map(|s| &s.points).sum();
        assert_eq!(sent, d.points);
        assert!(d.streams[1].bodies.iter().all(|b| std::str::from_utf8(b)
            .unwrap()
            .lines()
            .all(|l| l.starts_with("cpu,hostname=host_1,"))));
        let reference = d.reference(&["host_1".to_string()]).unwrap();
        assert_eq!(reference.len(), 10);
        for points in reference.values() {
            assert_eq!(points.len(), 360);
            for (_, v) in points {
                assert!((0.0..=100.0).contains(v));
                // Two decimals: printing with two decimals and parsing back is the identity.
                assert_eq!(
                    format!("{v:.2}").parse::<f64>().unwrap().to_bits(),
                    v.to_bits()
                );
            }
        }
    }

    #[test]
    fn same_seed_same_bytes() {
        let shape = Shape {
            hosts: 2,
            hours: 1,
            seed: 1,
            round: None,
        };
        assert_eq!(generate_text(shape), generate_text(shape));
    }

    #[test]
    fn columns_hold_the_text_point_for_point() {
        for round in [None, Some(2)] {
            let shape = Shape {
                hosts: 2,
                hours: 1,
                seed: 5,
                round,
            };
            let columns = generate_columns(shape);
            let d = Dataset::generate(shape, 100, 1).unwrap();
            let text = d.reference(&d.hosts).unwrap();
            assert_eq!(columns.len(), 2 * FIELDS.len());
            for (host, name) in d.hosts.iter().enumerate() {
                for (j, field) in FIELDS.iter().enumerate() {
                    let column = &columns[host * FIELDS.len() + j];
                    let expected = &text[&(name.clone(), field.to_string())];
                    assert_eq!(column.len(), 360);
                    for (p, (t, v)) in column.iter().zip(expected) {
                        assert_eq!((p.time, p.value.to_bits()), (*t, v.to_bits()));
                    }
                }
            }
        }
    }

    #[test]
    fn gen_py_lines_are_understood() {
        let text = "cpu,hostname=host_0,region=eu-west-1 usage_user=58.1,usage_system=2.0 1451606400000000000\n\
                    cpu,hostname=host_1,region=eu-west-1 usage_user=0.5,usage_system=100.0 1451606400000000000\n\
                    cpu,hostname=host_0,region=eu-west-1 usage_user=57.3,usage_system=1.5 1451606410000000000\n";
        let d = Dataset::from_text("test".into(), text.to_string(), 2, 1).unwrap();
        assert_eq!((d.lines, d.points, d.bodies()), (3, 6, 2));
        assert_eq!(d.bytes, text.len() as u64);
        assert_eq!(d.measurement, "cpu");
        assert_eq!(d.hosts, ["host_0", "host_1"]);
        assert_eq!(d.fields, ["usage_user", "usage_system"]);
        let r = d.reference(&["host_0".into()]).unwrap();
        let user = &r[&("host_0".to_string(), "usage_user".to_string())];
        assert_eq!(user, &[(START_NS, 58.1), (START_NS + INTERVAL_NS, 57.3)]);
    }

    #[test]
    fn malformed_lines_are_refused() {
        for bad in [
            "cpu,host=a x=1 1",
            "cpu,hostname=a x=\"s\" 1",
            "cpu,hostname=a x=1",
            "cpu,hostname=a x=y 1",
        ] {
            assert!(
                Dataset::from_text("t".into(), format!("{bad}\n"), 10, 1).is_err(),
                "{bad}"
            );
        }
    }
}
