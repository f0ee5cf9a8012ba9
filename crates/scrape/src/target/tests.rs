use super::*;
use crate::config::ScrapeFile;
use std::path::Path;

fn job(yaml: &str) -> ScrapeJob {
    let text = format!(
        "scrape_configs:\n  - job_name: node\n{}",
        yaml.lines()
            .map(|l| format!("    {l}\n"))
            .collect::<String>()
    );
    ScrapeFile::parse(&text, Path::new("/"))
        .unwrap()
        .jobs
        .remove(0)
}

fn active(outcome: &Outcome) -> &Target {
    match outcome {
        Outcome::Active(t) => t,
        other => panic!("not active: {other:?}"),
    }
}

#[test]
fn labels_url_and_instance_as_prometheus() {
    let job = job("scrape_interval: 15s\nstatic_configs:\n  - targets: ['a:9100', 'b']\n    labels: {env: prod}\nparams: {module: [x y]}\n");
    let outcomes = targets(&job, &job.static_configs, &[]);
    let a = active(&outcomes[0]);
    assert_eq!(a.url, "http://a:9100/metrics?module=x+y");
    assert_eq!(a.labels.get("instance"), "a:9100");
    assert_eq!(a.labels.get("job"), "node");
    assert_eq!(a.labels.get(SCRAPE_INTERVAL), "15s");
    assert_eq!(a.discovered.get(ADDRESS), "a:9100");
    assert_eq!(a.discovered.get("__param_module"), "x y");
    let public: Vec<_> = a.public_labels().collect();
    assert_eq!(
        public,
        [("env", "prod"), ("instance", "a:9100"), ("job", "node")]
    );
    // A bare host gets the scheme's port, in the address and the instance.
    let b = active(&outcomes[1]);
    assert_eq!(b.labels.get("instance"), "b:80");
    assert_eq!(b.url, "http://b:80/metrics?module=x+y");
}

#[test]
fn relabeling_drops_and_rewrites_targets() {
    let job = job(r#"static_configs:
  - targets: ['keep:1', 'drop:2']
relabel_configs:
  - {source_labels: [__address__], regex: 'drop:.*', action: drop}
  - {source_labels: [__address__], regex: '(.*):1', target_label: __address__, replacement: '${1}:9999'}
  - {target_label: __param_target, source_labels: [__address__]}
  - {target_label: __metrics_path__, replacement: /probe}
"#);
    let outcomes = targets(&job, &job.static_configs, &[("__meta_filepath", "/t.json")]);
    let kept = active(&outcomes[0]);
    assert_eq!(kept.url, "http://keep:9999/probe?target=keep%3A9999");
    assert!(!kept.labels.has("__meta_filepath"));
    assert_eq!(kept.discovered.get("__meta_filepath"), "/t.json");
    assert!(matches!(&outcomes[1], Outcome::Dropped(l) if l.get(ADDRESS) == "drop:2"));
}

#[test]
fn unusable_targets_say_why() {
    let job = job("static_configs: [{targets: ['a/b']}]\n");
    let outcomes = targets(&job, &job.static_configs, &[]);
    assert!(
        matches!(&outcomes[0], Outcome::Invalid { error, .. } if error.contains("not a valid hostname"))
    );
    let job = job_with_timeout();
    let outcomes = targets(&job, &job.static_configs, &[]);
    assert!(
        matches!(&outcomes[0], Outcome::Invalid { error, .. } if error.contains("greater than scrape interval")),
        "{outcomes:?}"
    );
}

fn job_with_timeout() -> ScrapeJob {
    job("static_configs: [{targets: ['a:1']}]\nrelabel_configs:\n  - {target_label: __scrape_timeout__, replacement: 2m}\n")
}

#[test]
fn sample_labels_honor_or_export() {
    let job = job("static_configs: [{targets: ['a:1'], labels: {env: prod}}]\n");
    let target = active(&targets(&job, &job.static_configs, &[])[0]).clone();
    let exposed: Labels = [
        ("__name__", "m"),
        ("job", "inner"),
        ("exported_job", "x"),
        ("other", "1"),
    ]
    .into_iter()
    .collect();
    let honored = sample_labels(exposed.clone(), &target, true, &[]).unwrap();
    assert_eq!(honored.get("job"), "inner");
    assert_eq!(honored.get("instance"), "a:1");
    let exported = sample_labels(exposed, &target, false, &[]).unwrap();
    assert_eq!(exported.get("job"), "node");
    assert_eq!(exported.get("exported_job"), "x");
    assert_eq!(exported.get("exported_exported_job"), "inner");
    assert_eq!(exported.get("env"), "prod");
    let report = report_labels("up", &target);
    assert_eq!(
        report.iter().collect::<Vec<_>>(),
        [
            ("__name__", "up"),
            ("env", "prod"),
            ("instance", "a:1"),
            ("job", "node")
        ]
    );
}

#[test]
fn offsets_are_stable_and_spread() {
    let job =
        job("scrape_interval: 10s\nstatic_configs: [{targets: ['a:1', 'b:1', 'c:1', 'd:1']}]\n");
    let outcomes = targets(&job, &job.static_configs, &[]);
    let offsets: Vec<Duration> = outcomes.iter().map(|o| active(o).offset(0)).collect();
    let again: Vec<Duration> = outcomes.iter().map(|o| active(o).offset(0)).collect();
    assert_eq!(offsets, again);
    assert!(offsets.iter().all(|d| *d < Duration::from_secs(10)));
    let distinct: std::collections::BTreeSet<_> = offsets.iter().collect();
    assert_eq!(distinct.len(), 4);
    assert_ne!(
        active(&outcomes[0]).offset(0),
        active(&outcomes[0]).offset(offset_seed([("region", "eu")]))
    );
}
