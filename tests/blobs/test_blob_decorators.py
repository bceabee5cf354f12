"""Behaviour specific to each decorator and to the S3 store: retry policy, encryption format and
key rotation, cache bound and torn files, S3 request shapes and error translation."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
from collections.abc import Iterator, Sequence
from pathlib import Path

import blake3
import pytest
from botocore.exceptions import ClientError

from oxidav.blobs import (
    BlobIntegrityError,
    BlobNotFoundError,
    BlobStoreError,
    CachedBlobStore,
    EncryptedBlobStore,
    EncryptionKeyError,
    LocalBlobStore,
    RetryingBlobStore,
    TransientBlobStoreError,
)
from oxidav.blobs.encrypted import OVERHEAD, key_fingerprint
from oxidav.blobs.s3 import S3BlobStore, translate_error
from oxidav.blobs.store import READ_BLOCK
from tests.support.blobs import KEY_A, KEY_B, RequestLog


def key_of(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


class FlakyStore(LocalBlobStore):
    """A local store whose calls fail transiently ``failures`` times first."""

    def __init__(self, root: Path, failures: int) -> None:
        super().__init__(root)
        self.failures = failures
        self.calls = 0
        self.synced: list[Sequence[str]] = []

    def _maybe_fail(self) -> None:
        self.calls += 1
        if self.failures > 0:
            self.failures -= 1
            raise TransientBlobStoreError("503 slow down")

    def put_unsynced(self, key: str, data: bytes) -> None:
        self._maybe_fail()
        super().put_unsynced(key, data)

    def get(self, key: str) -> bytes:
        self._maybe_fail()
        return super().get(key)

    def sync(self, keys: Sequence[str]) -> None:
        self._maybe_fail()
        super().sync(keys)

    def get_range(self, key: str, start: int, end: int, block: int = READ_BLOCK) -> Iterator[bytes]:
        pieces = super().get_range(key, start, end, block)
        if self.failures <= 0:
            return pieces
        self.failures -= 1

        def broken() -> Iterator[bytes]:
            yield next(pieces)
            raise ConnectionError("reset by peer")

        return broken()


# -- retry --------------------------------------------------------------------------------


def test_retry_recovers_from_transient_failures(tmp_path: Path) -> None:
    delays: list[float] = []
    flaky = FlakyStore(tmp_path, failures=3)
    store = RetryingBlobStore(flaky, attempts=5, sleep=delays.append, jitter=lambda: 1.0)
    store.put_unsynced("abcd", b"data")
    assert delays == [0.05, 0.1, 0.2]  # exponential; jitter pinned to its maximum
    assert store.get("abcd") == b"data"


def test_retry_gives_up_after_attempts(tmp_path: Path) -> None:
    store = RetryingBlobStore(FlakyStore(tmp_path, failures=10), attempts=3, sleep=lambda _s: None)
    with pytest.raises(TransientBlobStoreError):
        store.put_unsynced("abcd", b"data")


def test_retry_does_not_retry_sync_or_permanent_errors(tmp_path: Path) -> None:
    flaky = FlakyStore(tmp_path, failures=0)
    store = RetryingBlobStore(flaky, sleep=lambda _s: None)
    store.put_unsynced("abcd", b"x")
    flaky.failures = 1
    with pytest.raises(TransientBlobStoreError):
        store.sync(["abcd"])  # a failed fsync surfaces
    calls = flaky.calls
    with pytest.raises(BlobNotFoundError):
        store.get("ffff")
    assert flaky.calls == calls + 1


def test_retry_resumes_broken_range_read(tmp_path: Path) -> None:
    data = os.urandom(10_000)
    flaky = FlakyStore(tmp_path, failures=0)
    flaky.put("abcd", data)
    flaky.failures = 2
    store = RetryingBlobStore(flaky, sleep=lambda _s: None)
    assert b"".join(store.get_range("abcd", 100, 9000, block=1000)) == data[100:9000]


def test_retry_backoff_is_capped(tmp_path: Path) -> None:
    delays: list[float] = []
    store = RetryingBlobStore(
        FlakyStore(tmp_path, failures=8),
        attempts=9,
        max_delay=0.3,
        sleep=delays.append,
        jitter=lambda: 1.0,
    )
    store.get_range  # noqa: B018 - attribute exists
    store.put_unsynced("abcd", b"x")
    assert max(delays) == 0.3


# -- encrypted ----------------------------------------------------------------------------


def test_encrypted_bytes_at_rest(tmp_path: Path) -> None:
    local = LocalBlobStore(tmp_path)
    store = EncryptedBlobStore(local, [KEY_A])
    data = b"secret " * 1000
    key = key_of(data)
    store.put(key, data)
    raw = local.get(key)
    assert b"secret" not in raw
    assert len(raw) == len(data) + OVERHEAD
    assert raw[:3] == b"OXE" and raw[3] == 1 and raw[4:12] == key_fingerprint(KEY_A)
    assert store.get(key) == data
    assert store.size(key) == len(data)


def test_key_rotation_first_key_writes_all_read(tmp_path: Path) -> None:
    local = LocalBlobStore(tmp_path)
    old = EncryptedBlobStore(local, [KEY_A])
    old_data = b"written under A"
    old.put(key_of(old_data), old_data)
    rotated = EncryptedBlobStore(local, [KEY_B, KEY_A])
    new_data = b"written under B"
    rotated.put(key_of(new_data), new_data)
    assert rotated.get(key_of(old_data)) == old_data
    assert rotated.get(key_of(new_data)) == new_data
    assert local.get(key_of(new_data))[4:12] == key_fingerprint(KEY_B)


def test_missing_key_is_a_clear_error(tmp_path: Path) -> None:
    local = LocalBlobStore(tmp_path)
    data = b"under A"
    EncryptedBlobStore(local, [KEY_A]).put(key_of(data), data)
    with pytest.raises(EncryptionKeyError, match=key_fingerprint(KEY_A).hex()):
        EncryptedBlobStore(local, [KEY_B]).get(key_of(data))


def test_tampering_and_moving_fail_authentication(tmp_path: Path) -> None:
    local = LocalBlobStore(tmp_path)
    store = EncryptedBlobStore(local, [KEY_A])
    data = b"precious"
    key = key_of(data)
    store.put(key, data)
    raw = bytearray(local.get(key))
    raw[-1] ^= 1
    local.put(key, bytes(raw))
    with pytest.raises(BlobIntegrityError, match="authentication"):
        store.get(key)
    # A valid ciphertext stored under another key name does not decrypt either.
    store.put(key, data)
    local.put("abcdef", local.get(key))
    with pytest.raises(BlobIntegrityError):
        store.get("abcdef")


def test_legacy_plaintext_accepted_only_when_hash_matches(tmp_path: Path) -> None:
    local = LocalBlobStore(tmp_path)
    data = b"OXE starts like a header but was stored before encryption"
    local.put(key_of(data), data)
    store = EncryptedBlobStore(local, [KEY_A])
    assert store.get(key_of(data)) == data
    local.put("abcdef", b"garbage")
    with pytest.raises(BlobIntegrityError):
        store.get("abcdef")


def test_encrypted_rejects_bad_keys(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        EncryptedBlobStore(LocalBlobStore(tmp_path), [])
    with pytest.raises(ValueError):
        EncryptedBlobStore(LocalBlobStore(tmp_path), [b"short"])


# -- cache --------------------------------------------------------------------------------


def test_cache_eviction_keeps_the_bound(tmp_path: Path) -> None:
    inner = LocalBlobStore(tmp_path / "inner")
    cache = CachedBlobStore(inner, tmp_path / "cache", max_bytes=100_000)
    blobs = [os.urandom(20_000) for _ in range(10)]
    for data in blobs:
        cache.put(key_of(data), data)
        assert cache.cached_bytes <= 100_000
    on_disk = sum(p.stat().st_size for p in (tmp_path / "cache").glob("??/*"))
    assert on_disk == cache.cached_bytes <= 100_000
    # The oldest were evicted, the newest are hits.
    hits = cache.hits
    assert cache.get(key_of(blobs[-1])) == blobs[-1]
    assert cache.hits == hits + 1
    assert cache.get(key_of(blobs[0])) == blobs[0]  # a miss, fetched from the inner store
    assert cache.misses == 1


def test_cache_lru_order(tmp_path: Path) -> None:
    inner = LocalBlobStore(tmp_path / "inner")
    cache = CachedBlobStore(inner, tmp_path / "cache", max_bytes=3 * (1000 + 32))
    a, b, c, d = (os.urandom(1000) for _ in range(4))
    for data in (a, b, c):
        cache.put(key_of(data), data)
    cache.get(key_of(a))  # a is now the most recently used
    cache.put(key_of(d), d)  # evicts b
    misses = cache.misses
    cache.get(key_of(a))
    cache.get(key_of(c))
    assert cache.misses == misses
    cache.get(key_of(b))
    assert cache.misses == misses + 1


def test_cache_skips_blobs_larger_than_the_bound(tmp_path: Path) -> None:
    cache = CachedBlobStore(LocalBlobStore(tmp_path / "inner"), tmp_path / "cache", 1000)
    data = os.urandom(5000)
    cache.put(key_of(data), data)
    assert cache.cached_bytes == 0
    assert cache.get(key_of(data)) == data


def test_cache_torn_file_is_a_miss(tmp_path: Path) -> None:
    inner = LocalBlobStore(tmp_path / "inner")
    cache = CachedBlobStore(inner, tmp_path / "cache", 1 << 20)
    data = os.urandom(5000)
    cache.put(key_of(data), data)
    path = tmp_path / "cache" / key_of(data)[:2] / key_of(data)
    path.write_bytes(path.read_bytes()[:100])  # torn by a crash
    assert cache.get(key_of(data)) == data
    assert cache.misses == 1


def test_cache_index_survives_restart(tmp_path: Path) -> None:
    inner = LocalBlobStore(tmp_path / "inner")
    data = os.urandom(5000)
    CachedBlobStore(inner, tmp_path / "cache", 1 << 20).put(key_of(data), data)
    again = CachedBlobStore(inner, tmp_path / "cache", 1 << 20)
    assert again.cached_bytes == 5000 + 32
    assert again.get(key_of(data)) == data and again.hits == 1


def test_cache_delete_invalidates(tmp_path: Path) -> None:
    cache = CachedBlobStore(LocalBlobStore(tmp_path / "inner"), tmp_path / "cache", 1 << 20)
    data = b"short lived"
    cache.put(key_of(data), data)
    cache.delete(key_of(data))
    assert not cache.exists(key_of(data))
    with pytest.raises(BlobNotFoundError):
        cache.get(key_of(data))


def test_cache_miss_error_reaches_every_waiter(tmp_path: Path) -> None:
    cache = CachedBlobStore(LocalBlobStore(tmp_path / "inner"), tmp_path / "cache", 1 << 20)
    with pytest.raises(BlobNotFoundError):
        cache.get("abcd")
    with pytest.raises(BlobNotFoundError):
        cache.get("abcd")  # not remembered as in flight


# -- S3 -------------------------------------------------------------------------------------


def test_s3_put_sends_content_md5_and_ranged_get(s3_store: tuple[S3BlobStore, RequestLog]) -> None:
    store, _log = s3_store
    headers: list[dict[str, str]] = []

    def capture(request: object, **_kw: object) -> None:
        headers.append(dict(request.headers))  # type: ignore[attr-defined]

    store.client.meta.events.register("before-send.s3", capture)
    data = os.urandom(4096)
    store.put_unsynced(key_of(data), data)
    # (moto stores without checking Content-MD5; real S3 answers BadDigest on a mismatch.)
    md5 = base64.b64encode(hashlib.md5(data).digest()).decode()
    assert headers[-1]["Content-MD5"] in (md5, md5.encode())
    assert b"".join(store.get_range(key_of(data), 10, 20)) == data[10:20]
    assert headers[-1]["Range"] in ("bytes=10-19", b"bytes=10-19")


def test_s3_key_layout(s3_store: tuple[S3BlobStore, RequestLog]) -> None:
    store, _log = s3_store
    store.put("abcdef12", b"x")
    listed = store.client.list_objects_v2(Bucket=store.bucket)["Contents"]
    assert [o["Key"] for o in listed] == ["blobs/ab/abcdef12"]


def test_s3_unreachable_is_transient_and_retried(moto_endpoint: str) -> None:  # credentials
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    s3 = S3BlobStore(
        "b", endpoint_url=f"http://127.0.0.1:{port}", region="us-east-1", connect_timeout=1
    )
    attempts: list[float] = []
    store = RetryingBlobStore(s3, attempts=3, sleep=attempts.append)
    with pytest.raises(TransientBlobStoreError):
        store.get("abcd")
    assert len(attempts) == 2
    with pytest.raises(BlobStoreError):
        s3.health_check()


def _client_error(status: int, code: str) -> ClientError:
    return ClientError(
        {"Error": {"Code": code, "Message": "m"}, "ResponseMetadata": {"HTTPStatusCode": status}},
        "GetObject",
    )


@pytest.mark.parametrize(
    ("status", "code", "expected"),
    [
        (404, "NoSuchKey", BlobNotFoundError),
        (500, "InternalError", TransientBlobStoreError),
        (503, "SlowDown", TransientBlobStoreError),
        (429, "TooManyRequests", TransientBlobStoreError),
        (403, "AccessDenied", BlobStoreError),
    ],
)
def test_s3_error_translation(status: int, code: str, expected: type[Exception]) -> None:
    error = translate_error(_client_error(status, code), "abcd")
    assert type(error) is expected
