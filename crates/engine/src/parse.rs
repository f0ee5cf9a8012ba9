//! Parsing a write's body: every line parsed and its fields converted to f64, with its
//! line number; long bodies on several threads at once. String values are skipped or
//! refuse their line here, as the engine's [`StringFields`] says.

use crate::string_fields::{Skipped, StringFields};
use rayon::prelude::*;
use tickertape_core::lineproto::{self, FieldValue, Line};
use tickertape_core::time::Precision;

/// Integers beyond ±2^53 have no exact f64; storing them would silently change them.
const MAX_EXACT_INTEGER: u64 = 1 << 53;

/// A parsed line whose fields all convert to f64, but for string values skipped.
pub(crate) struct Parsed<'a> {
    pub(crate) number: usize,
    pub(crate) line: Line<'a>,
    /// One per field of `line`, in order: its value, or `None` for a string value skipped.
    pub(crate) values: Vec<Option<f64>>,
}

impl<'a> Parsed<'a> {
    /// The fields to store: key and value.
    pub(crate) fn stored(&self) -> impl Iterator<Item = (&str, f64)> + '_ {
        self.line
            .fields
            .iter()
            .zip(&self.values)
            .filter_map(|((key, _), value)| Some((key.as_ref(), (*value)?)))
    }

    /// The string values skipped.
    pub(crate) fn skipped(&self) -> impl Iterator<Item = Skipped<'_>> + '_ {
        self.line
            .fields
            .iter()
            .zip(&self.values)
            .filter(|(_, value)| value.is_none())
            .map(|((key, _), _)| Skipped {
                line: self.number,
                series_text: self.line.series_text,
                field: key.as_ref(),
            })
    }
}

/// Bodies at least this long are parsed on several threads (a 5,000-line body of the
/// devops data is ~2.4 MB; parsing is most of a write's CPU time, measured with perf).
const PARALLEL_PARSE_BYTES: usize = 256 * 1024;

/// Every line of `body` parsed and converted, with its 1-based number, in line order.
/// A long body is cut at line ends into one piece per core, parsed side by side.
/// Lines longer than `max_line_bytes` are refused unscanned; string values are skipped or
/// refuse their line as `strings` says.
pub(crate) fn parse_lines<'a>(
    body: &'a str,
    precision: Precision,
    now: i64,
    max_line_bytes: usize,
    strings: StringFields,
) -> Vec<(usize, Result<Parsed<'a>, String>)> {
    let parse = |piece: &'a str, first_number: usize| {
        lineproto::parse_body_within(piece, precision, now, max_line_bytes)
            .map(|(number, result)| {
                let number = number + first_number - 1;
                let result = result.map_err(|e| e.to_string()).and_then(|line| {
                    Ok(Parsed {
                        number,
                        values: numeric_values(&line, strings)?,
                        line,
                    })
                });
                (number, result)
            })
            .collect::<Vec<_>>()
    };
    let threads = parse_threads();
    if body.len() < PARALLEL_PARSE_BYTES || threads < 2 {
        return parse(body, 1);
    }
    // Rayon's pool of long-lived threads, not threads spawned per body.
    split_at_lines(body, threads)
        .into_par_iter()
        .map(|(piece, first)| parse(piece, first))
        .collect::<Vec<_>>()
        .into_iter()
        .flatten()
        .collect()
}

/// Pieces a long body is cut into: the cores, at most 4. Asked once per process, since
/// `available_parallelism` reads cgroup files on Linux and a write must not pay for that.
fn parse_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get().min(4)))
}

/// `body` cut into at most `n` pieces at line ends, each with the number of its first
/// line: numbering each piece from there gives every line its number in the body.
fn split_at_lines(body: &str, n: usize) -> Vec<(&str, usize)> {
    let mut pieces = Vec::with_capacity(n);
    let mut rest = body;
    let mut first = 1;
    let target = body.len().div_ceil(n);
    while !rest.is_empty() {
        // A cut right after a '\n' (ASCII) is always a char boundary.
        let newline = rest
            .as_bytes()
            .get(target..)
            .and_then(|after| after.iter().position(|&b| b == b'\n'));
        let cut = match newline {
            Some(i) if pieces.len() + 1 < n => target + i + 1,
            _ => rest.len(),
        };
        let (piece, tail) = rest.split_at(cut);
        pieces.push((piece, first));
        first += piece.bytes().filter(|&b| b == b'\n').count();
        rest = tail;
    }
    pieces
}

