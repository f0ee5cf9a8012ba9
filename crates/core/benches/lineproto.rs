//! Line-protocol parsing throughput: the ingest hot path.
//!
//! `cpu_10_tags_10_floats` is the TSBS devops "cpu" line (10 tags, 10 float fields, a
//! timestamp) repeated 10,000 times: the shape of the reference dataset. The target is
//! over 100 MB/s. `escaped_mixed_types` measures the slow paths (escaped names, which are
//! copied, and every non-float value type) so a regression there shows too.
//!
//! Run: `cargo bench -p tickertape-core --bench lineproto`. Criterion reports throughput in
//! bytes of body per second.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use tickertape_core::lineproto::parse_body;
use tickertape_core::time::Precision;

const LINES: usize = 10_000;

const CPU: &str = "cpu,hostname=host_0,region=ap-northeast-1,datacenter=ap-northeast-1c,rack=11,os=Ubuntu16.04LTS,arch=x86,team=SF,service=1,service_version=1,service_environment=test usage_user=23.930060193093336,usage_system=0.38486041030339213,usage_idle=43.68172924584467,usage_nice=9.380027024329898,usage_iowait=59.39047275323102,usage_irq=6.784172448854041,usage_softirq=32.08445555341417,usage_steal=44.857675098422504,usage_guest=90.9095396657719,usage_guest_nice=9.553162666460507 1451606400000000000";

const ESCAPED: &str = r#"disk\ io,host=server\ 01,path=C:\\data\,x,mount=/mnt\=a read_bytes=123456789i,write_bytes=987654321u,ok=true,status="all \"good\"",util=0.25 1451606400000000000"#;

/// `line` repeated `LINES` times, newline-terminated, as a `/write` body would carry it.
fn body(line: &str) -> String {
    let mut body = String::with_capacity((line.len() + 1) * LINES);
    for _ in 0..LINES {
        body.push_str(line);
        body.push('\n');
    }
    body
}

/// Parses every line and touches every field, so nothing is optimized away; panics on a
/// refused line, which would make the numbers meaningless.
fn parse_all(body: &str) -> usize {
    let mut fields = 0;
    for (number, result) in parse_body(black_box(body), Precision::Nanoseconds, 0) {
        match result {
            Ok(line) => fields += line.fields.len() + line.tags.len(),
            Err(e) => panic!("line {number}: {e}"),
        }
    }
    fields
}

fn lineproto(c: &mut Criterion) {
    let mut group = c.benchmark_group("lineproto");
    for (name, line) in [
        ("cpu_10_tags_10_floats", CPU),
        ("escaped_mixed_types", ESCAPED),
    ] {
        let body = body(line);
        group.throughput(Throughput::Bytes(body.len() as u64));
        group.bench_function(name, |b| b.iter(|| parse_all(&body)));
    }
    group.finish();
}

criterion_group!(benches, lineproto);
criterion_main!(benches);
