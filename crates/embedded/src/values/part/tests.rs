//! Part files written, read, rewritten and refused.

use super::*;

fn meta() -> PartMeta {
    PartMeta {
        id: 7,
        start: 0,
        end: 1_000,
        max_lsn: 42,
    }
}

/// The blocks of one series of `measurement`, with `rollups`.
pub fn blocks(
    series: u64,
    measurement: u64,
    points: Vec<Point>,
    rollups: &[Resolution],
) -> Result<SeriesBlocks> {
    Ok(SeriesBlocks {
        series: SeriesId(series),
        measurement,
        points,
        rollups: rollups.into(),
        kept: Vec::new(),
    })
}

fn files() -> Arc<OpenFiles> {
    Arc::new(OpenFiles::new(4))
}

#[test]
fn blocks_come_back_and_the_footer_names_the_part() {
    let dir = tempfile::tempdir().unwrap();
    let a: Vec<Point> = (0..5000)
        .map(|t| Point::new(t / 5, t as f64 * 0.1))
        .collect();
    let a: Vec<Point> = a.chunk_by(|x, y| x.time == y.time).map(|c| c[0]).collect();
    let b = vec![Point::new(999, f64::NAN)];
    let written = [blocks(2, 0, a.clone(), &[]), blocks(9, 5, b, &[])];
    let _written = Part::write(dir.path(), &files(), meta(), written).unwrap();
    let reopened = Part::open(&part_path(dir.path(), 7), &files()).unwrap();
    assert_eq!(reopened.meta, meta());
    assert_eq!(reopened.version(), Version::V4);
    assert_eq!(reopened.read(SeriesId(2)).unwrap(), a);
    assert!(reopened.read(SeriesId(9)).unwrap()[0].value.is_nan());
    assert!(reopened.read(SeriesId(3)).unwrap().is_empty());
    assert_eq!(
        reopened
            .entry(SeriesId(9))
            .unwrap()
            .map(|e| (e.min, e.max, e.measurement)),
        Some((999, 999, 5))
    );
    assert!(reopened.holds_of(0, None) && reopened.holds_of(5, None));
    assert!(!reopened.holds_of(1, None));
    assert!(!dir.path().join("00000000000000000007.part.tmp").exists());
}

/// One part holds series of several measurements, each with the rollups of its own;
/// a retention drop of one measurement's raw blocks keeps the rest.
#[test]
fn a_part_holds_many_measurements_each_with_its_rollups() {
    let dir = tempfile::tempdir().unwrap();
    let points: Vec<Point> = (0..100).map(|t| Point::new(t * 9, t as f64)).collect();
    let (r100, r250) = (Resolution::new(100).unwrap(), Resolution::new(250).unwrap());
    let written = [
        blocks(1, 10, points.clone(), &[r100]),
        blocks(2, 11, points.clone(), &[r250]),
        blocks(3, 10, points.clone(), &[r100]),
    ];
    let part = Part::write(dir.path(), &files(), meta(), written).unwrap();
    assert!(part.has_rollup(SeriesId(1), r100) && !part.has_rollup(SeriesId(1), r250));
    assert!(part.has_rollup(SeriesId(2), r250) && !part.has_rollup(SeriesId(2), r100));
    assert!(part.holds_of(10, Some(r100)) && !part.holds_of(10, Some(r250)));
    assert!(part.holds_of(11, Some(r250)) && !part.holds_of(11, Some(r100)));
    for s in 1..=3 {
        assert!(part.may_hold_series(SeriesId(s)));
    }
    assert!(!part.may_hold_series(SeriesId(4)) && !part.may_hold_series(SeriesId(0)));
    let dropped = part
        .rewrite(dir.path(), 8, |e| !(e.measurement == 10 && e.is_raw()))
        .unwrap()
        .unwrap();
    assert!(dropped.read(SeriesId(1)).unwrap().is_empty());
    assert!(dropped.read(SeriesId(3)).unwrap().is_empty());
    assert_eq!(dropped.read(SeriesId(2)).unwrap(), points);
    assert!(dropped.has_rollup(SeriesId(1), r100) && dropped.may_hold_series(SeriesId(3)));
    assert!(!dropped.holds_of(10, None) && dropped.holds_of(11, None));
}

