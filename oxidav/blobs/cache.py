"""The cache decorator: a size-bounded LRU of blobs on local disk in front of a remote store.

* Write-through: ``put`` / ``put_unsynced`` write the inner store, then keep a copy, so content
  just uploaded is read back without a remote GET.
* Single-flight: concurrent misses on one key wait for one inner ``get`` (64 readers of a cold
  chunk cause one remote GET).
* The bound holds after every insert: least recently used entries are evicted first; a blob
  larger than the whole cache is passed through uncached.

Cache files live in ``<dir>/<first two hex>/<key>`` and start with the BLAKE3 of the rest, so a
file torn by a crash (cache writes are never fsynced) is detected and treated as a miss. The
LRU order is kept per process; processes sharing one folder each bound their own view of it.
"""

from __future__ import annotations

import collections
import contextlib
import os
import secrets
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

import blake3

from oxidav.blobs.store import (
    READ_BLOCK,
    BlobStore,
    BlobStoreError,
    check_key,
    check_range,
    shard_of,
)

_DIGEST = 32


class CachedBlobStore:
    """Wraps ``inner`` with an LRU cache of at most ``max_bytes`` in ``directory``."""

    def __init__(self, inner: BlobStore, directory: str | Path, max_bytes: int) -> None:
        if max_bytes <= 0:
            raise ValueError("max_bytes must be positive")
        self.inner = inner
        self.directory = Path(directory)
        self.max_bytes = max_bytes
        self._tmp = self.directory / ".tmp"
        self._tmp.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._lru: collections.OrderedDict[str, int] = collections.OrderedDict()
        self._bytes = 0
        self._inflight: dict[str, Future[bytes]] = {}
        self.hits = 0
        self.misses = 0
        self._load_index()

    def __repr__(self) -> str:
        return f"CachedBlobStore({self.inner!r}, {str(self.directory)!r})"

    @property
    def concurrency(self) -> int:
        return self.inner.concurrency

    @property
    def cached_bytes(self) -> int:
        return self._bytes

    # -- the cache itself ----------------------------------------------------------------

    def _path(self, key: str) -> Path:
        return self.directory / shard_of(check_key(key)) / key

    def _load_index(self) -> None:
        stale = time.time() - 3600
        for entry in os.scandir(self._tmp):
            with contextlib.suppress(FileNotFoundError):
                if entry.stat().st_mtime < stale:
                    os.unlink(entry.path)
        found: list[tuple[float, str, int]] = []
        for shard in self.directory.iterdir():
            if len(shard.name) != 2 or not shard.is_dir():
                continue
            for entry in os.scandir(shard):
                with contextlib.suppress(FileNotFoundError):
                    stat = entry.stat()
                    found.append((stat.st_mtime, entry.name, stat.st_size))
        for _mtime, key, size in sorted(found):
            self._lru[key] = size
            self._bytes += size
        with self._lock:
            self._evict()

    def _evict(self) -> None:
        """Drop least recently used entries until the bound holds. Caller holds the lock."""
        while self._bytes > self.max_bytes and self._lru:
            key, size = self._lru.popitem(last=False)
            self._bytes -= size
            with contextlib.suppress(FileNotFoundError):
                os.unlink(self._path(key))

    def _forget(self, key: str) -> None:
        with self._lock:
            size = self._lru.pop(key, None)
            if size is not None:
                self._bytes -= size
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(key))

    def _keep(self, key: str, data: bytes) -> None:
        size = _DIGEST + len(data)
        if size > self.max_bytes:
            return
        path = self._path(key)
        tmp = self._tmp / f"{key}.{secrets.token_hex(6)}"
        try:
            path.parent.mkdir(exist_ok=True)
            with open(tmp, "wb") as fh:
                fh.write(blake3.blake3(data).digest())
                fh.write(data)
            os.replace(tmp, path)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            return  # a cache that cannot write is only a slower cache
        with self._lock:
            old = self._lru.pop(key, None)
            self._bytes += size - (old or 0)
            self._lru[key] = size
            self._evict()

    def _cached(self, key: str) -> bytes | None:
        with self._lock:
            if key not in self._lru:
                return None
            self._lru.move_to_end(key)
        try:
            raw = self._path(key).read_bytes()
        except FileNotFoundError:
            self._forget(key)
            return None
        data = raw[_DIGEST:]
        if blake3.blake3(data).digest() != raw[:_DIGEST]:
            self._forget(key)  # torn by a crash, or damaged: fetch again
            return None
        return data

    # -- BlobStore -----------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> None:
        self.inner.put(key, data)
        self._keep(key, data)

    def put_unsynced(self, key: str, data: bytes) -> None:
        self.inner.put_unsynced(key, data)
        self._keep(key, data)

    def sync(self, keys: Sequence[str]) -> None:
        self.inner.sync(keys)

    def get(self, key: str) -> bytes:
        data = self._cached(key)
        if data is not None:
            self.hits += 1
            return data
        with self._lock:
            future = self._inflight.get(key)
            leader = future is None
            if future is None:
                if key in self._lru:  # filled while we waited for the lock
                    leader = False
                else:
                    future = Future()
                    self._inflight[key] = future
        if future is None:
            return self.get(key)
        if not leader:
            return future.result()
        self.misses += 1
        try:
            data = self.inner.get(key)
            self._keep(key, data)
            future.set_result(data)
            return data
        except BaseException as exc:
            future.set_exception(exc)
            raise
        finally:
            with self._lock:
                del self._inflight[key]

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        check_range(start, end)
        view = memoryview(self.get(key))[start:end]
        return (bytes(view[i : i + block]) for i in range(0, len(view), block))

    def exists(self, key: str) -> bool:
        with self._lock:
            if key in self._lru:
                return True
        return self.inner.exists(key)

    def size(self, key: str) -> int:
        with self._lock:
            cached = self._lru.get(key)
        if cached is not None:
            return cached - _DIGEST
        return self.inner.size(key)

    def delete(self, key: str) -> None:
        self._forget(key)
        self.inner.delete(key)

    def iter_keys(self) -> Iterator[str]:
        return self.inner.iter_keys()

    def health_check(self) -> None:
        self.inner.health_check()
        if not os.access(self.directory, os.W_OK):
            raise BlobStoreError(f"blob cache {self.directory} is not writable")

    def close(self) -> None:
        self.inner.close()


__all__ = ["CachedBlobStore"]
