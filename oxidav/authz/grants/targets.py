"""Naming resources for people: ``files/<user>/<path>``, ``calendars/<user>/<uri>``,
``addressbooks/<user>/<uri>`` — the same shape as their DAV URLs (docs/architecture.md#urls),
without the
``/remote.php/dav/`` prefix. Used by the operator commands; reads other rooms' tables.
"""

from __future__ import annotations

import unicodedata

from sqlalchemy import select
from sqlalchemy.orm import Session

from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.db.models.calendars import Calendar
from oxidav.db.models.contacts import AddressBook
from oxidav.db.models.tree import Node
from oxidav.db.models.users import User


class TargetError(ValueError):
    """A resource name that does not parse or names nothing."""


def user_id(session: Session, username: str) -> int:
    found = session.scalar(select(User.id).where(User.username == username))
    if found is None:
        raise TargetError(f"no user {username!r}")
    return int(found)


def _node_path(raw: str) -> str:
    parts = [unicodedata.normalize("NFC", p) for p in raw.split("/") if p]
    if any(p in (".", "..") for p in parts):
        raise TargetError(f"invalid path {raw!r}")
    return "".join("/" + p for p in parts)


def resolve_target(session: Session, spec: str) -> Resource:
    """The live resource named by ``spec``; ``TargetError`` if there is none."""
    collection, _, rest = spec.strip("/").partition("/")
    username, _, tail = rest.partition("/")
    if not username:
        raise TargetError(
            f"cannot parse {spec!r}: use files/USER/PATH, calendars/USER/URI "
            "or addressbooks/USER/URI"
        )
    owner = user_id(session, username)
    if collection == "files":
        path = _node_path(tail)
        row = session.execute(
            select(Node.id, Node.parent_id, Node.is_folder).where(
                Node.user_id == owner, Node.path == path, Node.trashed_at.is_(None)
            )
        ).first()
        if row is None:
            raise TargetError(f"no file or folder {spec!r}")
        kind = ResourceKind.FOLDER if row.is_folder else ResourceKind.FILE
        return Resource(kind, row.id, owner, row.parent_id, path)
    uri = tail.strip("/")
    if collection not in ("calendars", "addressbooks") or not uri or "/" in uri:
        raise TargetError(f"cannot parse {spec!r}")
    if collection == "calendars":
        kind = ResourceKind.CALENDAR
        found = session.scalar(
            select(Calendar.id).where(Calendar.user_id == owner, Calendar.uri == uri)
        )
    else:
        kind = ResourceKind.ADDRESSBOOK
        found = session.scalar(
            select(AddressBook.id).where(AddressBook.user_id == owner, AddressBook.uri == uri)
        )
    if found is None:
        raise TargetError(f"no {collection[:-1]} {spec!r}")
    return Resource(kind, int(found), owner)


def describe_target(session: Session, kind: ResourceKind, resource_id: int) -> str:
    """The name of a granted resource, or ``<kind>:<id> (gone)`` if it no longer exists."""
    if kind.is_node:
        row = session.execute(
            select(User.username, Node.path, Node.trashed_at)
            .join(User, User.id == Node.user_id)
            .where(Node.id == resource_id)
        ).first()
        if row is not None:
            trashed = " (trashed)" if row.trashed_at is not None else ""
            return f"files/{row.username}{row.path or '/'}{trashed}"
    elif kind is ResourceKind.CALENDAR:
        found = session.execute(
            select(User.username, Calendar.uri)
            .join(User, User.id == Calendar.user_id)
            .where(Calendar.id == resource_id)
        ).first()
        if found is not None:
            return f"calendars/{found[0]}/{found[1]}"
    else:
        found = session.execute(
            select(User.username, AddressBook.uri)
            .join(User, User.id == AddressBook.user_id)
            .where(AddressBook.id == resource_id)
        ).first()
        if found is not None:
            return f"addressbooks/{found[0]}/{found[1]}"
    return f"{kind.value}:{resource_id} (gone)"
