"""``write_file``'s statements: the root, parent, target and quota read together (SQLite: one
statement in the ``BEGIN IMMEDIATE`` transaction; PostgreSQL: after the root row lock), and the
rules that read still enforces."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import delete

from oxidav.db import Database
from oxidav.db.models.tree import Node
from oxidav.tree import Conflict, IsAFolder, QuotaExceeded, make_folder, resolve, write_file
from oxidav.tree.errors import PreconditionFailed
from oxidav.tree.nodes import ROLL_UP_PREPARED_DEPTH
from tests.support.engine_events import recorded_statements
from tests.support.tree import CountingRefs, add_user, content


def statements(db: Database) -> Any:
    """The statements sent while the block runs, whitespace collapsed."""
    return recorded_statements(db.engine, lambda statement: " ".join(statement.split()))


def test_a_new_file_costs_three_statements_on_sqlite_four_on_postgresql(
    database: Database, user: int, refs: CountingRefs
) -> None:
    with database.write() as session:
        make_folder(session, user, "/d")
    with statements(database) as seen, database.write() as session:
        write_file(session, refs, user, "/d/new.txt", content("a", 10))
    kinds = [s.split()[0] for s in seen if not s.startswith(("BEGIN", "COMMIT"))]
    locks = ["SELECT"] if not database.is_sqlite else []
    # (root lock), root + parent + target + quota, the node row, the folders' roll-up
    assert kinds == [*locks, "SELECT", "INSERT", "UPDATE"]
    with statements(database) as seen, database.write() as session:
        write_file(session, refs, user, "/d/new.txt", content("b", 20))
    kinds = [s.split()[0] for s in seen if not s.startswith(("BEGIN", "COMMIT"))]
    assert kinds == [*locks, "SELECT", "UPDATE", "UPDATE"]
    assert refs.live() == {"m-b": 1}


def test_the_combined_read_keeps_every_rule(database: Database, refs: CountingRefs) -> None:
    user = add_user(database, quota=100)
    with database.write() as session:
        make_folder(session, user, "/d")
        write_file(session, refs, user, "/top.txt", content("t", 40))
        write_file(session, refs, user, "/d/f.txt", content("f", 40))
    with pytest.raises(QuotaExceeded), database.write() as session:
        write_file(session, refs, user, "/d/g.txt", content("g", 21))
    with database.write() as session:  # shrinking or replacing within the limit is fine
        write_file(session, refs, user, "/d/f.txt", content("f2", 60))
    with pytest.raises(Conflict), database.write() as session:
        write_file(session, refs, user, "/missing/x.txt", content("x", 1))
    with pytest.raises(IsAFolder), database.write() as session:
        write_file(session, refs, user, "/d", content("x", 1))
    with pytest.raises(PreconditionFailed), database.write() as session:
        write_file(session, refs, user, "/top.txt", content("x", 1), require_absent=True)
    with pytest.raises(PreconditionFailed), database.write() as session:
        write_file(session, refs, user, "/top.txt", content("x", 1), require_etag="nope")
    with database.read() as session:
        root = resolve(session, user, "")
        assert root is not None and root.size == 100


def test_a_missing_root_is_created_by_the_first_write(
    database: Database, refs: CountingRefs
) -> None:
    user = add_user(database)
    with database.write() as session:
        session.execute(delete(Node).where(Node.user_id == user))
    with database.write() as session:
        result = write_file(session, refs, user, "/first.txt", content("r", 5))
    assert result.created
    with database.read() as session:
        root = resolve(session, user, "")
        assert root is not None and root.size == 5


def test_the_same_content_again_keeps_its_one_reference(
    database: Database, user: int, refs: CountingRefs
) -> None:
    """A client re-uploading a file unchanged: no incref and decref of the same manifest (a
    new etag all the same: the version was written)."""
    with database.write() as session:
        first = write_file(session, refs, user, "/same.txt", content("s", 10)).node
    calls: list[str] = []
    incref, decref = refs.incref, refs.decref
    refs.incref = lambda s, h, n=1: (calls.append(f"+{h}"), incref(s, h, n))[1]  # type: ignore[method-assign]
    refs.decref = lambda s, h, n=1: (calls.append(f"-{h}"), decref(s, h, n))[1]  # type: ignore[method-assign]
    with database.write() as session:
        again = write_file(session, refs, user, "/same.txt", content("s", 10)).node
    assert calls == [] and refs.live() == {"m-s": 1}
    assert again.etag != first.etag and again.manifest_hash == "m-s"
    with database.write() as session:
        write_file(session, refs, user, "/same.txt", content("t", 12))
    assert calls == ["+m-t", "-m-s"] and refs.live() == {"m-t": 1}


@pytest.mark.parametrize("depth", [ROLL_UP_PREPARED_DEPTH - 1, ROLL_UP_PREPARED_DEPTH + 2])
def test_a_write_rolls_up_into_every_ancestor_at_any_depth(
    database: Database, user: int, refs: CountingRefs, depth: int
) -> None:
    """The roll-up runs as one prepared statement per depth, and through SQLAlchemy's
    expanding IN list beyond ``ROLL_UP_PREPARED_DEPTH``: both reach the root."""
    folders = [f"/{'/'.join(f'f{i}' for i in range(n + 1))}" for n in range(depth)]
    with database.write() as session:
        for folder in folders:
            make_folder(session, user, folder)
        etags = {path: resolve(session, user, path) for path in ["", *folders]}
    with database.write() as session:
        write_file(session, refs, user, f"{folders[-1]}/x.txt", content("x", 7))
    with database.read() as session:
        for path, before in etags.items():
            after = resolve(session, user, path)
            assert before is not None and after is not None
            assert after.etag != before.etag and after.size == before.size + 7
