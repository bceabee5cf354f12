"""The soak's own checks find what they look for: a leaked or a dropped content reference, a
file whose content changed behind the server's back, and the model's namespaces after MOVE,
DELETE, PUT and PROPPATCH."""

from __future__ import annotations

from sqlalchemy import select, update

from oxidav.db import Database
from oxidav.db.models.blobs import BlobChunk, BlobManifest
from oxidav.db.models.tree import Node
from tests.support.live import LiveServer
from tests.support.soak import model
from tests.support.soak.model import Entry
from tests.support.soak.references import reference_mismatches
from tests.support.soak.runner import Soak


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


def test_the_soak_notices_a_write_that_did_not_survive(env: dict[str, str]) -> None:
    """Between the kill and the restart two files swap contents behind the server's back (the
    references stay balanced): the check after the restart reports it."""

    def swap_two_files(_round: int) -> None:
        db = Database.from_url(env["OXIDAV_DATABASE_URL"])
        try:
            with db.write() as session:
                rows = session.execute(
                    select(Node.id, Node.manifest_hash, Node.content_hash, Node.size)
                    .where(Node.is_folder.is_(False), Node.trashed_at.is_(None))
                    .where(Node.path.startswith("/soak/"))
                    .order_by(Node.id)
                ).all()
                first, second = next(
                    (a, b) for a in rows for b in rows if a.content_hash != b.content_hash
                )
                for row, other in ((first, second), (second, first)):
                    session.execute(
                        update(Node)
                        .where(Node.id == row.id)
                        .values(
                            manifest_hash=other.manifest_hash,
                            content_hash=other.content_hash,
                            size=other.size,
                        )
                    )
        finally:
            db.dispose()

    runner = Soak(env, clients=2, rounds=1, seed=3)
    try:
        stats = runner.run(after_round=swap_two_files)
    finally:
        for server in runner.servers:
            if server.process.poll() is None:
                server.process.kill()
                server.process.wait()
    assert any("folder holds" in p for p in stats.problems), stats.problems
    db = Database.from_url(env["OXIDAV_DATABASE_URL"])
    try:
        assert reference_mismatches(db) == []  # the swap left the references balanced
    finally:
        db.dispose()
