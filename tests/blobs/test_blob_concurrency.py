"""Concurrent ingests of overlapping contents, and a gc running beside them (SQLite + PG)."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from sqlalchemy import update

from oxidav.blobs import BlobChain, ManifestNotFoundError, StoredContent
from oxidav.blobs.fsck import check
from oxidav.blobs.gc import collect_garbage
from oxidav.db import Database, utcnow
from oxidav.db.models.blobs import BlobManifest
from tests.support.blobs import chunk_refcounts, entry_count, pieces, random_bytes

SHARED = random_bytes(4_000_000, seed=30)


def _run_threads(targets: list[threading.Thread]) -> None:
    for t in targets:
        t.start()
    for t in targets:
        t.join()


def test_concurrent_overlapping_ingests(chain: BlobChain, database: Database, local_store) -> None:
    contents = [SHARED + random_bytes(300_000, seed=i) for i in range(4)] + [SHARED, SHARED]
    results: list[StoredContent | BaseException] = [None] * len(contents)  # type: ignore[list-item]

    def ingest(i: int) -> None:
        try:
            stored = chain.ingest(pieces(contents[i]))
            with database.write() as session:
                chain.incref(session, stored.manifest_hash)
            results[i] = stored
        except BaseException as exc:  # reported below
            results[i] = exc

    _run_threads([threading.Thread(target=ingest, args=(i,)) for i in range(len(contents))])
    assert not [r for r in results if isinstance(r, BaseException)], results
    stored = [r for r in results if isinstance(r, StoredContent)]
    assert stored[4].manifest_hash == stored[5].manifest_hash
    assert chain.refcount(stored[4].manifest_hash) == 2
    for content, s in zip(contents, stored, strict=True):
        with chain.open(s.manifest_hash) as reader:
            assert reader.read() == content
    assert sum(chunk_refcounts(database).values()) == entry_count(database)
    report = check(database, local_store, deep=True)
    assert report.clean, list(report.lines())


def test_gc_beside_ingests_loses_nothing(chain: BlobChain, database: Database, local_store) -> None:
    # Garbage (unreferenced for two hours) that shares chunks with what is being ingested,
    # collected while the ingests run.
    garbage = chain.ingest(pieces(SHARED))
    assert chain.refcount(garbage.manifest_hash) == 0
    with database.write() as session:
        session.execute(
            update(BlobManifest)
            .where(BlobManifest.hash == garbage.manifest_hash)
            .values(orphaned_at=utcnow() - timedelta(hours=2))
        )
    contents = [SHARED + random_bytes(200_000, seed=40 + i) for i in range(3)]
    stored: list[StoredContent] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def ingest(content: bytes) -> None:
        try:
            s = chain.ingest(pieces(content))
            with database.write() as session:
                chain.incref(session, s.manifest_hash)
            with lock:
                stored.append(s)
        except BaseException as exc:
            errors.append(exc)

    def gc() -> None:
        try:
            for _ in range(3):
                collect_garbage(database, local_store, 3600)
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=ingest, args=(c,)) for c in contents]
    threads.append(threading.Thread(target=gc))
    _run_threads(threads)
    assert not errors, errors
    for s in stored:
        with chain.open(s.manifest_hash) as reader:
            assert reader.read() in contents
    assert len(stored) == 3
    report = check(database, local_store, deep=True)
    assert not report.missing and not report.corrupt and not report.refcount_mismatches
    with pytest.raises(ManifestNotFoundError):
        chain.stat(garbage.manifest_hash)  # collected
