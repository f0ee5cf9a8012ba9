//! A store written by the previous format (9: one part per measurement and day, version 3
//! parts) opens as it is: its parts are read unchanged, and the next compaction merges
//! each day's parts into one part of every measurement (version 4). The fixture was made
//! by that binary (`fixtures/format9/README.md`).

use std::io::Read;
use std::path::Path;
use tickertape_backend::{Backend, SeriesCatalog, ValueStore};
use tickertape_core::segment::collect_points;
use tickertape_core::{Point, SeriesKey};
use tickertape_embedded::{EmbeddedBackend, EmbeddedOptions};

const START: i64 = 1_699_920_000_000_000_000;
const MEASUREMENTS: [&str; 3] = ["cpu", "mem", "disk"];
const HOSTS: [&str; 2] = ["a", "b"];

/// A copy of the fixture in `dir`, the redb file unzipped.
fn copy_fixture(dir: &Path) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format9");
    let gz = std::fs::File::open(from.join("tickertape.redb.gz")).unwrap();
    let mut redb = Vec::new();
    flate2::read::GzDecoder::new(gz)
        .read_to_end(&mut redb)
        .unwrap();
    std::fs::write(dir.join("tickertape.redb"), redb).unwrap();
    std::fs::create_dir_all(dir.join("parts")).unwrap();
    for entry in std::fs::read_dir(from.join("parts")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join("parts").join(entry.file_name())).unwrap();
    }
}

fn parts(dir: &Path) -> Vec<Vec<u8>> {
    let mut magics = Vec::new();
    for entry in std::fs::read_dir(dir.join("parts")).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        magics.push(bytes[..8].to_vec());
    }
    magics
}

/// Every series' points as the fixture's binary was given them.
async fn check_points(b: &EmbeddedBackend, when: &str) {
    for m in MEASUREMENTS {
        for (h, host) in HOSTS.iter().enumerate() {
            let key = SeriesKey::new(m, vec![("host".into(), host.to_string())], "v");
            let id = b.lookup_series(&[key]).await.unwrap()[0]
                .unwrap_or_else(|| panic!("{m} {host} registered ({when})"));
            let segments = b.read_segments(id, i64::MIN, i64::MAX).await.unwrap();
            let got = collect_points(&segments).unwrap();
            let want: Vec<Point> = (0..432)
                .map(|i| Point::new(START + i * 600_000_000_000, i as f64 * 1.5 + h as f64))
                .collect();
            assert_eq!(got, want, "{m} {host} ({when})");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_format_9_store_opens_and_compaction_shares_its_parts() {
    let dir = tempfile::tempdir().unwrap();
    copy_fixture(dir.path());
    assert_eq!(parts(dir.path()), vec![b"TTPART03".to_vec(); 9]);
    let open = || {
        let mut options = EmbeddedOptions::new(dir.path());
        options.open_parts = 2;
        EmbeddedBackend::open(options).expect("a format 9 store opens")
    };
    let b = open();
    check_points(&b, "as written").await;
    assert_eq!(parts(dir.path()).len(), 9, "read as they are");
    b.compact().await.unwrap();
    // One part per day; the fixture's first two days end a week (days since the epoch
    // 19675 and 19676; weeks of days count from the epoch), which is over once the third
    // day is written, so their parts are packed into one file.
    let mut magics = parts(dir.path());
    magics.sort();
    assert_eq!(
        magics,
        vec![b"TTPACK01".to_vec(), b"TTPART04".to_vec()],
        "a pack of two days and the third day's part"
    );
    check_points(&b, "after compaction").await;
    let stats = b.stats().await.unwrap();
    assert_eq!(stats.series, 6);
    drop(b);
    let b = open();
    check_points(&b, "after reopen").await;
}
