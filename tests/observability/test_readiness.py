"""Readiness probes against real parts: a database that refuses, one that never answers, a
blob store that is gone; the probes are shared and rate-limited. And the blob store metrics."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from oxidav.blobs.local import LocalBlobStore
from oxidav.blobs.reader import RegionStore
from oxidav.blobs.retry import RetryingBlobStore
from oxidav.blobs.store import BlobNotFoundError
from oxidav.db import Database
from oxidav.observability.blob_metrics import InstrumentedBlobStore, instrumented
from oxidav.observability.metrics import Metrics
from oxidav.observability.readiness import Readiness


class CountingStore(LocalBlobStore):
    """A real local store that counts its health checks."""

    checks = 0

    def health_check(self) -> None:
        type(self).checks += 1
        super().health_check()


@pytest.fixture
def silent_port() -> Iterator[int]:
    """A port that accepts connections and never says a word."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    yield listener.getsockname()[1]
    listener.close()


def closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return port


def test_ready_on_both_backends(database: Database, tmp_path: Path) -> None:
    report = Readiness(database, LocalBlobStore(tmp_path / "blobs")).report()
    assert report.ready and dict(report.parts) == {"database": "ok", "blob_store": "ok"}


def test_refused_database_is_failed(tmp_path: Path) -> None:
    db = Database.from_url(f"postgresql+psycopg2://u@127.0.0.1:{closed_port()}/x")
    try:
        report = Readiness(db, LocalBlobStore(tmp_path / "blobs")).report()
    finally:
        db.dispose()
    assert not report.ready
    assert dict(report.parts) == {"database": "failed", "blob_store": "ok"}


def test_silent_database_is_a_timeout_and_the_answer_comes_in_time(
    tmp_path: Path, silent_port: int
) -> None:
    db = Database.from_url(f"postgresql+psycopg2://u@127.0.0.1:{silent_port}/x")
    readiness = Readiness(db, LocalBlobStore(tmp_path / "blobs"), timeout=0.5)
    started = time.monotonic()
    first = readiness.report()
    second = readiness.report()  # the hung probe is not started again
    elapsed = time.monotonic() - started
    assert dict(first.parts) == {"database": "timeout", "blob_store": "ok"}
    assert dict(second.parts) == {"database": "timeout", "blob_store": "ok"}
    assert elapsed < 5
    probes = [t for t in threading.enumerate() if t.name == "oxidav-ready-database"]
    assert len(probes) == 1


def test_many_askers_share_one_probe(database: Database, tmp_path: Path) -> None:
    CountingStore.checks = 0
    readiness = Readiness(database, CountingStore(tmp_path / "blobs"), fresh_seconds=60)
    reports = []
    threads = [
        threading.Thread(target=lambda: reports.append(readiness.report())) for _ in range(20)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(reports) == 20 and all(report.ready for report in reports)
    assert CountingStore.checks == 1


def test_blob_store_metrics_count_calls_and_errors(tmp_path: Path) -> None:
    metrics = Metrics()
    store = InstrumentedBlobStore(LocalBlobStore(tmp_path / "blobs"), metrics)
    key = "ab" * 32
    store.put(key, b"data")
    assert store.get(key) == b"data"
    assert b"".join(store.get_range(key, 1, 3)) == b"at"
    with pytest.raises(BlobNotFoundError):
        store.get("cd" * 32)
    registry = metrics.registry

    def value(name: str, op: str) -> float:
        got = registry.get_sample_value(name, {"op": op})
        return 0.0 if got is None else got

    assert value("oxidav_blob_store_operations_total", "put") == 1
    assert value("oxidav_blob_store_operations_total", "get") == 2
    assert value("oxidav_blob_store_errors_total", "get") == 1
    assert value("oxidav_blob_store_operations_total", "get_range") == 1
    assert value("oxidav_blob_store_errors_total", "get_range") == 0
    assert value("oxidav_blob_store_operation_duration_seconds_count", "put") == 1
    store.close()


def test_instrumented_store_keeps_the_region_capability(tmp_path: Path) -> None:
    """A GET sends a local chunk with ``sendfile`` only if the app's (instrumented) store is
    still a ``RegionStore``: the decorator forwards ``region`` and counts it; a store without
    regions does not gain the method."""
    metrics = Metrics()
    store = instrumented(LocalBlobStore(tmp_path / "blobs"), metrics)
    assert isinstance(store, RegionStore)
    key = "ab" * 32
    store.put(key, b"chunk bytes")
    region = store.region(key)
    try:
        assert bytes(region.view) == b"chunk bytes"
    finally:
        region.close()
    assert (
        metrics.registry.get_sample_value("oxidav_blob_store_operations_total", {"op": "region"})
        == 1
    )
    plain = instrumented(RetryingBlobStore(LocalBlobStore(tmp_path / "other")), metrics)
    assert not isinstance(plain, RegionStore)
