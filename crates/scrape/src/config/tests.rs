use super::*;

fn parse(text: &str) -> Result<ScrapeFile, ConfigError> {
    ScrapeFile::parse(text, Path::new("/etc/prometheus"))
}

#[test]
fn a_full_job_with_global_defaults() {
    let file = parse(
        r#"
global:
  scrape_interval: 15s
  external_labels: {region: eu}
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['localhost:9100']
        labels: {env: prod}
    file_sd_configs:
      - files: ['targets/*.json']
        refresh_interval: 1m
    relabel_configs:
      - source_labels: [__address__]
        target_label: host
    metric_relabel_configs:
      - source_labels: [__name__]
        regex: go_.*
        action: drop
    honor_labels: true
    honor_timestamps: false
    metrics_path: /probe
    params: {module: [http_2xx]}
    scheme: https
    basic_auth: {username: u, password_file: secret}
    tls_config: {ca_file: ca.pem, cert_file: c.pem, key_file: k.pem, server_name: example, insecure_skip_verify: true}
    sample_limit: 1000
    label_limit: 30
    label_name_length_limit: 100
    label_value_length_limit: 200
    body_size_limit: 10MB
    database: infra
  - job_name: other
    scrape_interval: 5s
"#,
    )
    .unwrap();
    assert_eq!(file.global.scrape_interval, Duration::from_secs(15));
    assert_eq!(file.global.external_labels["region"], "eu");
    let node = &file.jobs[0];
    assert_eq!(node.interval, Duration::from_secs(15));
    assert_eq!(node.timeout, Duration::from_secs(10));
    assert_eq!(node.scheme, Scheme::Https);
    assert!(node.honor_labels && !node.honor_timestamps);
    assert_eq!(
        node.file_sd_configs[0].files,
        [PathBuf::from("/etc/prometheus/targets/*.json")]
    );
    assert_eq!(
        node.file_sd_configs[0].refresh_interval,
        Duration::from_secs(60)
    );
    assert_eq!(node.relabel_configs.len(), 1);
    assert_eq!(node.metric_relabel_configs.len(), 1);
    assert_eq!(
        node.credentials,
        Some(Credentials::Basic {
            username: "u".into(),
            password: Some(Secret::File("/etc/prometheus/secret".into()))
        })
    );
    assert_eq!(
        node.tls.ca_file.as_deref(),
        Some(Path::new("/etc/prometheus/ca.pem"))
    );
    assert_eq!(node.limits.body_size_limit, 10 << 20);
    assert_eq!(node.limits.sample_limit, 1000);
    assert_eq!(node.database.as_deref(), Some("infra"));
    let other = &file.jobs[1];
    // The global timeout (10s) is cut to a shorter interval.
    assert_eq!(
        (other.interval, other.timeout),
        (Duration::from_secs(5), Duration::from_secs(5))
    );
    assert_eq!(other.metrics_path, "/metrics");
    assert!(other.honor_timestamps);
}

#[test]
fn prometheus_defaults_without_global() {
    let file = parse("scrape_configs:\n  - job_name: a\n").unwrap();
    assert_eq!(file.jobs[0].interval, DEFAULT_SCRAPE_INTERVAL);
    assert_eq!(file.jobs[0].timeout, DEFAULT_SCRAPE_TIMEOUT);
    assert!(parse("").unwrap().jobs.is_empty());
}

#[test]
fn unknown_keys_are_refused_by_name_with_their_job() {
    let cases = [
        ("scrape_configs:\n  - job_name: node\n    scrape_intervall: 5s\n", "job \"node\"", "scrape_intervall"),
        ("scrape_configs:\n  - job_name: node\n    static_configs:\n      - targets: [a]\n        label: {}\n", "job \"node\"", "label"),
        ("scrape_configs:\n  - job_name: node\n    kubernetes_sd_configs: []\n", "job \"node\"", "kubernetes_sd_configs"),
        ("scrape_configs:\n  - job_name: node\n    tls_config: {min_version: TLS12}\n", "job \"node\"", "min_version"),
        ("scrape_configs:\n  - static_configs: []\n", "scrape_configs[0]", "job_name"),
        ("rule_files: [a.yml]\n", "scrape config", "rule_files"),
        ("global: {query_log_file: x}\n", "scrape config", "query_log_file"),
    ];
    for (text, who, key) in cases {
        let e = parse(text).expect_err(text).to_string();
        assert!(e.contains(who), "{text}: {e}");
        assert!(e.contains(key), "{text}: {e}");
    }
}

#[test]
fn checks_as_prometheus() {
    let cases = [
        (
            "- job_name: a\n  scrape_interval: 5s\n  scrape_timeout: 10s\n",
            "greater than scrape_interval",
        ),
        ("- job_name: a\n- job_name: a\n", "multiple scrape configs"),
        ("- job_name: a\n  scheme: ftp\n", "\"ftp\""),
        (
            "- job_name: a\n  basic_auth: {username: u}\n  authorization: {credentials: t}\n",
            "at most one",
        ),
        (
            "- job_name: a\n  basic_auth: {username: u, password: p, password_file: f}\n",
            "mutually exclusive",
        ),
        (
            "- job_name: a\n  body_size_limit: 10 MB\n",
            "body_size_limit",
        ),
        (
            "- job_name: a\n  relabel_configs: [{action: hashmod, target_label: x}]\n",
            "relabel_configs[0]",
        ),
        (
            "- job_name: a\n  file_sd_configs: [{files: [targets.txt]}]\n",
            ".json, .yml or .yaml",
        ),
        (
            "- job_name: a\n  static_configs: [{targets: [x], labels: {'a-b': c}}]\n",
            "\"a-b\"",
        ),
        (
            "- job_name: a\n  scrape_interval: 5x\n",
            "not a valid duration",
        ),
        ("- job_name: ''\n", "job_name is empty"),
    ];
    for (jobs, expected) in cases {
        let text = format!(
            "scrape_configs:\n{}",
            jobs.lines().map(|l| format!("  {l}\n")).collect::<String>()
        );
        let e = parse(&text).expect_err(jobs).to_string();
        assert!(e.contains(expected), "{jobs}: {e}");
    }
}

#[test]
fn authorization_defaults_to_bearer() {
    let file =
        parse("scrape_configs:\n  - job_name: a\n    authorization: {credentials: tok}\n").unwrap();
    assert_eq!(
        file.jobs[0].credentials,
        Some(Credentials::Authorization {
            kind: "Bearer".into(),
            credentials: Secret::Inline("tok".into())
        })
    );
}
