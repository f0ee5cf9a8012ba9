//! The table: one row per layout, latencies in ms, and one more for a layout's store after
//! each of its seal steps (b', b'', c'). A figure a row does not have is `-`; a column no row has
//! (documents on the embedded store, file bytes on MongoDB) is left out. `points` are the
//! dataset's, `late` the re-sends on top; points/s and round trips per 1,000 points count
//! both, bytes per point the dataset's (late points overwrite, they add none); `× (a)` is
//! the ratio to row a's bytes per point.

use super::{Layout, MongoStorage, Outcome, Sealed};

/// Mean, standard deviation, p75, p95, p99, min, max (nearest-rank percentiles).
fn latency_stats(samples: &[f64]) -> Option<[f64; 7]> {
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let (&min, &max) = (sorted.first()?, sorted.last()?);
    let n = sorted.len() as f64;
    let mean = sorted.iter().sum::<f64>() / n;
    let sd = (sorted.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
    let rank = |p: f64| sorted[((p * n).ceil() as usize).clamp(1, sorted.len()) - 1];
    Some([mean, sd, rank(0.75), rank(0.95), rank(0.99), min, max])
}

const HEADER: [&str; 28] = [
    "layout",
    "points",
    "late",
    "points/s",
    "mean ms",
    "sd",
    "p75",
    "p95",
    "p99",
    "min",
    "max",
    "prealloc ms",
    "prealloc docs",
    "docs",
    "index entries",
    "data B",
    "index B",
    "file B",
    "B/point",
    "× (a)",
    "RT/1k pts",
    "RT/req",
    "seal ms",
    "seal RT",
    "Q1 ms",
    "Q2 ms",
    "Q3 ms",
    "Q4 ms",
];

/// Bytes a row's store takes: data and index bytes on MongoDB, the files on disk.
fn bytes(storage: Option<MongoStorage>, file_bytes: Option<u64>) -> Option<u64> {
    storage.map(|s| s.data_bytes + s.index_bytes).or(file_bytes)
}

/// Bytes per distinct point stored (the dataset's points; late ones overwrite).
fn per_point(bytes: Option<u64>, o: &Outcome) -> Option<f64> {
    bytes.map(|b| b as f64 / o.points.max(1) as f64)
}

/// The cells of one row after the name, `None` where the row has no figure; `naive` is
/// row a's bytes per point, if row a ran.
fn cells(o: &Outcome, naive: Option<f64>) -> Vec<Option<String>> {
    let int = |v: Option<u64>| v.map(|v| v.to_string());
    let mut out = vec![
        Some(o.points.to_string()),
        o.late.map(|n| n.to_string()),
        Some(format!(
            "{:.0}",
            o.sent_points() as f64 / o.seconds.max(1e-9)
        )),
    ];
    match latency_stats(&o.latencies_ms) {
        Some(s) => out.extend(s.iter().map(|x| Some(format!("{x:.2}")))),
        None => out.extend(std::iter::repeat_n(None, 7)),
    }
    out.push(o.prealloc.map(|p| format!("{:.1}", p.ms)));
    out.push(o.prealloc.map(|p| p.documents.to_string()));
    out.extend(storage_cells(o.storage));
    out.push(int(o.file_bytes));
    out.extend(bytes_cells(
        per_point(bytes(o.storage, o.file_bytes), o),
        naive,
    ));
    out.push(
        o.round_trips
            .map(|rt| format!("{:.1}", rt as f64 * 1000.0 / o.sent_points() as f64)),
    );
    out.push(
        o.round_trips
            .map(|rt| format!("{:.1}", rt as f64 / o.latencies_ms.len().max(1) as f64)),
    );
    out.extend([None, None]);
    out.extend(o.queries_ms.iter().map(|q| q.map(query_ms)));
    out
}

/// The cells of a row's second line, its store after the seal step: storage, bytes,
/// the step's time and round trips, and the queries after it.
fn sealed_cells(o: &Outcome, sealed: &Sealed, naive: Option<f64>) -> Vec<Option<String>> {
    let mut out = vec![None; 12];
    out.extend(storage_cells(Some(sealed.storage)));
    out.push(None);
    out.extend(bytes_cells(
        per_point(bytes(Some(sealed.storage), None), o),
        naive,
    ));
    out.extend([None, None]);
    out.push(Some(format!("{:.1}", sealed.ms)));
    out.push(sealed.round_trips.map(|rt| rt.to_string()));
    out.extend(sealed.queries_ms.iter().map(|q| q.map(query_ms)));
    out
}

fn storage_cells(s: Option<MongoStorage>) -> [Option<String>; 4] {
    let int = |f: fn(&MongoStorage) -> u64| s.as_ref().map(|s| f(s).to_string());
    [
        int(|s| s.documents),
        int(|s| s.index_entries),
        int(|s| s.data_bytes),
        int(|s| s.index_bytes),
    ]
}

/// Bytes per point and its ratio to row a's.
fn bytes_cells(per_point: Option<f64>, naive: Option<f64>) -> [Option<String>; 2] {
    let ratio = per_point
        .zip(naive)
        .filter(|(_, n)| *n > 0.0)
        .map(|(b, n)| format!("{:.3}", b / n));
    [per_point.map(|b| format!("{b:.1}")), ratio]
}

/// Two decimals below 10 ms (embedded queries take tenths of a millisecond), one above.
fn query_ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

/// A line of the table: figures, or a row with nothing measured (its note instead), or a
/// note under the row before.
enum Line {
    Figures(String, Vec<Option<String>>),
    Failed(String, String),
    Note(String),
}

pub(super) fn table(results: &[(Layout, Outcome)]) -> String {
    let naive = results
        .iter()
        .find(|(l, o)| *l == Layout::PointDocs && o.points > 0)
        .and_then(|(_, o)| per_point(bytes(o.storage, o.file_bytes), o));
    let mut lines = Vec::new();
    for (layout, o) in results {
        if o.points == 0 {
            let note = o.note.clone().unwrap_or_default();
            lines.push(Line::Failed(layout.name().to_owned(), note));
            continue;
        }
        lines.push(Line::Figures(layout.name().to_owned(), cells(o, naive)));
        for sealed in &o.sealed {
            let cells = sealed_cells(o, sealed, naive);
            lines.push(Line::Figures(sealed.name.to_owned(), cells));
        }
        if let Some(note) = &o.note {
            lines.push(Line::Note(format!("  note: {note}")));
        }
    }
    let figures = || {
        lines.iter().filter_map(|l| match l {
            Line::Figures(_, cells) => Some(cells),
            _ => None,
        })
    };
    let nothing_measured = figures().next().is_none();
    // A column no row has a figure in is left out (all of them if nothing was measured).
    let keep: Vec<bool> = (0..HEADER.len())
        .map(|c| c == 0 || nothing_measured || figures().any(|cells| cells[c - 1].is_some()))
        .collect();
    let pick = |row: Vec<String>| -> Vec<String> {
        row.into_iter()
            .zip(&keep)
            .filter_map(|(cell, &k)| k.then_some(cell))
            .collect()
    };
    let mut rows: Vec<Vec<String>> = vec![pick(HEADER.iter().map(|s| s.to_string()).collect())];
    for line in lines {
        rows.push(match line {
            Line::Figures(name, cells) => pick(
                std::iter::once(name)
                    .chain(cells.into_iter().map(dash))
                    .collect(),
            ),
            Line::Failed(name, note) => {
                let mut row = vec![name, note];
                row.resize(HEADER.len(), String::new());
                pick(row)
            }
            Line::Note(note) => vec![note],
        });
    }
    render(&rows)
}

fn dash(cell: Option<String>) -> String {
    cell.unwrap_or_else(|| "-".into())
}

/// A Markdown table, columns padded; one-cell rows are notes printed as they are.
fn render(rows: &[Vec<String>]) -> String {
    let columns = rows.first().map_or(0, Vec::len);
    let widths: Vec<usize> = (0..columns)
        .map(|c| {
            rows.iter()
                .filter(|r| r.len() > 1)
                .filter_map(|r| r.get(c))
                .map(|cell| cell.chars().count())
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for (i, row) in rows.iter().enumerate() {
        if row.len() == 1 {
            out.push_str(&format!("{}\n", row[0]));
            continue;
        }
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (cell, w))| {
                if c == 0 {
                    format!("{cell:<w$}")
                } else {
                    format!("{cell:>w$}")
                }
            })
            .collect();
        out.push_str(&format!("| {} |\n", cells.join(" | ")));
        if i == 0 {
            let rule: Vec<String> = widths
                .iter()
                .enumerate()
                .map(|(c, w)| {
                    if c == 0 {
                        "-".repeat(w + 2)
                    } else {
                        format!("{}:", "-".repeat(w + 1))
                    }
                })
                .collect();
            out.push_str(&format!("|{}|\n", rule.join("|")));
        }
    }
    out
}