/// A part of version 3 (one measurement, named in the footer) reads as it did, and a
/// rewrite keeps its version.
#[test]
fn a_version_3_part_is_read_and_rewritten_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let points: Vec<Point> = (0..100).map(|t| Point::new(t * 9, t as f64)).collect();
    let r100 = Resolution::new(100).unwrap();
    let written = [
        blocks(4, 6, points.clone(), &[r100]),
        blocks(5, 6, points.clone(), &[r100]),
    ];
    let part = Part::write_v3(dir.path(), &files(), meta(), 6, written).unwrap();
    let bytes = fs::read(part.path()).unwrap();
    assert_eq!(&bytes[..8], b"TTPART03");
    let reopened = Part::open(part.path(), &files()).unwrap();
    assert_eq!(reopened.version(), Version::V3);
    assert_eq!(reopened.read(SeriesId(5)).unwrap(), points);
    assert_eq!(reopened.entry(SeriesId(4)).unwrap().unwrap().measurement, 6);
    assert!(reopened.holds_of(6, Some(r100)) && !reopened.holds_of(0, None));
    let stripped = reopened
        .rewrite(dir.path(), 9, |e| !e.is_raw())
        .unwrap()
        .unwrap();
    assert_eq!(stripped.version(), Version::V3);
    assert_eq!(
        stripped
            .read_rollup(SeriesId(5), r100)
            .unwrap()
            .unwrap()
            .len(),
        summarize_slots(&points, 0, 1_000, r100).len()
    );
    assert!(Part::open(stripped.path(), &files())
        .unwrap()
        .holds_of(6, Some(r100)));
}

#[test]
fn rollup_blocks_sit_beside_raw_blocks_and_outlive_them_in_a_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let points: Vec<Point> = (0..100)
        .map(|t| Point::new(t * 9, t as f64 * 0.3))
        .collect();
    let rollups = [Resolution::new(100).unwrap(), Resolution::new(250).unwrap()];
    let part = Part::write(
        dir.path(),
        &files(),
        meta(),
        [blocks(4, 0, points.clone(), &rollups)],
    )
    .unwrap();
    let bits = |v: Vec<(i64, Summary)>| -> Vec<(i64, [u64; 8])> {
        v.into_iter().map(|(t, s)| (t, s.to_bits())).collect()
    };
    for r in rollups {
        let want = summarize_slots(&points, 0, 1_000, r);
        let got = part.read_rollup(SeriesId(4), r).unwrap().unwrap();
        assert_eq!(bits(got), bits(want), "{r}");
    }
    assert!(part
        .read_rollup(SeriesId(4), Resolution::new(50).unwrap())
        .unwrap()
        .is_none());
    // Without its raw block, the part keeps the rollups, copied as they were.
    let stripped = part
        .rewrite(dir.path(), 8, |e| !e.is_raw())
        .unwrap()
        .unwrap();
    assert!(stripped.read(SeriesId(4)).unwrap().is_empty());
    assert!(!stripped.holds(None));
    assert_eq!(stripped.series().unwrap(), vec![SeriesId(4)]);
    let reopened = Part::open(&part_path(dir.path(), 8), &files()).unwrap();
    assert_eq!(
        bits(
            reopened
                .read_rollup(SeriesId(4), rollups[1])
                .unwrap()
                .unwrap()
        ),
        bits(summarize_slots(&points, 0, 1_000, rollups[1]))
    );
    // Nothing kept: no part.
    assert!(part.rewrite(dir.path(), 9, |_| false).unwrap().is_none());
}

/// A retired part's file goes when its last holder lets go, not before.
#[test]
fn a_retired_part_is_deleted_by_its_last_holder() {
    let dir = tempfile::tempdir().unwrap();
    let files = Arc::new(OpenFiles::new(1));
    let part = Arc::new(
        Part::write(
            dir.path(),
            &files,
            meta(),
            [blocks(1, 0, vec![Point::new(1, 1.0)], &[])],
        )
        .unwrap(),
    );
    let path = part.path().to_path_buf();
    let reader = part.clone();
    part.retire();
    drop(part);
    // Another part takes the one open file: the reader opens its own again.
    let other = PartMeta { id: 8, ..meta() };
    let _other = Part::write(
        dir.path(),
        &files,
        other,
        [blocks(1, 0, vec![Point::new(2, 1.0)], &[])],
    )
    .unwrap();
    assert_eq!(reader.read(SeriesId(1)).unwrap(), vec![Point::new(1, 1.0)]);
    assert!(path.exists());
    drop(reader);
    assert!(!path.exists());
}

#[test]
fn a_damaged_part_is_refused_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let written = [blocks(
        1,
        0,
        vec![Point::new(1, 1.0), Point::new(2, 2.0)],
        &[],
    )];
    let part = Part::write(dir.path(), &files(), meta(), written).unwrap();
    let path = part.path().to_path_buf();
    let full = fs::read(&path).unwrap();
    // Cut short: no footer.
    fs::write(&path, &full[..full.len() - 1]).unwrap();
    let err = Part::open(&path, &files()).err().unwrap().to_string();
    assert!(err.contains("00000000000000000007.part"), "{err}");
    // A flipped block byte: the part opens, the block read says where.
    let mut flipped = full.clone();
    flipped[MAGIC.len() + 1] ^= 0x40;
    fs::write(&path, &flipped).unwrap();
    let err = Part::open(&path, &files())
        .unwrap()
        .read(SeriesId(1))
        .err()
        .unwrap();
    assert!(err.to_string().contains("checksum"), "{err}");
}
