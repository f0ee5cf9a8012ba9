//! The cardinality view: `/api/v1/status/cardinality` and Prometheus'
//! `/prometheus/api/v1/status/tsdb` count what was written, largest first, cut at `limit`.

mod support;

use serde_json::json;
use support::TestServer;

/// 3 hosts × 2 fields of `cpu` (tag `dc=x` on each) and 1 series of `mem`: 7 series.
async fn server_with_data() -> TestServer {
    let server = TestServer::start().await;
    let mut body = String::new();
    for host in ["a", "b", "c"] {
        body.push_str(&format!("cpu,host={host},dc=x user=1,idle=2 1\n"));
    }
    body.push_str("mem,host=a used=3 1\n");
    let response = server
        .client
        .post(format!("{}/write", server.url))
        .body(body)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 204);
    server
}

#[tokio::test]
async fn the_own_view_counts_series_by_measurement_field_and_tag() {
    let server = server_with_data().await;
    let (status, answer) = server
        .get("/api/v1/status/cardinality", &[("limit", "2")])
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        answer,
        json!({
            "database": "tickertape", "series": 7, "series_in_all_databases": 7,
            "series_by_database": [{"name": "tickertape", "series": 7}],
            "measurements": 2, "fields": 3, "tag_pairs": 4,
            "series_by_measurement": [{"name": "cpu", "series": 6}, {"name": "mem", "series": 1}],
            "series_by_field": [
                {"measurement": "cpu", "field": "idle", "series": 3},
                {"measurement": "cpu", "field": "user", "series": 3}],
            "values_by_tag_key": [{"name": "host", "values": 3}, {"name": "dc", "values": 1}],
            "series_by_tag": [
                {"key": "dc", "value": "x", "series": 6},
                {"key": "host", "value": "a", "series": 3}],
        })
    );
    for bad in ["0", "x", "10001"] {
        let (status, answer) = server
            .get("/api/v1/status/cardinality", &[("limit", bad)])
            .await;
        assert_eq!(status, 400, "limit {bad}: {answer}");
        assert!(answer["error"].as_str().unwrap().contains("limit"));
    }
    server.stop().await;
}

#[tokio::test]
async fn prometheus_view_has_prometheus_shape_with_the_name_as_a_label() {
    let server = server_with_data().await;
    let (status, answer) = server
        .get("/prometheus/api/v1/status/tsdb", &[("limit", "3")])
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["status"], "success");
    let data = &answer["data"];
    assert_eq!(
        data["headStats"],
        json!({"numSeries": 7, "numLabelPairs": 7})
    );
    assert_eq!(
        data["seriesCountByMetricName"],
        json!([
            {"name": "cpu_idle", "value": 3},
            {"name": "cpu_user", "value": 3},
            {"name": "mem_used", "value": 1}])
    );
    assert_eq!(
        data["labelValueCountByLabelName"],
        json!([
            {"name": "__name__", "value": 3},
            {"name": "host", "value": 3},
            {"name": "dc", "value": 1}])
    );
    assert_eq!(
        data["seriesCountByLabelValuePair"],
        json!([
            {"name": "dc=x", "value": 6},
            {"name": "__name__=cpu_idle", "value": 3},
            {"name": "__name__=cpu_user", "value": 3}])
    );
    let (status, answer) = server
        .get("/prometheus/api/v1/status/tsdb", &[("limit", "-1")])
        .await;
    assert_eq!(status, 400);
    assert_eq!(answer["errorType"], "bad_data", "{answer}");
    server.stop().await;
}
