"""The blob chain: content-addressed, chunked, deduplicated storage of file contents.

``BlobChain`` is the front door the rest of oxidav uses: ``ingest`` a stream (FastCDC chunks named
by BLAKE3, only new chunks written, durability before visibility), ``incref`` / ``decref`` a
manifest inside the caller's transaction, ``open`` a ``ContentReader``, ``concat`` manifests.
Chunk and manifest rows with their refcounts live in ``oxidav.db.models.blobs``; the bytes live
in a ``BlobStore``:

* ``LocalBlobStore`` (``file://``) and ``S3BlobStore`` (``s3://``) keep bytes;
* ``RetryingBlobStore``, ``CachedBlobStore`` and ``EncryptedBlobStore`` decorate any store;
* ``store_from_url`` / ``store_from_settings`` build the configured stack.

Maintenance: ``oxidav.blobs.gc`` (grace-period garbage collection), ``oxidav.blobs.fsck``
(missing / orphaned / corrupt chunks), ``oxidav.blobs.migrate`` (copy to another store), exposed
as ``oxidav blobs gc | fsck | migrate`` by ``oxidav.blobs.cli``.

To add your own store, implement the ``BlobStore`` protocol in ``oxidav.blobs.store`` (and run
the conformance suite in ``tests/blobs`` against it).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oxidav.blobs.cache import CachedBlobStore
from oxidav.blobs.catalog import BlobChainConflictError, ManifestNotFoundError, RefcountError
from oxidav.blobs.chain import BlobChain
from oxidav.blobs.chunking import IncompleteContentError
from oxidav.blobs.encrypted import EncryptedBlobStore, EncryptionKeyError
from oxidav.blobs.ingest import StoredContent
from oxidav.blobs.local import LocalBlobStore
from oxidav.blobs.reader import ContentReader
from oxidav.blobs.retry import RetryingBlobStore
from oxidav.blobs.store import (
    BlobIntegrityError,
    BlobNotFoundError,
    BlobStore,
    BlobStoreError,
    TransientBlobStoreError,
)
from oxidav.blobs.urls import store_from_settings, store_from_url

if TYPE_CHECKING:
    from oxidav.blobs.s3 import S3BlobStore


def __getattr__(name: str) -> Any:
    # boto3 takes a while to import; only S3 users pay for it.
    if name == "S3BlobStore":
        from oxidav.blobs.s3 import S3BlobStore

        return S3BlobStore
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "BlobChain",
    "BlobChainConflictError",
    "BlobIntegrityError",
    "BlobNotFoundError",
    "BlobStore",
    "BlobStoreError",
    "CachedBlobStore",
    "ContentReader",
    "EncryptedBlobStore",
    "EncryptionKeyError",
    "IncompleteContentError",
    "LocalBlobStore",
    "ManifestNotFoundError",
    "RefcountError",
    "RetryingBlobStore",
    "S3BlobStore",
    "StoredContent",
    "TransientBlobStoreError",
    "store_from_settings",
    "store_from_url",
]
