"""The ``BlobStore`` protocol every store and decorator implements, its errors and key rules.

A blob store keeps opaque byte strings under content-derived keys: lowercase hex names (BLAKE3
digests in practice). Because a key names its content, writing a key twice writes the same bytes,
so a store never needs to ask whether a key exists before writing it; re-writes are idempotent.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Protocol, runtime_checkable

import blake3

#: Default size of the pieces a ranged read yields.
READ_BLOCK = 256 * 1024

_KEY_RE = re.compile(r"[0-9a-f]{4,128}")


class BlobStoreError(Exception):
    """A store could not do what was asked. Subclasses say why."""


class BlobNotFoundError(BlobStoreError, KeyError):
    """The key does not exist in the store."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        return f"blob {self.key} not found"


class TransientBlobStoreError(BlobStoreError):
    """A failure that may pass if the same call is tried again: a dropped connection, a
    timeout, an HTTP 5xx or 429 answer. The retry decorator retries these."""


class BlobIntegrityError(BlobStoreError):
    """The bytes read back are not the bytes written (corrupt, truncated, or undecryptable)."""


def check_chunk(key: str, size: int, data: bytes) -> bytes:
    """Return ``data`` if it is the ``size`` bytes whose BLAKE3 is ``key``, else raise
    ``BlobIntegrityError``."""
    if len(data) != size or blake3.blake3(data).hexdigest() != key:
        raise BlobIntegrityError(
            f"chunk {key} is corrupt (read {len(data)} bytes, expected {size})"
        )
    return data


def check_key(key: str) -> str:
    """Return ``key`` if it is a valid blob key (4..128 lowercase hex digits), else raise
    ``ValueError``. Keys become file names and object keys, so nothing else is allowed."""
    if not _KEY_RE.fullmatch(key):
        raise ValueError(f"invalid blob key {key!r}: expected lowercase hex")
    return key


def shard_of(key: str) -> str:
    """The shard folder of a key: its first two hex digits (``ab`` for ``ab12…``)."""
    return key[:2]


def check_range(start: int, end: int) -> None:
    """Reject a byte range that is not ``0 <= start <= end``."""
    if start < 0 or end < start:
        raise ValueError(f"invalid byte range [{start}, {end})")


@runtime_checkable
class BlobStore(Protocol):
    """Keeps blobs under hex keys. Implementations: ``LocalBlobStore``, ``S3BlobStore``, and the
    decorators ``RetryingBlobStore``, ``CachedBlobStore``, ``EncryptedBlobStore``.

    Invariants every implementation MUST keep:

    * ``put`` and ``put_unsynced`` are atomic: a reader sees either no blob or all of it, never a
      prefix. Writing an existing key replaces it with (by construction) the same bytes, and
      never sends an existence probe first.
    * After ``put`` returns, the blob survives a crash. After ``put_unsynced`` returns it may
      not, until ``sync`` has been called with its key; ``sync`` raises if durability could not
      be reached (a failed fsync MUST surface, never be retried away).
    * A decorator forwards every method to the store it wraps, ``put_unsynced`` and ``sync``
      included; none may fall back to a slower generic path.
    * Keys are checked with ``check_key``; a missing key raises ``BlobNotFoundError`` from
      ``get``, ``get_range`` and ``size`` (at call time, not at the first ``next``).
    """

    @property
    def concurrency(self) -> int:
        """How many calls may usefully run at once: 1 for a local disk, more for a remote
        store whose latency dominates. Ingest uploads and readers prefetch this many."""
        ...

    def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key`` durably."""
        ...

    def put_unsynced(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``; durable only after ``sync([key, ...])``."""
        ...

    def sync(self, keys: Sequence[str]) -> None:
        """Make the earlier ``put_unsynced`` of ``keys`` durable, in one sweep for the batch."""
        ...

    def get(self, key: str) -> bytes:
        """The whole blob. Raises ``BlobNotFoundError``."""
        ...

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        """Bytes ``[start, end)`` of the blob as pieces of at most ``block`` bytes; a range past
        the end is cut at the end, like a slice. Raises ``BlobNotFoundError`` when called."""
        ...

    def exists(self, key: str) -> bool:
        """Whether ``key`` is stored."""
        ...

    def size(self, key: str) -> int:
        """The blob's length in bytes (as ``get`` would return it). Raises ``BlobNotFoundError``."""
        ...

    def delete(self, key: str) -> None:
        """Remove ``key``; removing a missing key is not an error."""
        ...

    def iter_keys(self) -> Iterator[str]:
        """Every stored key, in no particular order, without loading them all at once."""
        ...

    def health_check(self) -> None:
        """Raise ``BlobStoreError`` unless the store can be read and written right now."""
        ...

    def close(self) -> None:
        """Release connections, threads and file handles."""
        ...


__all__ = [
    "READ_BLOCK",
    "BlobIntegrityError",
    "BlobNotFoundError",
    "BlobStore",
    "BlobStoreError",
    "TransientBlobStoreError",
    "check_chunk",
    "check_key",
    "check_range",
    "shard_of",
]
