"""500 chunk uploads to S3 (moto over HTTP, 10 ms injected per request), concurrency 8.

BEFORE: the naive put a decorator falls back to when it does not forward ``put_unsynced``:
``HEAD`` to ask whether the key exists, then ``PUT``. AFTER: ``put_unsynced`` through the
production stack ``RetryingBlobStore(S3BlobStore)``: one ``PUT``, no probe (content-addressed
keys make a re-PUT harmless). Both runs must leave the same 500 objects with the same bytes;
the run fails unless AFTER sends fewer requests and takes less time.

    python -m bench blobs_s3_put [--chunks 500] [--latency-ms 10] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import collections
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import blake3
import boto3
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from werkzeug.serving import make_server

from oxidav.blobs import BlobStore, CachedBlobStore, EncryptedBlobStore, RetryingBlobStore
from oxidav.blobs.s3 import S3BlobStore


class _Latency:
    """WSGI middleware: every request waits ``seconds`` first (a network round trip)."""

    def __init__(self, app: Any, seconds: float) -> None:
        self.app = app
        self.seconds = seconds

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Any:
        time.sleep(self.seconds)
        return self.app(environ, start_response)


@contextmanager
def moto_with_latency(seconds: float) -> Iterator[str]:
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    app = _Latency(DomainDispatcherApplication(create_backend_app), seconds)
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()


class Counter:
    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.lock = threading.Lock()

    def __call__(self, request: Any, **_kw: Any) -> None:
        with self.lock:
            self.counts[request.method] += 1


def naive_put(store: BlobStore) -> Callable[[str, bytes], None]:
    def put(key: str, data: bytes) -> None:
        if not store.exists(key):
            store.put(key, data)

    return put


def run(
    endpoint: str, bucket: str, chunks: list[bytes], concurrency: int, mode: str, tmp: Path
) -> tuple[float, collections.Counter[str]]:
    s3 = S3BlobStore(bucket, "blobs", endpoint_url=endpoint, region="us-east-1")
    counter = Counter()
    s3.client.meta.events.register("before-send.s3", counter)
    store: BlobStore = RetryingBlobStore(s3)
    check: BlobStore = s3
    if mode == "stack":
        check = store = EncryptedBlobStore(store, [os.urandom(32)])
        store = CachedBlobStore(store, tmp / bucket, 1 << 30)
    put = naive_put(store) if mode == "naive" else store.put_unsynced
    keys = [blake3.blake3(c).hexdigest() for c in chunks]
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(put, keys, chunks))
    store.sync(keys)
    elapsed = time.perf_counter() - started
    sent = collections.Counter(counter.counts)
    for key, data in zip(keys, chunks, strict=True):
        if check.get(key) != data:
            raise SystemExit(f"object {key} differs after the run")
    store.close()
    return elapsed, sent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench blobs_s3_put")
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--size", type=int, default=64 * 1024, help="bytes per chunk")
    parser.add_argument("--latency-ms", type=float, default=10.0)
    parser.add_argument("--concurrency", type=int, default=8)
    args = parser.parse_args(argv)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "bench")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "bench")
    chunks = [os.urandom(args.size) for _ in range(args.chunks)]
    with moto_with_latency(args.latency_ms / 1000) as endpoint, tempfile.TemporaryDirectory() as t:
        client = boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1")
        for bucket in ("before", "after", "stack"):
            client.create_bucket(Bucket=bucket)
        n = args.concurrency
        before, before_requests = run(endpoint, "before", chunks, n, "naive", Path(t))
        after, after_requests = run(endpoint, "after", chunks, n, "put_unsynced", Path(t))
        stack, stack_requests = run(endpoint, "stack", chunks, n, "stack", Path(t))
    print(
        f"{args.chunks} chunk puts of {args.size} bytes, {args.latency_ms:g} ms per request, "
        f"concurrency {args.concurrency}"
    )
    for name, seconds, counts in (
        ("BEFORE (HEAD + PUT)", before, before_requests),
        ("AFTER (put_unsynced)", after, after_requests),
        ("AFTER, full stack", stack, stack_requests),
    ):
        listing = ", ".join(f"{m} {n}" for m, n in sorted(counts.items()))
        print(
            f"{name:22s} {seconds * 1000:7.0f} ms   {sum(counts.values()):5d} requests ({listing})"
        )
    print(f"speed-up {before / after:.2f}x")
    print("(full stack: cache(encrypted(retry(s3))), every decorator forwards put_unsynced)")
    if after_requests["HEAD"] or stack_requests["HEAD"]:
        print("FAIL: AFTER sent HEAD requests")
        return 1
    if sum(after_requests.values()) >= sum(before_requests.values()):
        print("FAIL: AFTER does not send fewer requests")
        return 1
    if max(after, stack) >= before:
        print("FAIL: AFTER is not faster")
        return 1
    return 0
