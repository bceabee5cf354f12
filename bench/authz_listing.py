"""A recipient lists a shared folder of N files: per-file vs per-folder authorization.

bob holds one grant, on alice's ``/Shared``; he lists ``/Shared/Trips/2024/Photos`` (N files).
carol holds one grant, directly on one of those files. For each of them:

- BEFORE (per-file decision): every file is decided on its own, with nothing shared between
  files (the engine with caching off, one fresh context per file): an ancestor walk and a
  grant lookup per file;
- AFTER (per-folder decision): one ``filter`` call; the folder's decision is made once and
  shared by its children (cold: empty caches), then the same listing again in a new request
  (warm).

Counts the SELECTs the authorization issued and its wall time (best of ``--repeat``). Exits
non-zero unless both give identical decisions, AFTER issues fewer queries and takes less time,
and the warm listing costs at most the one revocation check.

    python -m bench authz_listing [--files 1000] [--repeat 3] [--db-url URL]
"""

from __future__ import annotations

import argparse
import secrets
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event, insert

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants import store as grants
from oxidav.authz.grants.decision import Decision
from oxidav.authz.grants.engine import GrantEngine
from oxidav.authz.grants.resources import Resource
from oxidav.authz.grants.roles import Action, Role
from oxidav.authz.grants.store import Subject
from oxidav.db import Database
from oxidav.db.migrate import upgrade
from oxidav.db.models.users import User
from oxidav.tree import ensure_root, list_children, make_folder, resolve, write_file

FOLDER = "/Shared/Trips/2024/Photos"


class _NoRefs:
    def incref(self, session: Any, manifest_hash: str, n: int = 1) -> None: ...

    def decref(self, session: Any, manifest_hash: str, n: int = 1) -> None: ...


def _user(db: Database, name: str) -> Principal:
    username = f"{name}-{secrets.token_hex(4)}"
    with db.write() as s:
        uid = s.execute(
            insert(User).values(username=username, password_hash="x").returning(User.id)
        ).scalar_one()
    ensure_root(db, int(uid))
    return Principal(int(uid), username)


def setup(db: Database, files: int) -> tuple[Principal, Principal, list[Resource]]:
    alice, bob, carol = (_user(db, n) for n in ("alice", "bob", "carol"))
    with db.write() as s:
        for path in ("/Shared", "/Shared/Trips", "/Shared/Trips/2024", FOLDER):
            make_folder(s, alice.user_id, path)
        for i in range(files):
            write_file(s, _NoRefs(), alice.user_id, f"{FOLDER}/IMG_{i:05}.jpg", None)
    with db.read() as s:
        shared = resolve(s, alice.user_id, "/Shared")
        folder = resolve(s, alice.user_id, FOLDER)
        assert shared is not None and folder is not None
        listing = [Resource.node(n) for n in list_children(s, folder.id)]
    with db.write() as s:
        grants.grant(s, Subject.user(bob.user_id), Resource.node(shared), Role.VIEWER)
        grants.grant(s, Subject.user(carol.user_id), listing[len(listing) // 2], Role.EDITOR)
    return bob, carol, listing


@contextmanager
def counting(db: Database) -> Iterator[list[str]]:
    statements: list[str] = []

    def on_execute(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        if statement.lstrip().upper().startswith(("SELECT", "WITH")):
            statements.append(statement)

    event.listen(db.engine, "before_cursor_execute", on_execute)
    try:
        yield statements
    finally:
        event.remove(db.engine, "before_cursor_execute", on_execute)


Run = Callable[[], list[Decision]]


def measure(db: Database, run: Run, repeat: int) -> tuple[list[Decision], int, float]:
    """(decisions, SELECTs of one run, best wall time)."""
    best = float("inf")
    decisions: list[Decision] = []
    queries = 0
    for _ in range(repeat):
        with counting(db) as statements:
            started = time.perf_counter()
            decisions = run()
            best = min(best, time.perf_counter() - started)
        queries = len(statements)
    return decisions, queries, best


def compare(db: Database, who: Principal, listing: list[Resource], repeat: int) -> bool:
    def before() -> list[Decision]:
        engine = GrantEngine(db, ttl=0)  # nothing shared between files
        return [engine.check(who, Action.READ, resource) for resource in listing]

    def after_cold() -> list[Decision]:
        return GrantEngine(db).filter(who, Action.READ, listing)

    warm_engine = GrantEngine(db)
    warm_engine.filter(who, Action.READ, listing)

    def after_warm() -> list[Decision]:
        return warm_engine.filter(who, Action.READ, listing)

    b_dec, b_q, b_t = measure(db, before, repeat)
    c_dec, c_q, c_t = measure(db, after_cold, repeat)
    w_dec, w_q, w_t = measure(db, after_warm, repeat)
    allowed = sum(d.allowed for d in b_dec)
    print(f"{who.username.split('-')[0]}: {allowed}/{len(listing)} files allowed")
    for label, q, t in (
        ("BEFORE (per-file)         ", b_q, b_t),
        ("AFTER  (per-folder, cold) ", c_q, c_t),
        ("AFTER  (per-folder, warm) ", w_q, w_t),
    ):
        print(f"  {label} {q:6d} authz queries  {t * 1000:9.2f} ms")
    same = b_dec == c_dec == w_dec
    ok = same and c_q < b_q and c_t < b_t and w_q <= 1 and w_t < b_t
    print(f"  identical decisions: {same}; speed-up cold {b_t / c_t:.0f}x, warm {b_t / w_t:.0f}x")
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench authz_listing")
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--db-url", help="a database to use (default: a temporary SQLite file)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        db = Database.from_url(args.db_url or f"sqlite:///{tmp}/bench.db")
        try:
            upgrade(db.engine)
            bob, carol, listing = setup(db, args.files)
            print(f"{db.engine.dialect.name}: listing {FOLDER} ({len(listing)} files)")
            ok = compare(db, bob, listing, args.repeat)
            ok = compare(db, carol, listing, args.repeat) and ok
        finally:
            db.dispose()
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
