"""Copying stored chunks between a blob store and a backup's ``blobs`` folder, verified.

Chunks are copied as stored (ciphertext when the installation encrypts) and each one is checked
against its BLAKE3 name on the way — through the configured keys when it is encrypted — so a
backup never holds, and a restore never writes, a chunk that does not match its name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from oxidav.backup.manifest import BackupError
from oxidav.blobs.encrypted import EncryptedBlobStore
from oxidav.blobs.store import BlobNotFoundError, BlobStore, BlobStoreError, check_chunk

PAGE = 256


class _Probe:
    """A one-chunk store in front of bytes already read, for decrypting them."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.concurrency = 1

    def get(self, key: str) -> bytes:
        return self.data


def verify(key: str, size: int, stored: bytes, keys: Sequence[bytes]) -> None:
    """Raise ``BackupError`` unless ``stored`` is the chunk ``key`` (decrypted with ``keys``)."""
    try:
        plain = stored
        if keys:
            plain = EncryptedBlobStore(_Probe(stored), keys).get(key)  # type: ignore[arg-type]
        check_chunk(key, size, plain)
    except (BlobStoreError, ValueError) as exc:
        raise BackupError(f"chunk {key} does not match its name: {exc}") from exc


def copy_chunks(
    chunks: Sequence[tuple[str, int]],
    source: BlobStore,
    target: BlobStore,
    keys: Sequence[bytes],
    advance: Callable[[int, int], None],
    check_stop: Callable[[], None],
    skip_present: bool,
) -> None:
    """Copy every chunk of ``chunks`` from ``source`` to ``target``, verified, a page at a
    time (each page synced); chunks ``target`` already has are skipped if ``skip_present``."""
    workers = max(1, min(8, source.concurrency))
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="backup-copy") as pool:
        for start in range(0, len(chunks), PAGE):
            check_stop()
            page = chunks[start : start + PAGE]

            def copy_one(item: tuple[str, int]) -> str | None:
                key, size = item
                if skip_present and target.exists(key):
                    return None
                try:
                    stored = source.get(key)
                except BlobNotFoundError as exc:
                    raise BackupError(
                        f"chunk {key} is missing from {source!r} (removed by `blobs gc` during "
                        "the copy? the backup must finish within gc's grace period)"
                    ) from exc
                verify(key, size, stored, keys)
                target.put_unsynced(key, stored)
                return key

            written = [key for key in pool.map(copy_one, page) if key is not None]
            target.sync(written)
            advance(len(page), sum(size for _, size in page))
