"""``Metrics``: the Prometheus metrics of one oxidav app, in a registry of its own.

``make_app`` builds one ``Metrics`` and hands it to the layers that count: the access log
(requests, latency, bytes, requests and uploads in progress), the blob store decorator
(``InstrumentedBlobStore``: operations and errors) and, once the server exists, the
connection gauges (``watch_server``). Nothing is registered in prometheus_client's global
registry, so two apps in one process (tests) keep separate counts. Under a supervisor's workers the
counts of all of them are summed when scraped (``oxidav.observability.shared``).

Invariants: every label value comes from a small fixed set — the method from
``KNOWN_METHODS`` (anything else is ``other``), the status is the three-digit code of the
answer (``none`` when none started), the blob operation one of the ``BlobStore`` methods. No
path, user name, token or other request text becomes a label. Gauges that describe the server
or the database pool are read when scraped, so requests pay nothing for them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Gauge,
    Histogram,
    ProcessCollector,
    generate_latest,
)
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from oxidav.observability.shared import shared_dir

if TYPE_CHECKING:
    from sqlalchemy import Engine

#: Methods counted under their own name; any other is counted as ``other``.
KNOWN_METHODS = frozenset(
    {
        "GET",
        "HEAD",
        "PUT",
        "POST",
        "DELETE",
        "OPTIONS",
        "PATCH",
        "PROPFIND",
        "PROPPATCH",
        "MKCOL",
        "MKCALENDAR",
        "COPY",
        "MOVE",
        "LOCK",
        "UNLOCK",
        "REPORT",
        "SEARCH",
        "ACL",
    }
)
#: Requests that carry content to store: counted in ``oxidav_uploads_in_progress``.
UPLOAD_METHODS = frozenset({"PUT", "POST"})
#: Latency buckets in seconds: small DAV answers to long uploads and downloads.
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


def method_label(method: str) -> str:
    return method if method in KNOWN_METHODS else "other"


class _ScrapedGauges(Collector):
    """Gauges read from live objects at scrape time: the server's connections and workers
    (once ``watch_server`` was called) and the database pool."""

    def __init__(self) -> None:
        self.server: Any = None
        self.engine: Engine | None = None

    def collect(self) -> Iterator[GaugeMetricFamily]:
        server = self.server
        if server is not None:
            connections, busy, idle = _server_counts(server)
            yield GaugeMetricFamily(
                "oxidav_http_open_connections",
                "Client connections the server holds (waiting, queued or being served).",
                value=connections,
            )
            workers = GaugeMetricFamily(
                "oxidav_http_worker_threads", "Worker threads by state.", labels=["state"]
            )
            workers.add_metric(["busy"], busy)
            workers.add_metric(["idle"], idle)
            yield workers
        engine = self.engine
        if engine is not None:
            yield from _pool_gauges(engine)


def _server_counts(server: Any) -> tuple[int, int, int]:
    """(open connections, busy workers, idle workers) of a cheroot server, read without
    locks (a scrape may see a connection move between two places: the numbers are gauges)."""
    try:
        threads = list(server.requests._threads)
        busy = sum(1 for thread in threads if getattr(thread, "conn", None) is not None)
        queued = int(server.requests.qsize)
        # The manager's selector holds the listening socket and every connection not in a
        # worker: idle keep-alive ones, those still sending a head, those lingering.
        selected = max(0, len(server._connections._selector) - 1)
        return selected + queued + busy, busy, len(threads) - busy
    except (AttributeError, TypeError, RuntimeError):
        return 0, 0, 0  # not started yet, or stopping


def _pool_gauges(engine: Engine) -> Iterator[GaugeMetricFamily]:
    pool: Any = engine.pool
    size = getattr(pool, "size", None)
    checked_out = getattr(pool, "checkedout", None)
    if not callable(size) or not callable(checked_out):
        return  # a pool without counts (NullPool)
    yield GaugeMetricFamily(
        "oxidav_db_pool_size", "Connections the database pool keeps.", value=size()
    )
    yield GaugeMetricFamily(
        "oxidav_db_pool_checked_out",
        "Pooled database connections lent out now.",
        value=checked_out(),
    )
    overflow = getattr(pool, "overflow", None)
    if callable(overflow):
        yield GaugeMetricFamily(
            "oxidav_db_pool_overflow",
            "Connections open beyond the pool size (negative: the pool is not full yet).",
            value=overflow(),
        )


class Metrics:
    """The metrics of one app and the registry that exposes them."""

    def __init__(self) -> None:
        registry = self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            "oxidav_http_requests",
            "HTTP requests answered, by method and status code.",
            ["method", "status"],
            registry=registry,
        )
        self.latency = Histogram(
            "oxidav_http_request_duration_seconds",
            "Time from the request to the answer's last byte, by method.",
            ["method"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self.bytes_in = Counter(
            "oxidav_http_request_body_bytes",
            "Request body bytes read, by method.",
            ["method"],
            registry=registry,
        )
        self.bytes_out = Counter(
            "oxidav_http_response_body_bytes",
            "Response body bytes sent, by method.",
            ["method"],
            registry=registry,
        )
        self.in_progress = Gauge(
            "oxidav_http_requests_in_progress",
            "Requests being served now.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.uploads = Gauge(
            "oxidav_uploads_in_progress",
            "PUT and POST requests (uploads, upload chunks, bulk uploads) being served now.",
            registry=registry,
            multiprocess_mode="livesum",
        )
        self.blob_ops = Counter(
            "oxidav_blob_store_operations",
            "Blob store calls, by operation.",
            ["op"],
            registry=registry,
        )
        self.blob_errors = Counter(
            "oxidav_blob_store_errors",
            "Blob store calls that raised (a missing key included), by operation.",
            ["op"],
            registry=registry,
        )
        self.blob_latency = Histogram(
            "oxidav_blob_store_operation_duration_seconds",
            "Time of blob store calls, by operation (a ranged read: until its iterator is made).",
            ["op"],
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )
        self._scraped = _ScrapedGauges()
        registry.register(self._scraped)
        ProcessCollector(registry=registry)
        self._by_method: dict[str, _MethodMetrics] = {}
        self._exposed = registry
        path = shared_dir()
        if path is not None:  # one of several workers: expose the sum of them all
            self._exposed = CollectorRegistry(auto_describe=False)
            MultiProcessCollector(self._exposed, path=path)  # type: ignore[no-untyped-call]
            self._exposed.register(self._scraped)
            ProcessCollector(registry=self._exposed)

    def watch_server(self, server: Any) -> None:
        """Report the connections and workers of this cheroot ``server``."""
        self._scraped.server = server

    def watch_pool(self, engine: Engine) -> None:
        """Report the connection pool of ``engine``."""
        self._scraped.engine = engine

    def for_method(self, method: str) -> _MethodMetrics:
        """The (cached) children of the per-method metrics for ``method``."""
        label = method_label(method)
        found = self._by_method.get(label)
        if found is None:
            found = self._by_method[label] = _MethodMetrics(self, label)
        return found

    def exposition(self) -> bytes:
        """The registry in Prometheus text format."""
        return generate_latest(self._exposed)


class _MethodMetrics:
    """One method's label children, looked up once (``labels()`` takes a lock each call)."""

    def __init__(self, metrics: Metrics, method: str) -> None:
        self.method = method
        self.metrics = metrics
        self.latency = metrics.latency.labels(method)
        self.bytes_in = metrics.bytes_in.labels(method)
        self.bytes_out = metrics.bytes_out.labels(method)
        self.upload = method in UPLOAD_METHODS
        self._by_status: dict[str, Any] = {}

    def started(self) -> None:
        self.metrics.in_progress.inc()
        if self.upload:
            self.metrics.uploads.inc()

    def finished(self, status: str, seconds: float, received: int, sent: int) -> None:
        metrics = self.metrics
        metrics.in_progress.dec()
        if self.upload:
            metrics.uploads.dec()
        label = status if len(status) == 3 and status.isdigit() else "none"
        counter = self._by_status.get(label)
        if counter is None:
            counter = self._by_status[label] = metrics.requests.labels(self.method, label)
        counter.inc()
        self.latency.observe(seconds)
        if received:
            self.bytes_in.inc(received)
        if sent:
            self.bytes_out.inc(sent)


def timed_blob_call(metrics: Metrics, op: str) -> Callable[[float, bool], None]:
    """A recorder for one blob operation ``op``: call it with the seconds taken and whether
    the call raised."""
    count = metrics.blob_ops.labels(op)
    errors = metrics.blob_errors.labels(op)
    latency = metrics.blob_latency.labels(op)

    def record(seconds: float, failed: bool) -> None:
        count.inc()
        latency.observe(seconds)
        if failed:
            errors.inc()

    return record


__all__ = ["KNOWN_METHODS", "Metrics", "method_label", "timed_blob_call"]
