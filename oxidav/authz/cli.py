"""Operator commands for groups and grants (docs/architecture.md#command-line)::

    oxidav group add NAME | delete NAME | list
    oxidav group member add GROUP (--user U | --group G)
    oxidav group member remove GROUP (--user U | --group G)
    oxidav share add RESOURCE (--user U | --group G) [--role viewer | --permissions BITS]
                     [--expires ISO-8601]
    oxidav share list [RESOURCE] [--user U | --group G]
    oxidav share revoke ID
    oxidav share link create|list|delete …       (public links: ``oxidav.authz.links.cli``)
    oxidav locks list|remove …                   (WebDAV locks: ``oxidav.authz.locks_cli``)

RESOURCE is ``files/<user>/<path>``, ``calendars/<user>/<uri>`` or ``addressbooks/<user>/<uri>``.
A role names a sum of Nextcloud's permission bits (``roles.Role``: viewer 1, editor 15,
manager and owner 31); ``--permissions`` gives the bits themselves (1 read, 2 update, 4 create,
8 delete, 16 share).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from datetime import UTC, datetime

from sqlalchemy import select
from sqlalchemy.orm import Session

from oxidav.authz.grants import groups, targets
from oxidav.authz.grants import store as grants
from oxidav.authz.grants.groups import GroupError
from oxidav.authz.grants.reshares import settle_reshares
from oxidav.authz.grants.roles import Role, describe
from oxidav.authz.grants.store import GrantError, Subject, SubjectKind
from oxidav.authz.grants.targets import TargetError
from oxidav.authz.links import cli as links_cli
from oxidav.db import Database
from oxidav.db.models.authz import Grant, UserGroup
from oxidav.db.models.users import User
from oxidav.settings import Settings

Handler = Callable[[argparse.Namespace, Settings], int]


def _run(work: Callable[[Database, argparse.Namespace], None]) -> Handler:
    """A handler that opens (and migrates) the database, runs ``work``, reports errors."""

    def handler(args: argparse.Namespace, settings: Settings) -> int:
        from oxidav.services import command_services

        with command_services(settings) as services:
            try:
                work(services.db, args)
            except (GroupError, GrantError, TargetError) as exc:
                print(f"oxidav: {exc}", file=sys.stderr)
                return 2
        return 0

    return handler


def _subject(session: Session, args: argparse.Namespace) -> Subject | None:
    if getattr(args, "user", None):
        return Subject.user(targets.user_id(session, args.user))
    if getattr(args, "group", None):
        return Subject.group(groups.group_id(session, args.group))
    return None


def _group_add(db: Database, args: argparse.Namespace) -> None:
    with db.write() as session:
        groups.create_group(session, args.name)
    print(f"created group {args.name!r}")


def _group_delete(db: Database, args: argparse.Namespace) -> None:
    with db.write() as session:
        groups.delete_group(session, args.name)
    print(f"deleted group {args.name!r}")


def _group_list(db: Database, args: argparse.Namespace) -> None:
    with db.read() as session:
        for info in groups.list_groups(session):
            print(f"{info.name}\tusers={','.join(info.users)}\tgroups={','.join(info.groups)}")


def _member(add: bool) -> Callable[[Database, argparse.Namespace], None]:
    def work(db: Database, args: argparse.Namespace) -> None:
        with db.write() as session:
            gid = groups.group_id(session, args.group_name)
            subject = _subject(session, args)
            assert subject is not None  # argparse requires --user or --group
            member = (
                {"user_id": subject.id}
                if subject.kind is SubjectKind.USER
                else {"member_group": subject.id}
            )
            (groups.add_member if add else groups.remove_member)(session, gid, **member)
        who = f"user {args.user!r}" if args.user else f"group {args.group!r}"
        verb = "added to" if add else "removed from"
        print(f"{who} {verb} group {args.group_name!r}")

    return work


def _parse_expiry(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"invalid date {text!r}: use ISO 8601") from exc
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _share_add(db: Database, args: argparse.Namespace) -> None:
    with db.write() as session:
        resource = targets.resolve_target(session, args.resource)
        subject = _subject(session, args)
        assert subject is not None
        access = args.permissions if args.permissions is not None else Role(args.role)
        grant_id = grants.grant(session, subject, resource, access, expires_at=args.expires)
        if resource.kind.is_node:  # a reduced grant reduces the reshares made through it
            settle_reshares(session, db, resource.owner_id)
    print(grant_id)


def _share_list(db: Database, args: argparse.Namespace) -> None:
    with db.read() as session:
        resource = targets.resolve_target(session, args.resource) if args.resource else None
        rows = grants.list_grants(session, resource=resource, subject=_subject(session, args))
        users = {uid: name for uid, name in session.execute(select(User.id, User.username))}
        names = {gid: name for gid, name in session.execute(select(UserGroup.id, UserGroup.name))}
        for row in rows:
            who = (
                f"user:{users.get(row.subject.id, row.subject.id)}"
                if row.subject.kind is SubjectKind.USER
                else f"group:{names.get(row.subject.id, row.subject.id)}"
            )
            what = targets.describe_target(session, row.resource_kind, row.resource_id)
            expires = row.expires_at.isoformat() if row.expires_at else "never"
            print(f"{row.id}\t{who}\t{what}\t{describe(row.permissions)}\texpires={expires}")


def _share_revoke(db: Database, args: argparse.Namespace) -> None:
    with db.write() as session:
        owner_id = session.scalar(select(Grant.owner_id).where(Grant.id == args.id))
        grants.revoke(session, args.id)
        if owner_id is not None:  # the reshares made through it go too
            settle_reshares(session, db, int(owner_id))
    print(f"revoked grant {args.id}")


def _subject_options(parser: argparse.ArgumentParser, required: bool) -> None:
    who = parser.add_mutually_exclusive_group(required=required)
    who.add_argument("--user", help="a user name")
    who.add_argument("--group", help="a group name")


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    group = subparsers.add_parser("group", help="groups of users")
    group_cmds = group.add_subparsers(dest="group_command", required=True)
    add = group_cmds.add_parser("add", help="create a group")
    add.add_argument("name")
    add.set_defaults(handler=_run(_group_add))
    delete = group_cmds.add_parser("delete", help="delete a group (its grants go with it)")
    delete.add_argument("name")
    delete.set_defaults(handler=_run(_group_delete))
    group_cmds.add_parser("list", help="list groups and their members").set_defaults(
        handler=_run(_group_list)
    )
    member = group_cmds.add_parser("member", help="group members (users or nested groups)")
    member_cmds = member.add_subparsers(dest="member_command", required=True)
    for verb, adding in (("add", True), ("remove", False)):
        cmd = member_cmds.add_parser(verb, help=f"{verb} a member")
        cmd.add_argument("group_name", metavar="GROUP")
        _subject_options(cmd, required=True)
        cmd.set_defaults(handler=_run(_member(adding)))

    share = subparsers.add_parser("share", help="grants: who may use whose resources")
    share_cmds = share.add_subparsers(dest="share_command", required=True)
    add = share_cmds.add_parser("add", help="grant a user or group a role; prints the grant id")
    add.add_argument("resource", metavar="RESOURCE", help="files/USER/PATH, calendars/USER/URI …")
    _subject_options(add, required=True)
    access = add.add_mutually_exclusive_group()
    access.add_argument("--role", choices=[r.value for r in Role], default=Role.VIEWER.value)
    access.add_argument(
        "--permissions",
        type=int,
        help="Nextcloud's bits: 1 read, 2 update, 4 create, 8 delete, 16 share",
    )
    add.add_argument("--expires", type=_parse_expiry, help="expiry, ISO 8601 (UTC if no zone)")
    add.set_defaults(handler=_run(_share_add))
    listing = share_cmds.add_parser("list", help="list grants")
    listing.add_argument("resource", metavar="RESOURCE", nargs="?")
    _subject_options(listing, required=False)
    listing.set_defaults(handler=_run(_share_list))
    revoke = share_cmds.add_parser("revoke", help="revoke a grant by id")
    revoke.add_argument("id", type=int)
    revoke.set_defaults(handler=_run(_share_revoke))
    links_cli.register(share_cmds)
