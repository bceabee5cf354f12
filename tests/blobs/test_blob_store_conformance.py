"""One contract for every BlobStore: local, S3 over real HTTP (moto), and the decorator stacks
cache(retry(s3)), encrypted(local), cache(encrypted(retry(s3)))."""

from __future__ import annotations

import os
import threading

import blake3
import pytest

from oxidav.blobs import BlobNotFoundError, BlobStore, CachedBlobStore
from tests.support.blobs import StoreUnderTest


def key_of(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


def test_is_a_blob_store(any_store: StoreUnderTest) -> None:
    assert isinstance(any_store.store, BlobStore)
    assert any_store.store.concurrency >= 1


def test_put_get_roundtrip(any_store: StoreUnderTest) -> None:
    store = any_store.store
    data = os.urandom(300_000)
    key = key_of(data)
    assert not store.exists(key)
    store.put(key, data)
    assert store.exists(key)
    assert store.get(key) == data
    assert store.size(key) == len(data)


def test_empty_blob(any_store: StoreUnderTest) -> None:
    store = any_store.store
    key = key_of(b"")
    store.put(key, b"")
    assert store.get(key) == b""
    assert store.size(key) == 0
    assert b"".join(store.get_range(key, 0, 10)) == b""


def test_put_unsynced_then_sync(any_store: StoreUnderTest) -> None:
    store = any_store.store
    blobs = [os.urandom(1000 + i) for i in range(5)]
    keys = [key_of(b) for b in blobs]
    for key, data in zip(keys, blobs, strict=True):
        store.put_unsynced(key, data)
    store.sync(keys)
    for key, data in zip(keys, blobs, strict=True):
        assert store.get(key) == data


def test_rewrite_same_key_is_idempotent(any_store: StoreUnderTest) -> None:
    store = any_store.store
    data = b"same bytes" * 100
    key = key_of(data)
    store.put(key, data)
    store.put_unsynced(key, data)
    store.sync([key])
    assert store.get(key) == data
    assert list(store.iter_keys()).count(key) == 1


def test_missing_key(any_store: StoreUnderTest) -> None:
    store = any_store.store
    key = "ab" * 32
    assert not store.exists(key)
    with pytest.raises(BlobNotFoundError):
        store.get(key)
    with pytest.raises(BlobNotFoundError):
        store.size(key)
    with pytest.raises(BlobNotFoundError):
        store.get_range(key, 0, 10)  # raises at call time, not at the first next()
    store.delete(key)  # deleting a missing key is fine


def test_get_range(any_store: StoreUnderTest) -> None:
    store = any_store.store
    data = os.urandom(100_000)
    key = key_of(data)
    store.put(key, data)
    assert b"".join(store.get_range(key, 0, len(data))) == data
    assert b"".join(store.get_range(key, 10, 20)) == data[10:20]
    assert b"".join(store.get_range(key, 99_990, 200_000)) == data[99_990:]
    assert b"".join(store.get_range(key, 5, 5)) == b""
    assert b"".join(store.get_range(key, 100_000, 100_010)) == b""
    pieces = list(store.get_range(key, 0, len(data), block=4096))
    assert all(len(p) <= 4096 for p in pieces)
    assert b"".join(pieces) == data
    with pytest.raises(ValueError):
        store.get_range(key, 10, 5)


def test_delete(any_store: StoreUnderTest) -> None:
    store = any_store.store
    data = b"to be deleted"
    key = key_of(data)
    store.put(key, data)
    store.delete(key)
    assert not store.exists(key)
    with pytest.raises(BlobNotFoundError):
        store.get(key)


def test_iter_keys(any_store: StoreUnderTest) -> None:
    store = any_store.store
    keys = set()
    for i in range(20):
        data = f"blob {i}".encode()
        keys.add(key_of(data))
        store.put_unsynced(key_of(data), data)
    store.sync(sorted(keys))
    assert set(store.iter_keys()) == keys


def test_health_check(any_store: StoreUnderTest) -> None:
    any_store.store.health_check()


def test_invalid_keys_rejected(any_store: StoreUnderTest) -> None:
    for bad in ("../etc/passwd", "ABCDEF", "xyz", "", "a/b"):
        with pytest.raises(ValueError):
            any_store.store.put(bad, b"x")


def test_concurrent_puts_and_gets(any_store: StoreUnderTest) -> None:
    store = any_store.store
    blobs = [os.urandom(2000) for _ in range(32)]
    errors: list[BaseException] = []

    def work(data: bytes) -> None:
        try:
            store.put_unsynced(key_of(data), data)
            assert store.get(key_of(data)) == data
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(b,)) for b in blobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    store.sync([key_of(b) for b in blobs])


# -- request accounting on S3 (real HTTP) ----------------------------------------------------


def test_unsynced_puts_send_no_head(s3_stack: StoreUnderTest) -> None:
    any_store = s3_stack
    assert any_store.requests is not None
    log = any_store.requests
    log.reset()
    blobs = [os.urandom(5000 + i) for i in range(10)]
    for data in blobs:
        any_store.store.put_unsynced(key_of(data), data)
    any_store.store.sync([key_of(b) for b in blobs])
    assert log["HEAD"] == 0
    assert log["PUT"] == 10
    assert log["GET"] == 0


def test_cached_read_of_written_chunk_sends_no_get(cached_stack: StoreUnderTest) -> None:
    any_store = cached_stack
    assert any_store.requests is not None
    data = os.urandom(50_000)
    any_store.store.put_unsynced(key_of(data), data)
    any_store.requests.reset()
    assert any_store.store.get(key_of(data)) == data
    assert b"".join(any_store.store.get_range(key_of(data), 100, 200)) == data[100:200]
    assert any_store.store.exists(key_of(data))
    assert any_store.store.size(key_of(data)) == len(data)
    assert sum(any_store.requests.counts.values()) == 0


def test_cold_miss_herd_sends_one_get(cached_stack: StoreUnderTest) -> None:
    any_store = cached_stack
    assert any_store.requests is not None
    store = any_store.store
    assert isinstance(store, CachedBlobStore)
    data = os.urandom(200_000)
    key = key_of(data)
    store.inner.put(key, data)  # written past the cache: the cache is cold
    any_store.requests.reset()
    barrier = threading.Barrier(64)
    results: list[bytes] = []
    lock = threading.Lock()

    def read() -> None:
        barrier.wait()
        got = store.get(key)
        with lock:
            results.append(got)

    threads = [threading.Thread(target=read) for _ in range(64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 64 and all(r == data for r in results)
    assert any_store.requests["GET"] == 1
