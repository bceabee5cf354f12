"""The whole chain (ingest, read, dedup, gc) on every store stack, SQLite and PostgreSQL."""

from __future__ import annotations

import random

import pytest

from oxidav.blobs import BlobChain
from oxidav.blobs.gc import collect_garbage
from oxidav.db import Database
from tests.support.blobs import StoreUnderTest, pieces, random_bytes


@pytest.fixture
def stack_chain(any_store: StoreUnderTest, database: Database) -> BlobChain:
    return BlobChain(database, any_store.store)


def test_ingest_read_dedup_gc(stack_chain: BlobChain, any_store: StoreUnderTest) -> None:
    data = random_bytes(20_000_000, seed=21)
    log = any_store.requests
    if log is not None:
        log.reset()
    stored = stack_chain.ingest(pieces(data, 1 << 20))
    if log is not None:
        assert log["HEAD"] == 0  # no existence probe before any PUT
        assert log["PUT"] == len(list(any_store.store.iter_keys()))
        log.reset()
    with stack_chain.open(stored.manifest_hash) as reader:
        assert b"".join(reader.iter_range(0, stored.size, 1 << 20)) == data
        reader.seek(12_345_678)
        assert reader.read(1000) == data[12_345_678:12_346_678]
        rng = random.Random(8)
        for _ in range(20):  # small Range GETs: partial chunk reads on every stack
            a = rng.randrange(len(data) - 70_000)
            assert b"".join(reader.iter_range(a, a + 65_536, 16_384)) == data[a : a + 65_536]
        reader.seek(0)
        out = bytearray()
        while piece := reader.read(300_000):  # sequential reads: read-ahead on remote stores
            out += piece
        assert out == data
    if log is not None and any_store.cached:
        assert log["GET"] == 0  # written through the cache
    again = stack_chain.ingest(pieces(data, 1 << 20))
    assert again == stored
    if log is not None:
        assert log["PUT"] == 0
    report = collect_garbage(stack_chain.db, any_store.store, 0)
    assert report.manifests_removed == 1
    assert list(any_store.store.iter_keys()) == []
