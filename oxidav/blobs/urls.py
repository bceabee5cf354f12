"""Blob stores from URLs and settings.

``file:///path`` is a ``LocalBlobStore``; ``s3://bucket/prefix?endpoint_url=…&region=…`` is an
``S3BlobStore`` wrapped in a ``RetryingBlobStore`` (optional query keys: ``addressing_style``,
``concurrency``). Credentials for S3 come from the usual AWS sources (environment, shared
config, instance role), never from the URL. S3 needs boto3 (the ``s3`` extra); without it
an s3:// URL is a ``MissingBackendError``.

``store_from_settings`` builds the whole stack, inner to outer::

    base store -> retry (remote only) -> encrypted (if encryption_keys) -> cache (if blob_cache,
    remote only)

so the cache holds plaintext that has already been authenticated, and a cached read costs no
remote request and no decryption.
"""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

from oxidav.backends import is_missing, missing_backend
from oxidav.blobs.cache import CachedBlobStore
from oxidav.blobs.encrypted import EncryptedBlobStore
from oxidav.blobs.local import LocalBlobStore
from oxidav.blobs.retry import RetryingBlobStore
from oxidav.blobs.store import BlobStore
from oxidav.settings import Settings

_S3_OPTIONS = {"endpoint_url", "region", "addressing_style", "concurrency"}


def is_remote(url: str) -> bool:
    return urlsplit(url).scheme == "s3"


def store_from_url(url: str) -> BlobStore:
    """The base store named by ``url`` (remote stores come with retries). Raises
    ``ValueError`` for an unknown scheme or option."""
    parts = urlsplit(url)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"file URL must be file:///absolute/path, got {url!r}")
        return LocalBlobStore(Path(unquote(parts.path)))
    if parts.scheme == "s3":
        if not parts.netloc:
            raise ValueError(f"s3 URL needs a bucket: {url!r}")
        query = {key: values[-1] for key, values in parse_qs(parts.query).items()}
        unknown = set(query) - _S3_OPTIONS
        if unknown:
            raise ValueError(f"unknown s3 URL option(s) {sorted(unknown)} in {url!r}")
        try:
            from oxidav.blobs.s3 import DEFAULT_CONCURRENCY, S3BlobStore  # boto3 loads slowly
        except ModuleNotFoundError as exc:
            if not is_missing(exc, "s3"):
                raise
            raise missing_backend("blob_store", "an S3 bucket", "s3") from None

        s3 = S3BlobStore(
            parts.netloc,
            unquote(parts.path).strip("/"),
            endpoint_url=query.get("endpoint_url"),
            region=query.get("region"),
            addressing_style=query.get("addressing_style"),
            concurrency=int(query.get("concurrency", DEFAULT_CONCURRENCY)),
        )
        return RetryingBlobStore(s3)
    raise ValueError(f"unsupported blob store URL {url!r} (expected file:// or s3://)")


def store_from_settings(settings: Settings, url: str | None = None) -> BlobStore:
    """The configured store stack for ``url`` (default: ``settings.resolved_blob_store``)."""
    url = url or settings.resolved_blob_store
    store = store_from_url(url)
    keys = settings.encryption_key_bytes()
    if keys:
        store = EncryptedBlobStore(store, keys)
    if settings.blob_cache and is_remote(url):
        store = CachedBlobStore(store, Path(settings.blob_cache), settings.blob_cache_bytes)
    return store


__all__ = ["is_remote", "store_from_settings", "store_from_url"]
