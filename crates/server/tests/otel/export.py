"""Records a gauge, a counter and a histogram with the OpenTelemetry Python SDK and exports
them with its OTLP/HTTP exporter (protobuf, gzip) to the endpoint given as the first
argument. Run by crates/server/tests/otlp_sdk.rs, which then asks PromQL for them.

Prints, as one JSON object, what the SDK recorded (read from its own metrics data, not from
what this script meant to record) and what the export answered; exits non-zero when the
export did not succeed.
"""

import json
import sys

from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader, MetricExportResult
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource


def main(endpoint):
    # Cumulative temporality for every instrument: the SDK's default, and Prometheus'.
    reader = InMemoryMetricReader()
    provider = MeterProvider(
        resource=Resource.create(
            {"service.name": "checkout", "service.namespace": "shop", "service.instance.id": "i-1"}
        ),
        metric_readers=[reader],
        views=[
            View(
                instrument_name="request.duration",
                aggregation=ExplicitBucketHistogramAggregation([0.1, 0.5, 1.0]),
            )
        ],
    )
    meter = provider.get_meter("tickertape.test")
    temperature = meter.create_gauge("room.temperature", unit="Cel")
    temperature.set(21.5, {"room": "kitchen"})
    temperature.set(18.25, {"room": "cellar"})
    requests = meter.create_counter("http.requests", unit="{request}")
    requests.add(3, {"method": "GET"})
    requests.add(4, {"method": "GET"})
    requests.add(1, {"method": "POST"})
    duration = meter.create_histogram("request.duration", unit="s")
    for seconds in [0.05, 0.2, 0.3, 0.7, 2.0]:
        duration.record(seconds, {"route": "/cart"})

    data = reader.get_metrics_data()
    exporter = OTLPMetricExporter(endpoint=endpoint, timeout=20, compression=Compression.Gzip)
    result = exporter.export(data)
    exporter.shutdown()

    recorded = []
    for resource_metrics in data.resource_metrics:
        for scope_metrics in resource_metrics.scope_metrics:
            for metric in scope_metrics.metrics:
                for point in metric.data.data_points:
                    entry = {
                        "name": metric.name,
                        "attributes": dict(point.attributes),
                        "time_unix_nano": point.time_unix_nano,
                    }
                    if hasattr(point, "bucket_counts"):
                        entry.update(
                            count=point.count,
                            sum=point.sum,
                            bounds=list(point.explicit_bounds),
                            bucket_counts=list(point.bucket_counts),
                        )
                    else:
                        entry["value"] = point.value
                    recorded.append(entry)
    print(json.dumps({"result": result.name, "recorded": recorded}))
    return 0 if result == MetricExportResult.SUCCESS else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
