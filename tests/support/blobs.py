"""Helpers of the blob tests: encryption keys, a store decorator that records writes, the log
of an S3 client's requests, a store stack under test, sources that fail, database peeks."""

from __future__ import annotations

import base64
import collections
import random
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field

from sqlalchemy import func, select

from oxidav.blobs import BlobStore
from oxidav.blobs.store import READ_BLOCK
from oxidav.db import Database
from oxidav.db.models.blobs import BlobChunk, BlobManifest, BlobManifestChunk

KEY_A = bytes(range(32))
KEY_B = bytes(range(32, 64))
B64_KEY_A = base64.b64encode(KEY_A).decode()
B64_KEY_B = base64.b64encode(KEY_B).decode()


@dataclass
class RequestLog:
    """HTTP requests sent by one boto3 client, counted by method."""

    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, request: object, **_kwargs: object) -> None:
        with self.lock:
            self.counts[request.method] += 1  # type: ignore[attr-defined]

    def reset(self) -> None:
        with self.lock:
            self.counts.clear()

    def __getitem__(self, method: str) -> int:
        return self.counts[method]


@dataclass
class StoreUnderTest:
    name: str
    store: BlobStore
    requests: RequestLog | None  # None for stacks without S3
    cached: bool


def make_source(
    chunks: list[bytes], fail_after: int | None = None
) -> Callable[[], Iterator[bytes]]:
    """An iterable source that raises ``OSError`` after ``fail_after`` pieces."""

    def gen() -> Iterator[bytes]:
        for i, piece in enumerate(chunks):
            if fail_after is not None and i >= fail_after:
                raise OSError("client went away")
            yield piece

    return gen


class RecordingStore:
    """A real ``BlobStore`` decorator that remembers which keys were written and read."""

    def __init__(self, inner: BlobStore) -> None:
        self.inner = inner
        self.puts: list[str] = []
        self.put_bytes = 0
        self.gets: list[str] = []
        self.ranges: list[tuple[str, int, int]] = []
        self.synced: list[str] = []
        self._lock = threading.Lock()
        self.fail_put_after: int | None = None
        self.fail_sync = False

    @property
    def concurrency(self) -> int:
        return self.inner.concurrency

    def reset(self) -> None:
        with self._lock:
            self.puts.clear()
            self.gets.clear()
            self.ranges.clear()
            self.synced.clear()
            self.put_bytes = 0

    def _record_put(self, key: str, data: bytes) -> None:
        with self._lock:
            if self.fail_put_after is not None and len(self.puts) >= self.fail_put_after:
                raise OSError("disk on fire")
            self.puts.append(key)
            self.put_bytes += len(data)

    def put(self, key: str, data: bytes) -> None:
        self._record_put(key, data)
        self.inner.put(key, data)

    def put_unsynced(self, key: str, data: bytes) -> None:
        self._record_put(key, data)
        self.inner.put_unsynced(key, data)

    def sync(self, keys: Sequence[str]) -> None:
        if self.fail_sync:
            raise OSError("fsync failed: EIO")
        with self._lock:
            self.synced.extend(keys)
        self.inner.sync(keys)

    def get(self, key: str) -> bytes:
        with self._lock:
            self.gets.append(key)
        return self.inner.get(key)

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        with self._lock:
            self.ranges.append((key, start, end))
        return self.inner.get_range(key, start, end, block)

    def exists(self, key: str) -> bool:
        return self.inner.exists(key)

    def size(self, key: str) -> int:
        return self.inner.size(key)

    def delete(self, key: str) -> None:
        self.inner.delete(key)

    def iter_keys(self) -> Iterator[str]:
        return self.inner.iter_keys()

    def health_check(self) -> None:
        self.inner.health_check()

    def close(self) -> None:
        self.inner.close()


def random_bytes(n: int, seed: int = 1) -> bytes:
    return random.Random(seed).randbytes(n)


def pieces(data: bytes, size: int = 100_000) -> Iterator[bytes]:
    for i in range(0, len(data), size):
        yield data[i : i + size]


def chunk_refcounts(db: Database) -> dict[str, int]:
    with db.read() as s:
        return {row[0]: row[1] for row in s.execute(select(BlobChunk.hash, BlobChunk.refcount))}


def manifest_count(db: Database) -> int:
    with db.read() as s:
        return s.execute(select(func.count()).select_from(BlobManifest)).scalar_one()


def entry_count(db: Database) -> int:
    with db.read() as s:
        return s.execute(select(func.count()).select_from(BlobManifestChunk)).scalar_one()


def assert_only_orphans_added(
    db: Database, before: dict[str, int], store: RecordingStore, manifests: int
) -> None:
    """A failed ingest changed no refcount and made no manifest (``manifests`` stayed); the
    chunks it registered are unreferenced intents, and each one got its file (gc relies on it)."""
    assert manifest_count(db) == manifests
    after = chunk_refcounts(db)
    assert {k: v for k, v in after.items() if k in before} == before
    orphans = {k: v for k, v in after.items() if k not in before}
    assert orphans and all(v == 0 for v in orphans.values())
    assert set(orphans) <= set(store.puts)
