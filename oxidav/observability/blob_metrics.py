"""``InstrumentedBlobStore``: a ``BlobStore`` decorator that counts and times every call.

Outermost in the app's chain (``make_app`` wraps the chain's store with ``instrumented``), so it
counts what the rest of oxidav asks of the store, cache hits included, once per call (a call the
retry layer repeated counts once). Every method of the protocol is forwarded to the wrapped
store, none replaced by a generic path; a ranged read is timed until its iterator is made, and
an error raised while iterating it is counted as an error of ``get_range``.

A decorator must not hide what the store it wraps can do: a store that hands out a chunk as a
open file (``RegionStore``: the local store, whose chunks a GET sends with ``sendfile``) is
wrapped in ``InstrumentedRegionStore``, which forwards and counts ``region`` too, so the
readers still find a ``RegionStore``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from oxidav.blobs.reader import RegionStore
from oxidav.blobs.regions import FileRegion
from oxidav.blobs.store import READ_BLOCK, BlobStore
from oxidav.observability.metrics import Metrics, timed_blob_call

T = TypeVar("T")
_OPS = ("put", "put_unsynced", "sync", "get", "get_range", "region", "exists", "size", "delete")


class InstrumentedBlobStore:
    def __init__(self, inner: BlobStore, metrics: Metrics) -> None:
        self.inner = inner
        self._record = {op: timed_blob_call(metrics, op) for op in _OPS}
        self._range_errors = metrics.blob_errors.labels("get_range")

    def __repr__(self) -> str:
        return f"InstrumentedBlobStore({self.inner!r})"

    @property
    def concurrency(self) -> int:
        return self.inner.concurrency

    def _timed(self, op: str, call: Callable[[], T]) -> T:
        started = time.perf_counter()
        try:
            result = call()
        except BaseException:
            self._record[op](time.perf_counter() - started, True)
            raise
        self._record[op](time.perf_counter() - started, False)
        return result

    def put(self, key: str, data: bytes) -> None:
        self._timed("put", lambda: self.inner.put(key, data))

    def put_unsynced(self, key: str, data: bytes) -> None:
        self._timed("put_unsynced", lambda: self.inner.put_unsynced(key, data))

    def sync(self, keys: Sequence[str]) -> None:
        self._timed("sync", lambda: self.inner.sync(keys))

    def get(self, key: str) -> bytes:
        return self._timed("get", lambda: self.inner.get(key))

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        pieces = self._timed("get_range", lambda: self.inner.get_range(key, start, end, block))
        return self._counting_errors(pieces)

    def _counting_errors(self, pieces: Iterator[bytes]) -> Iterator[bytes]:
        try:
            yield from pieces
        except Exception:
            self._range_errors.inc()
            raise

    def exists(self, key: str) -> bool:
        return self._timed("exists", lambda: self.inner.exists(key))

    def size(self, key: str) -> int:
        return self._timed("size", lambda: self.inner.size(key))

    def delete(self, key: str) -> None:
        self._timed("delete", lambda: self.inner.delete(key))

    def iter_keys(self) -> Iterator[str]:
        return self.inner.iter_keys()

    def health_check(self) -> None:
        self.inner.health_check()

    def close(self) -> None:
        self.inner.close()


class InstrumentedRegionStore(InstrumentedBlobStore):
    """``InstrumentedBlobStore`` of a store that also hands out regions."""

    def __init__(self, inner: BlobStore, metrics: Metrics) -> None:
        if not isinstance(inner, RegionStore):
            raise TypeError(f"{inner!r} hands out no regions")
        super().__init__(inner, metrics)
        self._regions = inner

    def region(self, key: str) -> FileRegion:
        return self._timed("region", lambda: self._regions.region(key))


def instrumented(inner: BlobStore, metrics: Metrics) -> InstrumentedBlobStore:
    """``inner`` counted in ``metrics``, with every capability it has."""
    if isinstance(inner, RegionStore):
        return InstrumentedRegionStore(inner, metrics)
    return InstrumentedBlobStore(inner, metrics)


__all__ = ["InstrumentedBlobStore", "InstrumentedRegionStore", "instrumented"]
