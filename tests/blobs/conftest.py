"""Fixtures of the blob tests: a real S3 endpoint (moto's server over HTTP), request counting
through botocore events, and every store stack the conformance suite runs against."""

from __future__ import annotations

import os
import threading
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import boto3
import pytest
from moto.server import ThreadedMotoServer

from oxidav.blobs import (
    BlobChain,
    BlobStore,
    CachedBlobStore,
    EncryptedBlobStore,
    LocalBlobStore,
    RetryingBlobStore,
)
from oxidav.blobs.s3 import S3BlobStore
from oxidav.db import Database
from tests.support.blobs import KEY_A, RequestLog, StoreUnderTest


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """``http://127.0.0.1:<free port>`` of a moto S3 server running in this process."""
    saved = {k: os.environ.get(k) for k in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY")}
    os.environ["AWS_ACCESS_KEY_ID"] = "testing"
    os.environ["AWS_SECRET_ACCESS_KEY"] = "testing"
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    for _ in range(100):  # poll until it answers HTTP
        try:
            urllib.request.urlopen(endpoint, timeout=1).close()
            break
        except urllib.error.HTTPError:
            break  # an HTTP answer, even an error, means it is up
        except OSError:
            threading.Event().wait(0.05)
    yield endpoint
    server.stop()
    for key, value in saved.items():
        if value is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = value


@pytest.fixture
def s3_bucket(moto_endpoint: str) -> str:
    name = f"oxidav-{uuid.uuid4().hex[:12]}"
    boto3.client("s3", endpoint_url=moto_endpoint, region_name="us-east-1").create_bucket(
        Bucket=name
    )
    return name


@pytest.fixture
def s3_store(moto_endpoint: str, s3_bucket: str) -> Iterator[tuple[S3BlobStore, RequestLog]]:
    """A bare ``S3BlobStore`` on a fresh bucket, and the log of the requests it sends."""
    store = S3BlobStore(s3_bucket, "blobs", endpoint_url=moto_endpoint, region="us-east-1")
    log = RequestLog()
    store.client.meta.events.register("before-send.s3", log)
    yield store, log
    store.close()


def _no_sleep(_seconds: float) -> None:
    return None


STACKS = ["local", "s3", "cache(retry(s3))", "encrypted(local)", "cache(encrypted(retry(s3)))"]


def _build_stack(name: str, request: pytest.FixtureRequest, tmp_path: Path) -> StoreUnderTest:
    log: RequestLog | None = None
    if "s3" in name:
        s3, log = request.getfixturevalue("s3_store")
        store: BlobStore = s3
        if "retry" in name:
            store = RetryingBlobStore(store, sleep=_no_sleep)
        if "encrypted" in name:
            store = EncryptedBlobStore(store, [KEY_A])
        if "cache" in name:
            store = CachedBlobStore(store, tmp_path / "cache", 64 << 20)
    else:
        store = LocalBlobStore(tmp_path / "blobs")
        if "encrypted" in name:
            store = EncryptedBlobStore(store, [KEY_A])
    return StoreUnderTest(name, store, log, cached=name.startswith("cache"))


@pytest.fixture(params=STACKS)
def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    """Every store and decorator stack of the conformance suite."""
    stack = _build_stack(request.param, request, tmp_path)
    yield stack
    stack.store.close()


@pytest.fixture(params=[s for s in STACKS if "s3" in s])
def s3_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    """The stacks that talk to S3 (their requests are counted)."""
    stack = _build_stack(request.param, request, tmp_path)
    yield stack
    stack.store.close()


@pytest.fixture(params=[s for s in STACKS if s.startswith("cache")])
def cached_stack(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreUnderTest]:
    """The stacks with a cache in front of S3."""
    stack = _build_stack(request.param, request, tmp_path)
    yield stack
    stack.store.close()


@pytest.fixture
def local_store(tmp_path: Path) -> LocalBlobStore:
    return LocalBlobStore(tmp_path / "blobs")


@pytest.fixture
def chain(database: Database, local_store: LocalBlobStore) -> BlobChain:
    """A ``BlobChain`` on a local store and a fresh database (SQLite and PostgreSQL)."""
    return BlobChain(database, local_store)
