"""Public links: a token URL onto one file or folder of a user (Nextcloud ``shareType`` 3).

This module is the links' data: making, changing, listing and deleting link rows, and
``find_live`` — the one indexed query every request through a link runs. A link is *live*
when its row exists, it has not expired, and its node is a live (not trashed) node still owned
by the link's owner; anything else is answered as if the token never existed. Nothing about a
link is cached between requests, so a deleted or expired link stops working on the very next
request. Checking the password and deciding what a request may do is ``link_access``.

Modes: ``read`` (download, list), ``upload`` (a file drop: create files and folders, never
read, list or overwrite) and ``edit`` (read and write inside the link's folder). Upload and edit
links are for folders only. A mode stands for Nextcloud's link permission bits
(``LinkMode.permissions``: 1, 4, 15).

A link made by a user other than the node's owner (a recipient holding the share bit) is a
reshare: ``link_access`` weighs it on every request by what its maker still holds.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from sqlalchemy import delete, select
from sqlalchemy.orm import Session

from oxidav.authz.authn.passwords import hash_password
from oxidav.authz.grants.resources import ResourceKind
from oxidav.db import utcnow
from oxidav.db.models.links import PublicLink
from oxidav.db.models.tree import Node
from oxidav.db.models.users import User
from oxidav.tree import NodeInfo

#: Characters of a token: letters and digits only (URL-safe, no ``-``/``_`` ambiguity).
TOKEN_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
#: 20 characters of 62: about 119 random bits (Nextcloud uses 15).
TOKEN_LENGTH = 20
MAX_LABEL = 255

#: The principal name of requests made through a public link is this prefix and the link's id
#: (locks taken through a link are held by it: ``oxidav.authz.lock_holders``).
LINK_PRINCIPAL_PREFIX = "link:"


def link_principal(link_id: int) -> str:
    """The principal name of requests made through public link ``link_id``."""
    return f"{LINK_PRINCIPAL_PREFIX}{link_id}"


class LinkMode(Enum):
    READ = "read"
    UPLOAD = "upload"
    EDIT = "edit"

    @property
    def reads(self) -> bool:
        return self is not LinkMode.UPLOAD

    @property
    def writes(self) -> bool:
        return self is not LinkMode.READ

    @property
    def permissions(self) -> int:
        """Nextcloud's bits of the mode: read 1, file drop 4 (create), read-write 15."""
        return _MODE_BITS[self]


_MODE_BITS = {LinkMode.READ: 1, LinkMode.UPLOAD: 4, LinkMode.EDIT: 15}


