"""The S3 blob store (boto3): any S3-compatible endpoint, keys ``<prefix>/<first two hex>/<key>``.

A PUT is durable when S3 answers, so ``put_unsynced`` is the same request as ``put`` and ``sync``
sends nothing. No request ever probes with HEAD before a PUT: keys name their content, so a
re-PUT writes identical bytes. Every PUT carries ``Content-MD5`` so the server rejects bytes
damaged in transit. Ranged reads are streamed from the response body. Chunks are at most a few
MiB, so single PUTs suffice (no multipart).

botocore's own retries are switched off (one attempt per call): the ``RetryingBlobStore``
decorator owns the retry policy, and failures are translated here into ``BlobNotFoundError``,
``TransientBlobStoreError`` (connection errors, timeouts, 5xx, 429/throttling) or
``BlobStoreError``.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from oxidav.blobs.store import (
    READ_BLOCK,
    BlobNotFoundError,
    BlobStoreError,
    TransientBlobStoreError,
    check_key,
    check_range,
    shard_of,
)

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

DEFAULT_CONCURRENCY = 8
_NOT_FOUND = {"NoSuchKey", "404", "NotFound"}
_THROTTLED = {"SlowDown", "Throttling", "ThrottlingException", "RequestLimitExceeded"}


def translate_error(exc: Exception, key: str | None = None) -> BlobStoreError:
    """The blob-store error for a botocore failure."""
    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        code = str(error.get("Code", ""))
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))
        if key is not None and (code in _NOT_FOUND or status == 404):
            return BlobNotFoundError(key)
        if status >= 500 or status == 429 or code in _THROTTLED:
            return TransientBlobStoreError(f"S3 {status} {code}: {error.get('Message', '')}")
        return BlobStoreError(f"S3 {status} {code}: {error.get('Message', '')}")
    if isinstance(exc, HTTPClientError | BotoConnectionError):  # refused, reset, timeouts
        return TransientBlobStoreError(f"S3 connection failed: {exc}")
    return BlobStoreError(f"S3 request failed: {exc}")


class S3BlobStore:
    """Blobs as objects in ``bucket`` under ``prefix``."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        addressing_style: str | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        client: S3Client | None = None,
        connect_timeout: float = 10.0,
        read_timeout: float = 60.0,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self.concurrency = concurrency
        if client is None:
            style = addressing_style or ("path" if endpoint_url else "auto")
            s3_options: Any = {"addressing_style": style}
            config = Config(
                retries={"total_max_attempts": 1, "mode": "standard"},
                max_pool_connections=max(10, 2 * concurrency),
                connect_timeout=connect_timeout,
                read_timeout=read_timeout,
                s3=s3_options,
                # Checksums only when an operation requires them: Content-MD5 is ours.
                request_checksum_calculation="when_required",
                response_checksum_validation="when_required",
            )
            client = boto3.session.Session().client(
                "s3", endpoint_url=endpoint_url, region_name=region, config=config
            )
        self.client: S3Client = client

    def __repr__(self) -> str:
        return f"S3BlobStore(bucket={self.bucket!r}, prefix={self.prefix!r})"

    def object_key(self, key: str) -> str:
        check_key(key)
        name = f"{shard_of(key)}/{key}"
        return f"{self.prefix}/{name}" if self.prefix else name

    # -- writing -------------------------------------------------------------------------

    def put(self, key: str, data: bytes) -> None:
        md5 = base64.b64encode(hashlib.md5(data, usedforsecurity=False).digest()).decode()
        try:
            self.client.put_object(
                Bucket=self.bucket, Key=self.object_key(key), Body=data, ContentMD5=md5
            )
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc) from exc

    def put_unsynced(self, key: str, data: bytes) -> None:
        self.put(key, data)

    def sync(self, keys: Sequence[str]) -> None:
        for key in keys:
            check_key(key)

    # -- reading -------------------------------------------------------------------------

    def _get_object(self, key: str, byte_range: str | None = None) -> Any:
        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": self.object_key(key)}
        if byte_range is not None:
            kwargs["Range"] = byte_range
        try:
            return self.client.get_object(**kwargs)
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, key) from exc

    def get(self, key: str) -> bytes:
        body = self._get_object(key)["Body"]
        try:
            with body:
                data: bytes = body.read()
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, key) from exc
        return data

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        check_range(start, end)
        if start == end:
            self.size(key)  # a missing key still raises
            return iter(())
        try:
            response = self._get_object(key, f"bytes={start}-{end - 1}")
        except BlobStoreError as exc:
            cause = exc.__cause__
            if (
                isinstance(cause, ClientError)
                and cause.response.get("Error", {}).get("Code") == "InvalidRange"
            ):
                return iter(())  # the range starts past the end: nothing to send
            raise
        return self._stream(key, response["Body"], block)

    @staticmethod
    def _stream(key: str, body: Any, block: int) -> Iterator[bytes]:
        try:
            with body:
                yield from body.iter_chunks(block)
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, key) from exc

    def _head(self, key: str) -> Any:
        try:
            return self.client.head_object(Bucket=self.bucket, Key=self.object_key(key))
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc, key) from exc

    def exists(self, key: str) -> bool:
        try:
            self._head(key)
        except BlobNotFoundError:
            return False
        return True

    def size(self, key: str) -> int:
        return int(self._head(key)["ContentLength"])

    def delete(self, key: str) -> None:
        try:
            self.client.delete_object(Bucket=self.bucket, Key=self.object_key(key))
        except (ClientError, BotoCoreError) as exc:
            error = translate_error(exc, key)
            if not isinstance(error, BlobNotFoundError):
                raise error from exc

    def iter_keys(self) -> Iterator[str]:
        prefix = f"{self.prefix}/" if self.prefix else ""
        paginator = self.client.get_paginator("list_objects_v2")
        try:
            for page in paginator.paginate(Bucket=self.bucket, Prefix=prefix):
                for item in page.get("Contents", []):
                    name = item["Key"][len(prefix) :]
                    shard, _, key = name.partition("/")
                    if len(shard) == 2 and key.startswith(shard) and "/" not in key:
                        yield key
        except (ClientError, BotoCoreError) as exc:
            raise translate_error(exc) from exc

    def health_check(self) -> None:
        try:
            self.client.head_bucket(Bucket=self.bucket)
        except (ClientError, BotoCoreError) as exc:
            raise BlobStoreError(f"S3 bucket {self.bucket!r} is not usable: {exc}") from exc

    def close(self) -> None:
        self.client.close()


__all__ = ["S3BlobStore", "translate_error"]
