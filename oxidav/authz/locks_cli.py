"""Operator commands for WebDAV locks::

    oxidav locks list [--user U] [--path P]
    oxidav locks remove TOKEN
    oxidav locks remove --user U --path P

``list`` prints the locks that stand (one per line: token, holder, owner and path, depth,
scope, expiry in UTC); a lock whose holder lost write access is removed as it is met, as on
any request (``oxidav.authz.lock_holders``). ``--user`` keeps the locks on U's files and those
U holds; ``--path`` (with ``--user``) the locks on U's P and below it. ``remove`` deletes one
lock by its token, or every lock on U's P and below it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from oxidav.authz.lock_holders import LockHolders, node_place
from oxidav.db import Database
from oxidav.providers.files.locks import DbLockStorage
from oxidav.settings import Settings
from oxidav.tree import InvalidName, normalize_path
from oxidav.tree import locks as rows
from oxidav.urls import FILES

Handler = Callable[[argparse.Namespace, Settings], int]


class LocksError(ValueError):
    """An operator mistake (exit code 2)."""


def _run(work: Callable[[Database, argparse.Namespace], None]) -> Handler:
    def handler(args: argparse.Namespace, settings: Settings) -> int:
        from oxidav.services import command_services

        with command_services(settings) as services:
            try:
                work(services.db, args)
            except LocksError as exc:
                print(f"oxidav: {exc}", file=sys.stderr)
                return 2
        return 0

    return handler


def _root(args: argparse.Namespace) -> str | None:
    """The lock root ``--user``/``--path`` name (None: no ``--path``)."""
    if args.path is None:
        return None
    if not args.user:
        raise LocksError("--path needs --user (whose file it is)")
    try:
        tree_path = normalize_path(args.path)
    except InvalidName as exc:
        raise LocksError(f"invalid path {args.path!r}: {exc}") from None
    return rows.normalize_root(quote(f"{FILES}/{args.user}{tree_path}"))


def _standing(db: Database, root: str) -> list[dict[str, Any]]:
    storage = DbLockStorage(db, holders=LockHolders(db))
    with db.read() as session:
        found = rows.list_locks(session, root, include_root=True, include_children=True)
    return storage.standing(found)


def _list(db: Database, args: argparse.Namespace) -> None:
    root = _root(args)
    for lock in _standing(db, root or "/"):
        place = node_place(lock["root"])
        owner, tree_path = place if place is not None else ("", lock["root"])
        if root is None and args.user and args.user not in (owner, lock["principal"]):
            continue
        expires = (
            "never"
            if lock["expire"] < 0
            else datetime.fromtimestamp(lock["expire"], UTC).isoformat(timespec="seconds")
        )
        print(
            f"{lock['token']}\t{lock['principal'] or '(anonymous)'}\t{owner}:{tree_path or '/'}"
            f"\tdepth={lock['depth']}\t{lock['scope']}\texpires={expires}"
        )


def _remove(db: Database, args: argparse.Namespace) -> None:
    root = _root(args)
    if (args.token is None) == (root is None):
        raise LocksError("name a lock TOKEN, or --user and --path")
    with db.write() as session:
        if args.token is not None:
            args.token = args.token.strip().strip("<>")  # as a Lock-Token header spells it
            if not rows.delete_lock(session, args.token):
                raise LocksError(f"no lock {args.token!r}")
            print(f"removed lock {args.token}")
            return
        assert root is not None
        count = rows.delete_locks(session, root, recursive=True)
    print(f"removed {count} lock(s) on {args.user}:{args.path}")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``locks list|remove``."""
    locks = subparsers.add_parser("locks", help="WebDAV locks")
    locks_cmds = locks.add_subparsers(dest="locks_command", required=True)
    listing = locks_cmds.add_parser("list", help="list the locks that stand")
    listing.add_argument("--user", help="locks on this user's files or held by this user")
    listing.add_argument("--path", help="with --user: locks on this path and below it")
    listing.set_defaults(handler=_run(_list))
    remove = locks_cmds.add_parser("remove", help="remove a lock by token, or those on a path")
    remove.add_argument("token", metavar="TOKEN", nargs="?")
    remove.add_argument("--user", help="with --path: whose file")
    remove.add_argument("--path", help="remove the locks on this path and below it")
    remove.set_defaults(handler=_run(_remove))