/// Every field of a line as an f64 (`None`: a string value skipped), or why the line
/// cannot be stored exactly.
fn numeric_values(line: &Line<'_>, strings: StringFields) -> Result<Vec<Option<f64>>, String> {
    line.fields
        .iter()
        .map(|(name, value)| match value {
            FieldValue::Float(f) => Ok(Some(*f)),
            FieldValue::Integer(i) if i.unsigned_abs() <= MAX_EXACT_INTEGER => Ok(Some(*i as f64)),
            FieldValue::Unsigned(u) if *u <= MAX_EXACT_INTEGER => Ok(Some(*u as f64)),
            FieldValue::Integer(i) => Err(format!(
                "field {name:?}: integer {i} has no exact float64, and tickertape stores float64 values"
            )),
            FieldValue::Unsigned(u) => Err(format!(
                "field {name:?}: integer {u} has no exact float64, and tickertape stores float64 values"
            )),
            FieldValue::Boolean(b) => Ok(Some(f64::from(u8::from(*b)))),
            FieldValue::String(_) => match strings {
                StringFields::Skip => Ok(None),
                StringFields::Refuse => Err(format!(
                    "field {name:?} is a string; tickertape stores numbers and booleans only \
                     (--string-fields=refuse)"
                )),
            },
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_cut_at_line_ends_and_number_every_line() {
        let body = "a v=1 1\n\nbé v=2 2\nc v=3 3\nd v=4 4";
        for n in 1..6 {
            let pieces = split_at_lines(body, n);
            assert!(pieces.len() <= n);
            let joined: String = pieces.iter().map(|(p, _)| *p).collect();
            assert_eq!(joined, body);
            let mut offset = 0;
            for (piece, first) in &pieces {
                assert_eq!(
                    *first,
                    body[..offset].matches('\n').count() + 1,
                    "{n}: {piece:?}"
                );
                offset += piece.len();
            }
        }
    }

    fn converted(text: &str, strings: StringFields) -> Result<Vec<(String, f64)>, String> {
        let parsed = parse_lines(text, Precision::Nanoseconds, 0, usize::MAX, strings);
        let (_, result) = parsed.into_iter().next().expect("one line");
        let parsed = result?;
        Ok(parsed.stored().map(|(k, v)| (k.to_string(), v)).collect())
    }

    #[test]
    fn string_values_are_skipped_or_refuse_the_line() {
        let line = r#"system,host=h1 load1=0.5,uptime_format="1 day, 2:03",n_cpus=2i,ok=t 1"#;
        let stored = vec![
            ("load1".to_string(), 0.5),
            ("n_cpus".to_string(), 2.0),
            ("ok".to_string(), 1.0),
        ];
        assert_eq!(converted(line, StringFields::Skip), Ok(stored));
        let parsed = parse_lines(
            line,
            Precision::Nanoseconds,
            0,
            usize::MAX,
            StringFields::Skip,
        );
        let skipped: Vec<_> = parsed[0]
            .1
            .as_ref()
            .unwrap()
            .skipped()
            .map(|s| (s.line, s.series_text, s.field))
            .collect();
        assert_eq!(skipped, [(1, "system,host=h1", "uptime_format")]);
        let refused = converted(line, StringFields::Refuse).unwrap_err();
        assert!(
            refused.contains("field \"uptime_format\" is a string")
                && refused.contains("--string-fields"),
            "{refused}"
        );
        // Only strings: nothing to store, and no error.
        assert_eq!(
            converted(r#"m a="x",b="y""#, StringFields::Skip),
            Ok(Vec::new())
        );
        // A key given twice keeps its last value, string or not.
        assert_eq!(
            converted(r#"m a="x",a=2"#, StringFields::Refuse),
            Ok(vec![("a".into(), 2.0)])
        );
        assert_eq!(
            converted(r#"m a=2,a="x",b=1"#, StringFields::Skip),
            Ok(vec![("b".into(), 1.0)])
        );
        // An integer past 2^53 refuses its line whatever the strings do.
        assert!(converted(r#"m s="x",i=9007199254740993i"#, StringFields::Skip).is_err());
    }

    #[test]
    fn a_long_body_parses_as_one_piece_would() {
        let body: String = (0..40_000)
            .map(|i| match i % 997 {
                0 => "broken line\n".to_string(),
                1 => "\n".to_string(),
                2 => format!("sys,host=h1 s=\"up {i}\",v={i} {i}\n"),
                _ => format!("cpu,host=h{} v={i}.5,w={} {i}\n", i % 7, i * 3),
            })
            .collect();
        assert!(body.len() >= PARALLEL_PARSE_BYTES);
        let summary =
            |lines: Vec<(usize, Result<Parsed<'_>, String>)>| -> Vec<(usize, Option<Vec<u64>>)> {
                lines
                    .into_iter()
                    .map(|(n, r)| {
                        (
                            n,
                            r.ok()
                                .map(|p| p.stored().map(|(_, v)| v.to_bits()).collect()),
                        )
                    })
                    .collect()
            };
        let sequential: Vec<_> = lineproto::parse_body(&body, Precision::Nanoseconds, 0)
            .map(|(n, r)| {
                (
                    n,
                    r.map_err(|e| e.to_string()).and_then(|line| {
                        Ok(Parsed {
                            number: n,
                            values: numeric_values(&line, StringFields::Skip)?,
                            line,
                        })
                    }),
                )
            })
            .collect();
        let parallel = parse_lines(
            &body,
            Precision::Nanoseconds,
            0,
            usize::MAX,
            StringFields::Skip,
        );
        assert_eq!(summary(parallel), summary(sequential));
    }
}
