"""Observability: health and readiness endpoints, Prometheus metrics, the log stream.

- ``metrics``: ``Metrics``, one app's registry and the counters, histograms and gauges in it;
- ``blob_metrics``: ``InstrumentedBlobStore``, the blob store decorator that feeds it;
- ``readiness``: ``Readiness``, the shared, rate-limited database and blob store probes;
- ``endpoints``: the ``/healthz``, ``/readyz`` and ``/metrics`` routes;
- ``logs``: ``configure_logging``, text or JSON lines, libraries held at WARNING.

``make_app`` wires them; this package registers nothing at import.
"""