class LinkError(ValueError):
    """A link request that cannot be done; ``status`` is the HTTP status to answer with."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class LiveLink:
    """A link row joined with its node and owner, as one request sees it."""

    id: int
    token: str
    mode: LinkMode
    password_hash: str | None
    expires_at: datetime | None
    label: str
    owner: str
    owner_id: int
    node_id: int
    node_path: str
    is_folder: bool
    node_name: str
    #: The node's folder (None: the owner's root) and who made the link (None: an operator).
    node_parent_id: int | None = None
    created_by: int | None = None


def new_token() -> str:
    return "".join(secrets.choice(TOKEN_ALPHABET) for _ in range(TOKEN_LENGTH))


def plausible_token(token: str) -> bool:
    """Shape check before any query (a token is never longer than the column)."""
    return 0 < len(token) <= 64 and all(c in TOKEN_ALPHABET for c in token)


def find_live(session: Session, token: str, now: datetime | None = None) -> LiveLink | None:
    """The live link of ``token``, or None (no such link, expired, node gone or trashed).

    One query on the unique token index, joined with the node and the owner by primary key.
    """
    if not plausible_token(token):
        return None
    row = session.execute(
        select(
            PublicLink.id,
            PublicLink.token,
            PublicLink.mode,
            PublicLink.password_hash,
            PublicLink.expires_at,
            PublicLink.label,
            PublicLink.owner_id,
            User.username,
            Node.id.label("node_id"),
            Node.path,
            Node.is_folder,
            Node.name,
            Node.parent_id,
            PublicLink.created_by,
        )
        .join(User, User.id == PublicLink.owner_id)
        .join(Node, Node.id == PublicLink.resource_id)
        .where(
            PublicLink.token == token,
            Node.user_id == PublicLink.owner_id,
            Node.trashed_at.is_(None),
        )
    ).first()
    if row is None:
        return None
    if row.expires_at is not None and row.expires_at <= (now or utcnow()):
        return None
    return LiveLink(
        id=row.id,
        token=row.token,
        mode=LinkMode(row.mode),
        password_hash=row.password_hash,
        expires_at=row.expires_at,
        label=row.label,
        owner=row.username,
        owner_id=row.owner_id,
        node_id=row.node_id,
        node_path=row.path,
        is_folder=bool(row.is_folder),
        node_name=row.name,
        node_parent_id=row.parent_id,
        created_by=row.created_by,
    )


def _check_mode(mode: LinkMode, node_is_folder: bool) -> None:
    if mode is not LinkMode.READ and not node_is_folder:
        raise LinkError("public upload is only possible for publicly shared folders")


def _check_expiry(expires_at: datetime | None) -> None:
    if expires_at is not None and expires_at <= utcnow():
        raise LinkError("Expiration date is in the past")


def _check_label(label: str) -> str:
    if len(label) > MAX_LABEL:
        raise LinkError(f"the label is longer than {MAX_LABEL} characters")
    return label


def create_link(
    session: Session,
    node: NodeInfo,
    *,
    mode: LinkMode = LinkMode.READ,
    password: str | None = None,
    expires_at: datetime | None = None,
    label: str = "",
    created_by: int | None = None,
    hasher: Callable[[str], str] = hash_password,
) -> PublicLink:
    """A new link on ``node`` (owned by ``node.user_id``) with a fresh random token; a request
    passes its ``HashingGate.hash`` as ``hasher``."""
    _check_mode(mode, node.is_folder)
    _check_expiry(expires_at)
    row = PublicLink(
        token=new_token(),
        owner_id=node.user_id,
        resource_kind=(ResourceKind.FOLDER if node.is_folder else ResourceKind.FILE).value,
        resource_id=node.id,
        mode=mode.value,
        password_hash=hasher(password) if password else None,
        expires_at=expires_at,
        created_by=created_by,
        created_at=utcnow(),
        label=_check_label(label),
    )
    session.add(row)
    session.flush()
    return row


class Keep(Enum):
    """``update_link``'s "leave this as it is"."""

    KEEP = "keep"


KEEP = Keep.KEEP


def update_link(
    session: Session,
    row: PublicLink,
    *,
    mode: LinkMode | None = None,
    password: str | Keep | None = KEEP,
    expires_at: datetime | Keep | None = KEEP,
    label: str | None = None,
    hasher: Callable[[str], str] = hash_password,
) -> PublicLink:
    """Change a link; ``password=""`` or None removes the password, ``expires_at=None`` the
    expiry. A new password invalidates every cookie issued under the old one."""
    if mode is not None:
        _check_mode(mode, row.resource_kind == ResourceKind.FOLDER.value)
        row.mode = mode.value
    if password is not KEEP:
        row.password_hash = hasher(password) if isinstance(password, str) and password else None
    if expires_at is not KEEP:
        assert expires_at is None or isinstance(expires_at, datetime)
        _check_expiry(expires_at)
        row.expires_at = expires_at
    if label is not None:
        row.label = _check_label(label)
    session.flush()
    return row


def link_by_token(session: Session, token: str) -> PublicLink | None:
    if not plausible_token(token):
        return None
    return session.scalar(select(PublicLink).where(PublicLink.token == token))


def delete_link(session: Session, token: str) -> bool:
    """Delete the link of ``token``; False if there was none."""
    if not plausible_token(token):
        return False
    result = session.execute(delete(PublicLink).where(PublicLink.token == token))
    return bool(getattr(result, "rowcount", 0))


def links_of_owner(session: Session, owner_id: int) -> list[PublicLink]:
    """Every link on ``owner_id``'s nodes or made by them, oldest first (dead ones too)."""
    return list(
        session.scalars(
            select(PublicLink)
            .where((PublicLink.owner_id == owner_id) | (PublicLink.created_by == owner_id))
            .order_by(PublicLink.id)
        )
    )
