"""Removing a user releases their content references, so gc frees exactly their content
(SQLite + PostgreSQL)."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlalchemy import func, select

from oxidav.authz.authn import accounts
from oxidav.blobs import BlobChain, LocalBlobStore, StoredContent
from oxidav.blobs.gc import collect_garbage
from oxidav.db import Database
from oxidav.db.models.nextcloud import UploadSession
from oxidav.db.models.tree import Node
from oxidav.db.models.users import User
from oxidav.nextcloud.uploads.sessions import create_session, record_chunk
from oxidav.tree import resolve, trash_node, write_file
from oxidav.user_removal import remove_user


def _bytes(n: int, seed: int) -> bytes:
    return random.Random(seed).randbytes(n)


def _put(db: Database, chain: BlobChain, user: int, path: str, data: bytes) -> StoredContent:
    stored = chain.ingest([data])
    with db.write() as session:
        write_file(session, chain, user, path, stored)
    return stored


def test_remove_user_releases_files_trash_and_uploads(database: Database, tmp_path: Path) -> None:
    store = LocalBlobStore(tmp_path / "blobs")
    chain = BlobChain(database, store)
    alice = accounts.create_user(database, "alice", "pw")
    bob = accounts.create_user(database, "bob", "pw")
    shared_data = _bytes(50_000, 1)
    shared = _put(database, chain, bob, "/copy.bin", shared_data)
    kept_keys = set(store.iter_keys())

    assert _put(database, chain, alice, "/shared.bin", shared_data) == shared
    _put(database, chain, alice, "/again.bin", shared_data)
    own = _put(database, chain, alice, "/own.bin", _bytes(30_000, 2))
    gone = _put(database, chain, alice, "/gone.bin", _bytes(20_000, 3))
    with database.write() as session:
        trash_node(session, alice, "/gone.bin")
    upload = create_session(database, alice, "transfer-1")
    part = chain.ingest([_bytes(40_000, 4)])
    record_chunk(database, chain, upload.id, "00001", part)
    record_chunk(database, chain, upload.id, "00002", shared)  # a chunk shares content too
    assert chain.refcount(shared.manifest_hash) == 4
    unique = {own.manifest_hash, gone.manifest_hash, part.manifest_hash}
    assert len(unique) == 3 and set(store.iter_keys()) > kept_keys

    report = remove_user(database, chain, "alice")
    assert (report.user_id, report.nodes, report.upload_sessions) == (alice, 5, 1)

    assert chain.refcount(shared.manifest_hash) == 1
    assert all(chain.refcount(h) == 0 for h in unique)
    with database.read() as session:
        assert session.scalar(select(User.id).where(User.username == "alice")) is None
        for column in (Node.user_id, UploadSession.user_id):
            count = select(func.count()).where(column == alice)
            assert session.scalar(count) == 0
        node = resolve(session, bob, "/copy.bin")
    assert node is not None and node.manifest_hash == shared.manifest_hash

    before_gc = set(store.iter_keys())
    gc = collect_garbage(database, store, 0)
    assert gc.manifests_removed == 3
    assert set(store.iter_keys()) == kept_keys
    assert gc.chunks_removed == len(before_gc - kept_keys)
    with chain.open(shared.manifest_hash) as reader:
        assert reader.read() == shared_data


def test_remove_unknown_user(database: Database, tmp_path: Path) -> None:
    chain = BlobChain(database, LocalBlobStore(tmp_path / "blobs"))
    with pytest.raises(accounts.AccountError):
        remove_user(database, chain, "nobody")


def test_remove_user_drops_their_locks(database: Database, tmp_path: Path) -> None:
    from oxidav.tree.locks import create_lock, list_locks

    accounts.create_user(database, "alice", "secret")
    accounts.create_user(database, "bob", "secret")
    lock = {
        "type": "write",
        "scope": "exclusive",
        "depth": "0",
        "owner": b"",
        "timeout": 60,
        "principal": "alice",
    }
    with database.write() as session:
        create_lock(session, "/remote.php/dav/files/alice/doc.txt", dict(lock))
        create_lock(session, "/remote.php/dav/files/bob/doc.txt", {**lock, "principal": "bob"})
    remove_user(database, BlobChain(database, LocalBlobStore(tmp_path / "blobs")), "alice")
    with database.read() as session:
        roots = [
            found["root"]
            for found in list_locks(session, "/", include_root=True, include_children=True)
        ]
    assert roots == ["/remote.php/dav/files/bob/doc.txt"]
