"""Operator commands for public links (below ``oxidav share``, see ``oxidav.authz.cli``)::

    oxidav share link create USER PATH [--password-stdin] [--expires ISO-8601]
                                       [--upload-only | --edit] [--label L]
    oxidav share link list USER
    oxidav share link delete TOKEN

``create`` prints the token; the link is ``<server>/s/<token>`` and its WebDAV is
``<server>/public.php/webdav`` (user name: the token, password: the link password).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime

from oxidav.authz.grants import targets
from oxidav.authz.grants.targets import TargetError
from oxidav.authz.links import store as links
from oxidav.authz.links.store import LinkError, LinkMode
from oxidav.db import Database, utcnow
from oxidav.settings import Settings
from oxidav.tree import InvalidName, get_node, normalize_path, resolve

Handler = Callable[[argparse.Namespace, Settings], int]


def _run(work: Callable[[Database, argparse.Namespace], None]) -> Handler:
    def handler(args: argparse.Namespace, settings: Settings) -> int:
        from oxidav.services import command_services

        with command_services(settings) as services:
            try:
                work(services.db, args)
            except (LinkError, TargetError) as exc:
                print(f"oxidav: {exc}", file=sys.stderr)
                return 2
        return 0

    return handler


def _expiry(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid date {text!r}: use ISO 8601") from exc
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _create(db: Database, args: argparse.Namespace) -> None:
    password = None
    if args.password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
        if not password:
            raise LinkError("the password read from stdin is empty")
    mode = LinkMode.UPLOAD if args.upload_only else LinkMode.EDIT if args.edit else LinkMode.READ
    with db.write() as session:
        owner = targets.user_id(session, args.user)
        try:
            node = resolve(session, owner, normalize_path(args.path))
        except InvalidName:
            node = None
        if node is None:
            raise TargetError(f"no file or folder {args.path!r} of {args.user!r}")
        if node.path == "":
            raise LinkError("a user's root folder cannot be shared by link")
        row = links.create_link(
            session, node, mode=mode, password=password, expires_at=args.expires, label=args.label
        )
        token = row.token
    print(token)


def _list(db: Database, args: argparse.Namespace) -> None:
    now = utcnow()
    with db.read() as session:
        owner = targets.user_id(session, args.user)
        for row in links.links_of_owner(session, owner):
            node = get_node(session, row.resource_id)
            where = node.path or "/" if node is not None and node.user_id == row.owner_id else None
            expired = row.expires_at is not None and row.expires_at <= now
            state = "dead" if where is None or expired else "live"
            expires = row.expires_at.isoformat() if row.expires_at else "never"
            password = "yes" if row.password_hash else "no"
            print(
                f"{row.token}\t{row.mode}\t{where or '(gone)'}\texpires={expires}"
                f"\tpassword={password}\t{state}\t{row.label}"
            )


def _delete(db: Database, args: argparse.Namespace) -> None:
    with db.write() as session:
        if not links.delete_link(session, args.token):
            raise LinkError(f"no link {args.token!r}")
    print(f"deleted link {args.token}")


def register(share_cmds: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add ``link create|list|delete`` below ``oxidav share``."""
    link = share_cmds.add_parser("link", help="public links (token URLs)")
    link_cmds = link.add_subparsers(dest="link_command", required=True)
    create = link_cmds.add_parser("create", help="make a public link; prints its token")
    create.add_argument("user", metavar="USER")
    create.add_argument("path", metavar="PATH", help="a file or folder of USER, e.g. /Photos")
    create.add_argument("--password-stdin", action="store_true", help="read a password from stdin")
    create.add_argument("--expires", type=_expiry, help="expiry, ISO 8601 (UTC if no zone)")
    mode = create.add_mutually_exclusive_group()
    mode.add_argument("--upload-only", action="store_true", help="a file drop (folders only)")
    mode.add_argument("--edit", action="store_true", help="read and write (folders only)")
    create.add_argument("--label", default="", help="a label for the link")
    create.set_defaults(handler=_run(_create))
    listing = link_cmds.add_parser("list", help="list a user's links")
    listing.add_argument("user", metavar="USER")
    listing.set_defaults(handler=_run(_list))
    delete = link_cmds.add_parser("delete", help="delete a link by token")
    delete.add_argument("token", metavar="TOKEN")
    delete.set_defaults(handler=_run(_delete))
