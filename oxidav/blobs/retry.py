"""The retry decorator: exponential backoff with full jitter on transient store failures.

Retried: ``TransientBlobStoreError`` (the remote store's connection errors, timeouts, 5xx, 429)
and Python's ``ConnectionError`` / ``TimeoutError``. Not retried: anything else (a missing key,
a refused request, a full disk) and ``sync``: a failed fsync must surface, because repeating it
can report success for data the kernel already dropped. A ranged read that breaks mid-stream
resumes from the first byte not yet delivered.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TypeVar

from oxidav.blobs.store import READ_BLOCK, BlobStore, TransientBlobStoreError, check_range

T = TypeVar("T")
RETRYABLE: tuple[type[BaseException], ...] = (
    TransientBlobStoreError,
    ConnectionError,
    TimeoutError,
)


class RetryingBlobStore:
    """Wraps ``inner``; each call is tried up to ``attempts`` times. The delay before try
    ``n + 1`` is uniform in ``[0, min(max_delay, base_delay * 2**n)]`` ("full jitter")."""

    def __init__(
        self,
        inner: BlobStore,
        *,
        attempts: int = 5,
        base_delay: float = 0.05,
        max_delay: float = 2.0,
        sleep: Callable[[float], None] = time.sleep,
        jitter: Callable[[], float] = random.random,
    ) -> None:
        if attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.inner = inner
        self.attempts = attempts
        self.base_delay = base_delay
        self.max_delay = max_delay
        self._sleep = sleep
        self._jitter = jitter
        self.retries = 0

    def __repr__(self) -> str:
        return f"RetryingBlobStore({self.inner!r})"

    @property
    def concurrency(self) -> int:
        return self.inner.concurrency

    def _backoff(self, failures: int) -> None:
        self.retries += 1
        self._sleep(self._jitter() * min(self.max_delay, self.base_delay * 2 ** (failures - 1)))

    def _call(self, fn: Callable[[], T]) -> T:
        failures = 0
        while True:
            try:
                return fn()
            except RETRYABLE:
                failures += 1
                if failures >= self.attempts:
                    raise
                self._backoff(failures)

    def put(self, key: str, data: bytes) -> None:
        self._call(lambda: self.inner.put(key, data))

    def put_unsynced(self, key: str, data: bytes) -> None:
        self._call(lambda: self.inner.put_unsynced(key, data))

    def sync(self, keys: Sequence[str]) -> None:
        self.inner.sync(keys)  # never retried: see the module docstring

    def get(self, key: str) -> bytes:
        return self._call(lambda: self.inner.get(key))

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        check_range(start, end)
        first = self._call(lambda: self.inner.get_range(key, start, end, block))
        return self._resuming(key, start, end, block, first)

    def _resuming(
        self, key: str, start: int, end: int, block: int, pieces: Iterator[bytes]
    ) -> Iterator[bytes]:
        position = start
        failures = 0
        while True:
            try:
                for piece in pieces:
                    position += len(piece)
                    yield piece
                return
            except RETRYABLE:
                failures += 1
                if failures >= self.attempts:
                    raise
                self._backoff(failures)
                if position >= end:
                    return
                pieces = self._call(
                    functools.partial(self.inner.get_range, key, position, end, block)
                )

    def exists(self, key: str) -> bool:
        return self._call(lambda: self.inner.exists(key))

    def size(self, key: str) -> int:
        return self._call(lambda: self.inner.size(key))

    def delete(self, key: str) -> None:
        self._call(lambda: self.inner.delete(key))

    def iter_keys(self) -> Iterator[str]:
        return self.inner.iter_keys()

    def health_check(self) -> None:
        self._call(self.inner.health_check)

    def close(self) -> None:
        self.inner.close()


__all__ = ["RETRYABLE", "RetryingBlobStore"]
