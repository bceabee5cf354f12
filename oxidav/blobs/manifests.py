"""Manifests: the ordered chunk list of one content, and the hash that names it.

A manifest's name is the BLAKE3 of a canonical encoding of its chunk list:
``b"oxidav-manifest-1\\n"`` followed, per chunk, by the 32-byte chunk digest and the chunk size as
an unsigned 64-bit big-endian integer. The list alone determines the bytes, so equal lists are
equal contents and share one manifest row. ``ManifestBuilder`` keeps the list packed (40 bytes a
chunk, ~160 KiB per GiB of content) while the hash is computed as the list grows.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass

import blake3

MANIFEST_MAGIC = b"oxidav-manifest-1\n"
_ENTRY = struct.Struct(">32sQ")
ENTRY_SIZE = _ENTRY.size


@dataclass(frozen=True)
class ManifestEntry:
    """Chunk ``chunk_hash`` holds the content bytes ``[start, start + size)``."""

    start: int
    size: int
    chunk_hash: str


class ManifestBuilder:
    """Accumulates a chunk list; ``hash`` and ``size`` describe it at any point."""

    def __init__(self) -> None:
        self._packed = bytearray()
        self._hasher = blake3.blake3(MANIFEST_MAGIC)
        self.size = 0
        self.count = 0

    def add(self, digest: bytes, size: int) -> None:
        if size <= 0:
            raise ValueError("a manifest chunk is never empty")
        entry = _ENTRY.pack(digest, size)
        self._packed += entry
        self._hasher.update(entry)
        self.size += size
        self.count += 1

    @property
    def hash(self) -> str:
        return self._hasher.hexdigest()

    def entries(self) -> Iterator[ManifestEntry]:
        start = 0
        for digest, size in _ENTRY.iter_unpack(self._packed):
            yield ManifestEntry(start, size, digest.hex())
            start += size

    def chunk_uses(self) -> dict[str, int]:
        """How many entries name each chunk (hash -> count)."""
        uses: dict[str, int] = {}
        for digest, _size in _ENTRY.iter_unpack(self._packed):
            key = digest.hex()
            uses[key] = uses.get(key, 0) + 1
        return uses


def manifest_hash(entries: list[tuple[bytes, int]]) -> str:
    """The manifest name of a list of ``(chunk digest, size)`` (tests and tools)."""
    builder = ManifestBuilder()
    for digest, size in entries:
        builder.add(digest, size)
    return builder.hash


__all__ = ["ENTRY_SIZE", "ManifestBuilder", "ManifestEntry", "manifest_hash"]
