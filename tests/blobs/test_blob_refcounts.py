"""Manifest references taken and dropped in the caller's transaction; concat (SQLite + PG)."""

from __future__ import annotations

import blake3
import pytest

from oxidav.blobs import BlobChain, ManifestNotFoundError, RefcountError
from oxidav.db import Database
from tests.support.blobs import RecordingStore, chunk_refcounts, entry_count, pieces, random_bytes


def test_new_manifest_starts_unreferenced(chain: BlobChain) -> None:
    stored = chain.ingest([b"abc"])
    assert chain.refcount(stored.manifest_hash) == 0


def test_incref_decref_in_callers_transaction(chain: BlobChain, database: Database) -> None:
    stored = chain.ingest([b"content"])
    with database.write() as session:
        chain.incref(session, stored.manifest_hash)
        chain.incref(session, stored.manifest_hash, 2)
    assert chain.refcount(stored.manifest_hash) == 3
    with database.write() as session:
        chain.decref(session, stored.manifest_hash, 3)
    assert chain.refcount(stored.manifest_hash) == 0


def test_rolled_back_transaction_keeps_refcount(chain: BlobChain, database: Database) -> None:
    stored = chain.ingest([b"content"])
    with pytest.raises(RuntimeError), database.write() as session:
        chain.incref(session, stored.manifest_hash)
        raise RuntimeError("the node insert failed")
    assert chain.refcount(stored.manifest_hash) == 0


def test_unknown_manifest_and_underflow(chain: BlobChain, database: Database) -> None:
    with pytest.raises(ManifestNotFoundError), database.write() as session:
        chain.incref(session, "0" * 64)
    with pytest.raises(ManifestNotFoundError), database.write() as session:
        chain.decref(session, "0" * 64)
    with pytest.raises(ManifestNotFoundError):
        chain.open("0" * 64)
    stored = chain.ingest([b"x"])
    with pytest.raises(RefcountError), database.write() as session:
        chain.decref(session, stored.manifest_hash)
    with pytest.raises(ValueError), database.write() as session:
        chain.incref(session, stored.manifest_hash, -1)


def test_chunk_refcounts_count_manifest_entries(chain: BlobChain, database: Database) -> None:
    a = random_bytes(2_000_000, seed=1)
    b = a + random_bytes(500_000, seed=2)
    chain.ingest(pieces(a))
    chain.ingest(pieces(b))
    refs = chunk_refcounts(database)
    # All but the last chunk of a are shared with b: counted twice.
    assert sorted(set(refs.values())) == [1, 2]
    assert sum(refs.values()) == entry_count(database)


def test_concat_copies_no_bytes(database: Database, local_store) -> None:
    store = RecordingStore(local_store)
    chain = BlobChain(database, store)
    parts = [random_bytes(1_500_000, seed=s) for s in (1, 2, 3)]
    stored = [chain.ingest(pieces(p)) for p in parts]
    store.reset()
    whole = chain.concat([s.manifest_hash for s in stored])
    assert store.puts == []
    data = b"".join(parts)
    assert whole.size == len(data)
    assert whole.content_hash == blake3.blake3(data).hexdigest()
    with chain.open(whole.manifest_hash) as reader:
        assert reader.read() == data
    assert chain.refcount(whole.manifest_hash) == 0
    assert sum(chunk_refcounts(database).values()) == entry_count(database)
    # Same parts, same order: the same manifest.
    assert chain.concat([s.manifest_hash for s in stored]) == whole
    # A part used twice.
    twice = chain.concat([stored[0].manifest_hash, stored[0].manifest_hash])
    with chain.open(twice.manifest_hash) as reader:
        assert reader.read() == parts[0] * 2


def test_concat_edge_cases(chain: BlobChain) -> None:
    one = chain.ingest([b"only"])
    assert chain.concat([one.manifest_hash]) == one
    empty = chain.concat([])
    assert empty.size == 0 and empty.content_hash == blake3.blake3(b"").hexdigest()
    with pytest.raises(ManifestNotFoundError):
        chain.concat([one.manifest_hash, "f" * 64])
