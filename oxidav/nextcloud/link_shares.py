"""Public links in the Nextcloud OCS Share API (``shareType`` 3): create, get, update, delete,
and their part of the share list.

A link share is a row of ``public_links`` (``oxidav.authz.links.store``). Its OCS id is
``LINK_ID_BASE + link id``, so link ids never collide with user/group share ids (grant ids)
in the one id space the API exposes. Permissions map to the link mode: 1 (read) -> read-only,
4 (create only) -> upload-only (file drop), 15 or ``publicUpload=true`` -> read-write; any
other sum is refused (400), never widened. The owner of a file or folder may make a link to
it, and so may a recipient holding the share bit and the link's bits (as in Nextcloud), named
by their own view of their tree; such a link never lasts longer than the maker holds the share
bit, and is dead whenever the maker no longer holds those bits (``link_access``). The password
is never echoed: a protected link answers ``"password": "***"`` (Nextcloud sends the hash
itself).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from oxidav.authz.authn.hashing_gate import HashingGate
from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.roles import ALL
from oxidav.authz.links import store as links
from oxidav.authz.links.store import LinkError, LinkMode
from oxidav.db.models.links import PublicLink
from oxidav.db.models.users import User
from oxidav.nextcloud.sharing_ops import (
    READ,
    SHARE,
    ShareError,
    ShareService,
    parse_expiry,
)
from oxidav.tree import get_node
from oxidav.urls import PUBLIC_SHARE

SHARE_LINK = 3
#: OCS ids of link shares start here (grant ids, the user/group share ids, stay below).
LINK_ID_BASE = 1_000_000_000
PASSWORD_SET = "***"


def is_link_id(share_id: int) -> bool:
    return share_id > LINK_ID_BASE


def mode_of(permissions: int | None, public_upload: bool) -> LinkMode:
    """The link mode a permission bitmask (and Nextcloud's ``publicUpload``) asks for: 1 read,
    4 file drop, 15 read-write (the share bit is dropped: a link is not reshared). Any other
    sum is refused, never widened."""
    if permissions is None:
        return LinkMode.EDIT if public_upload else LinkMode.READ
    bits = permissions & ~SHARE if 0 <= permissions <= ALL else -1
    if bits == READ:
        return LinkMode.EDIT if public_upload else LinkMode.READ
    for mode in LinkMode:
        if bits == mode.permissions:
            return mode
    raise ShareError(
        400, "Invalid permissions for a public link: 1 (read), 4 (file drop) or 15 (read-write)"
    )


def _expiry(text: str | None) -> datetime | links.Keep | None:
    if text is None:
        return links.KEEP
    return parse_expiry(text)


@dataclass
class LinkShares:
    shares: ShareService
    #: The process's hashing cap: a link password is hashed in one of its slots; a full gate
    #: raises ``HashingBusy``, answered 429 + Retry-After by ``SharingApp``.
    hashing: HashingGate

    def create(
        self,
        session: Session,
        principal: Principal,
        base_url: str,
        *,
        path: str,
        permissions: int | None,
        public_upload: bool,
        password: str,
        expire_date: str,
        label: str,
    ) -> dict[str, Any]:
        node = self.shares.node_at(session, principal, path)
        mode = mode_of(permissions, public_upload)
        held = self.shares._may_share(session, principal, node, mode.permissions)
        if node.path == "":
            raise ShareError(403, "You cannot share your root folder")
        expires = self.shares._expiry(principal, node, held, parse_expiry(expire_date))
        try:
            row = links.create_link(
                session,
                node,
                mode=mode,
                password=password or None,
                expires_at=expires,
                label=label,
                created_by=principal.user_id,
                hasher=self.hashing.hash,
            )
        except LinkError as exc:
            raise ShareError(exc.status, str(exc)) from None
        return self.render_or_404(session, row, base_url)

    def _visible(self, session: Session, principal: Principal, share_id: int) -> PublicLink:
        row = session.get(PublicLink, share_id - LINK_ID_BASE)
        if row is None or principal.user_id not in (row.owner_id, row.created_by):
            raise ShareError(404, "Wrong share ID, share doesn't exist")
        return row

    def get(
        self, session: Session, principal: Principal, share_id: int, base_url: str
    ) -> dict[str, Any]:
        return self.render_or_404(session, self._visible(session, principal, share_id), base_url)

    def update(
        self,
        session: Session,
        principal: Principal,
        share_id: int,
        base_url: str,
        *,
        permissions: int | None,
        public_upload: bool | None,
        password: str | None,
        expire_date: str | None,
        label: str | None,
    ) -> dict[str, Any]:
        row = self._visible(session, principal, share_id)
        mode = None
        if permissions is not None or public_upload is not None:
            mode = mode_of(permissions, bool(public_upload))
        expires = _expiry(expire_date)
        if principal.user_id != row.owner_id:
            expires = self._within_makers_rights(session, principal, row, mode, expires)
        try:
            links.update_link(
                session,
                row,
                mode=mode,
                password=links.KEEP if password is None else password,
                expires_at=expires,
                label=label,
                hasher=self.hashing.hash,
            )
        except LinkError as exc:
            raise ShareError(exc.status, str(exc)) from None
        return self.render_or_404(session, row, base_url)

    def _within_makers_rights(
        self,
        session: Session,
        principal: Principal,
        row: PublicLink,
        mode: LinkMode | None,
        expires: datetime | links.Keep | None,
    ) -> datetime | links.Keep | None:
        """A link changed by its maker (not the owner) stays within the bits they hold and
        never outlasts their share bit: the expiry to store."""
        node = get_node(session, row.resource_id)
        if node is None or node.user_id != row.owner_id:
            raise ShareError(404, "Wrong share ID, share doesn't exist")
        bits = (mode or LinkMode(row.mode)).permissions
        held = self.shares._may_share(session, principal, node, bits)
        asked = row.expires_at if isinstance(expires, links.Keep) else expires
        return self.shares._expiry(principal, node, held, asked)

    def delete(self, session: Session, principal: Principal, share_id: int) -> None:
        row = self._visible(session, principal, share_id)
        session.delete(row)

    def list_links(
        self, session: Session, principal: Principal, base_url: str, node_id: int | None
    ) -> list[dict[str, Any]]:
        stmt = select(PublicLink).where(
            (PublicLink.owner_id == principal.user_id)
            | (PublicLink.created_by == principal.user_id)
        )
        if node_id is not None:
            stmt = stmt.where(PublicLink.resource_id == node_id)
        rendered = (self.render(session, row, base_url) for row in session.scalars(stmt))
        return [share for share in rendered if share is not None]

    # -- rendering ---------------------------------------------------------------------------

    def render_or_404(self, session: Session, row: PublicLink, base_url: str) -> dict[str, Any]:
        share = self.render(session, row, base_url)
        if share is None:
            raise ShareError(404, "Wrong share ID, share doesn't exist")
        return share

    def render(self, session: Session, row: PublicLink, base_url: str) -> dict[str, Any] | None:
        """Nextcloud's share object of a link; None when its node is gone or trashed."""
        node = get_node(session, row.resource_id)
        if node is None or node.user_id != row.owner_id:
            return None
        names = dict(
            session.execute(
                select(User.id, User.username).where(
                    User.id.in_([row.owner_id, row.created_by or row.owner_id])
                )
            ).all()
        )
        owner = names.get(row.owner_id, "")
        initiator = names.get(row.created_by or row.owner_id, owner)
        expiration = None
        if row.expires_at is not None:
            last_day = (row.expires_at - timedelta(seconds=1)).date()
            expiration = f"{last_day.isoformat()} 00:00:00"
        password = PASSWORD_SET if row.password_hash else None
        return {
            "id": str(LINK_ID_BASE + row.id),
            "share_type": SHARE_LINK,
            "uid_owner": initiator,
            "displayname_owner": initiator,
            "uid_file_owner": owner,
            "displayname_file_owner": owner,
            "permissions": LinkMode(row.mode).permissions,
            "can_edit": True,
            "can_delete": True,
            "stime": int(row.created_at.timestamp()),
            "parent": None,
            "expiration": expiration,
            "token": row.token,
            "url": f"{base_url}{PUBLIC_SHARE}/{row.token}",
            "path": node.path or "/",
            "item_type": "folder" if node.is_folder else "file",
            "mimetype": "httpd/unix-directory" if node.is_folder else node.mime_type,
            "item_source": node.id,
            "file_source": node.id,
            "file_parent": node.parent_id,
            "file_target": "/" + node.name,
            "share_with": password,
            "share_with_displayname": "(Shared link)",
            "password": password,
            "send_password_by_talk": False,
            "mail_send": 0,
            "hide_download": 0,
            "note": "",
            "label": row.label,
        }
