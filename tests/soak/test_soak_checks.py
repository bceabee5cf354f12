"""The soak's own checks find what they look for: a leaked or a dropped content reference, and
the model's namespaces after MOVE, DELETE, PUT and PROPPATCH."""

from __future__ import annotations

from sqlalchemy import select, update

from oxidav.db.models.blobs import BlobChunk, BlobManifest
from oxidav.db.models.tree import Node
from tests.support.live import LiveServer

from . import model
from .model import Entry
from .references import reference_mismatches


def test_reference_mismatches_find_a_leaked_and_a_dropped_reference(
    live_server: LiveServer,
) -> None:
    assert live_server.services is not None
    db = live_server.services.db
    for name, size in (("small.txt", 10), ("large.bin", 300_000)):
        body = bytes(range(256)) * (size // 256 + 1)
        assert (
            live_server.request("PUT", f"/remote.php/dav/files/alice/{name}", body[:size]).status
            == 201
        )
    assert reference_mismatches(db) == []
    with db.write() as session:
        hashes = [
            str(h)
            for h in session.execute(
                select(Node.manifest_hash).where(Node.manifest_hash.is_not(None))
            ).scalars()
        ]
        assert len(hashes) == 2
        for table, column in (
            (BlobManifest, BlobManifest.refcount),
            (BlobChunk, BlobChunk.content_refs),
        ):
            session.execute(
                update(table).where(table.hash == hashes[0]).values({column: column + 1})
            )
            session.execute(
                update(table).where(table.hash == hashes[1]).values({column: column - 1})
            )
    problems = reference_mismatches(db)
    assert len(problems) == 2
    assert any(hashes[0] in p and "counts 2 reference(s) but 1 are held" in p for p in problems)
    assert any(hashes[1] in p and "counts 0 reference(s) but 1 are held" in p for p in problems)


def test_model_operations() -> None:
    ns = model.mkcol({}, "d0")
    ns = model.put(ns, "d0/g0", "aa")
    ns = model.proppatch(ns, "d0/g0", "v1")
    ns = model.put(ns, "d0/g0", "bb")  # an overwrite keeps the property
    assert ns == {"d0": Entry(True), "d0/g0": Entry(False, "bb", "v1")}
    ns = model.put(model.mkcol(ns, "d1"), "d1/g1", "cc")
    moved = model.move(ns, "d0", "d1")  # replaces d1's subtree
    assert moved == {"d1": Entry(True), "d1/g0": Entry(False, "bb", "v1")}
    assert model.remove(moved, "d1") == {}
    assert model.move(ns, "d0/g0", "f0")["f0"] == Entry(False, "bb", "v1")
