//! The table: one row per layout, latencies in ms. A figure a row does not have is `-`; a
//! column no row has (documents on the embedded store, file bytes on MongoDB) is left out.

use super::{Layout, Outcome};

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

const HEADER: [&str; 23] = [
    "layout",
    "points",
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
    "RT/1k pts",
    "Q1 ms",
    "Q2 ms",
    "Q3 ms",
    "Q4 ms",
];

/// The cells of one row after the name, `None` where the row has no figure.
fn cells(o: &Outcome) -> Vec<Option<String>> {
    let int = |v: Option<u64>| v.map(|v| v.to_string());
    let per_point = |v: Option<u64>| v.map(|b| format!("{:.1}", b as f64 / o.points as f64));
    let mut out = vec![
        Some(o.points.to_string()),
        Some(format!("{:.0}", o.points as f64 / o.seconds.max(1e-9))),
    ];
    match latency_stats(&o.latencies_ms) {
        Some(s) => out.extend(s.iter().map(|x| Some(format!("{x:.2}")))),
        None => out.extend(std::iter::repeat_n(None, 7)),
    }
    out.push(o.prealloc.map(|p| format!("{:.1}", p.ms)));
    out.push(o.prealloc.map(|p| p.documents.to_string()));
    let s = o.storage;
    out.push(int(s.map(|s| s.documents)));
    out.push(int(s.map(|s| s.index_entries)));
    out.push(int(s.map(|s| s.data_bytes)));
    out.push(int(s.map(|s| s.index_bytes)));
    out.push(int(o.file_bytes));
    out.push(per_point(
        s.map(|s| s.data_bytes + s.index_bytes).or(o.file_bytes),
    ));
    out.push(
        o.round_trips
            .map(|rt| format!("{:.1}", rt as f64 * 1000.0 / o.points as f64)),
    );
    out.extend(o.queries_ms.iter().map(|q| q.map(query_ms)));
    out
}

/// Two decimals below 10 ms (embedded queries take tenths of a millisecond), one above.
fn query_ms(v: f64) -> String {
    if v < 10.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.1}")
    }
}

pub(super) fn table(results: &[(Layout, Outcome)]) -> String {
    // `None` for a row with nothing measured: its note replaces the figures.
    let measured: Vec<Option<Vec<Option<String>>>> = results
        .iter()
        .map(|(_, o)| (o.points > 0).then(|| cells(o)))
        .collect();
    let keep: Vec<bool> = (0..HEADER.len())
        .map(|c| {
            c == 0
                || measured
                    .iter()
                    .flatten()
                    .any(|cells| cells[c - 1].is_some())
                || measured.iter().all(Option::is_none)
        })
        .collect();
    let pick = |row: Vec<String>| -> Vec<String> {
        row.into_iter()
            .zip(&keep)
            .filter_map(|(cell, &k)| k.then_some(cell))
            .collect()
    };
    let mut rows: Vec<Vec<String>> = vec![pick(HEADER.iter().map(|s| s.to_string()).collect())];
    for ((layout, o), cells) in results.iter().zip(measured) {
        let mut row = vec![layout.name().to_owned()];
        match cells {
            Some(cells) => {
                row.extend(cells.into_iter().map(|c| c.unwrap_or_else(|| "-".into())));
                rows.push(pick(row));
                if let Some(note) = &o.note {
                    rows.push(vec![format!("  note: {note}")]);
                }
            }
            None => {
                row.push(o.note.clone().unwrap_or_default());
                row.resize(HEADER.len(), String::new());
                rows.push(pick(row));
            }
        }
    }
    render(&rows)
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
