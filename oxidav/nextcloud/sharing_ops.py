"""The operations behind the Nextcloud OCS Share API: a user or group share *is* a grant.

A share of a file or folder to a user (``shareType`` 0) or a group (1) is recorded as one grant
(``oxidav.authz.grants``); the share id is the grant id. Nextcloud's permission bitmask maps to
a role and back (``role_of`` / ``permissions_of``). Who may share is the grant engine's answer
to ``Action.RESHARE`` (the owner, or a manager resharing at most their own role); who may see,
change or delete a share is its resource's owner or the user who made it — anyone else gets
404, as if the share did not exist.

``path`` names a node in the caller's own tree (``/Photos/x.jpg``). A manager resharing
something of another user's names it as the operator commands do, without a leading slash:
``files/<owner>/<path>``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from oxidav.authz import grants
from oxidav.authz.credential_cache import Principal
from oxidav.authz.engine import GrantEngine
from oxidav.authz.groups import GroupError, group_id, groups_of_user
from oxidav.authz.mounts import MountService
from oxidav.authz.resources import Resource, ResourceKind
from oxidav.authz.roles import Action, Role
from oxidav.authz.targets import TargetError, resolve_target
from oxidav.db import utcnow
from oxidav.db.models.authz import Grant, UserGroup
from oxidav.db.models.users import User
from oxidav.tree import InvalidName, NodeInfo, get_node, normalize_path, resolve

#: Nextcloud's permission bits (OCP\Constants::PERMISSION_*).
READ, UPDATE, CREATE, DELETE, SHARE = 1, 2, 4, 8, 16
ALL = READ | UPDATE | CREATE | DELETE | SHARE
SHARE_USER, SHARE_GROUP = 0, 1


class ShareError(Exception):
    """A share request that fails: ``status`` is the HTTP/OCS status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def role_of(permissions: int) -> Role:
    """The role a permission bitmask asks for: share -> manager, any write -> editor."""
    if permissions < 0 or permissions > ALL or not permissions & READ:
        raise ShareError(400, "Invalid permissions: read is required")
    if permissions & SHARE:
        return Role.MANAGER
    if permissions & (UPDATE | CREATE | DELETE):
        return Role.EDITOR
    return Role.VIEWER


def permissions_of(role: Role, is_folder: bool) -> int:
    """The bitmask of a role; a file has no create or delete permission (as in Nextcloud)."""
    if role is Role.VIEWER:
        bits = READ
    elif role is Role.EDITOR:
        bits = READ | UPDATE | CREATE | DELETE
    else:
        bits = ALL
    return bits if is_folder else bits & ~(CREATE | DELETE)


def parse_expiry(text: str) -> datetime | None:
    """``YYYY-MM-DD`` (a share is valid through that day, UTC) -> the instant it expires."""
    if not text:
        return None
    try:
        day = date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise ShareError(400, "Invalid date, date format must be YYYY-MM-DD") from None
    expires = datetime.combine(day + timedelta(days=1), time(), tzinfo=UTC)
    if expires <= utcnow():
        raise ShareError(400, "Expiration date is in the past")
    return expires


@dataclass
class ShareService:
    engine: GrantEngine
    #: ``Settings.share_folder``: where shares appear in a recipient's tree (their paths).
    share_folder: str = "/"

    # -- resolving ---------------------------------------------------------------------------

    def node_at(self, session: Session, principal: Principal, path: str) -> NodeInfo:
        """The node a share request's ``path`` names (see the module docstring)."""
        if not path:
            raise ShareError(404, "Please specify a file or folder path")
        if path.startswith("/"):
            try:
                node = resolve(session, principal.user_id, normalize_path(path))
            except InvalidName:
                node = None
        else:
            try:
                resource = resolve_target(session, path)
            except TargetError:
                resource = None
            node = get_node(session, resource.id) if resource and resource.kind.is_node else None
        if node is None:
            raise ShareError(404, "Wrong path, file/folder doesn't exist")
        return node

    def _subject(
        self, session: Session, principal: Principal, share_type: int, share_with: str
    ) -> grants.Subject:
        if share_type == SHARE_USER:
            found = session.scalar(select(User.id).where(User.username == share_with))
            if found is None:
                raise ShareError(404, "Please specify a valid user")
            if int(found) == principal.user_id:
                raise ShareError(400, "Cannot share with yourself")
            return grants.Subject.user(int(found))
        if share_type == SHARE_GROUP:
            try:
                return grants.Subject.group(group_id(session, share_with))
            except GroupError:
                raise ShareError(404, "Please specify a valid group") from None
        raise ShareError(400, "Unknown share type")

    def _may_share(
        self, session: Session, principal: Principal, node: NodeInfo, role: Role
    ) -> None:
        """The owner, or a manager giving at most their own role; 404 if nothing is visible."""
        authz = self.engine.request(principal, session)
        resource = Resource.node(node)
        decision = authz.check(Action.RESHARE, resource)
        if not decision.allowed:
            message = (
                "Wrong path, file/folder doesn't exist"
                if decision.status == 404
                else "You are not allowed to share this"
            )
            raise ShareError(decision.status, message)
        held = authz.role(resource)
        if held is None or role.rank > held.rank:
            raise ShareError(403, "Cannot increase permissions beyond your own")

    # -- the verbs ---------------------------------------------------------------------------

    def create(
        self,
        session: Session,
        principal: Principal,
        *,
        path: str,
        share_type: int,
        share_with: str,
        permissions: int,
        expire_date: str,
    ) -> dict[str, Any]:
        node = self.node_at(session, principal, path)
        role = role_of(permissions)
        self._may_share(session, principal, node, role)
        subject = self._subject(session, principal, share_type, share_with)
        try:
            grant_id = grants.grant(
                session,
                subject,
                Resource.node(node),
                role,
                expires_at=parse_expiry(expire_date),
                created_by=principal.user_id,
            )
        except grants.GrantError as exc:
            raise ShareError(400, str(exc)) from None
        return self.get(session, principal, grant_id)

    def _visible_row(self, session: Session, principal: Principal, share_id: int) -> Grant:
        row = session.get(Grant, share_id)
        if row is None or not ResourceKind(row.resource_kind).is_node:
            raise ShareError(404, "Wrong share ID, share doesn't exist")
        if principal.user_id not in (row.owner_id, row.created_by):
            raise ShareError(404, "Wrong share ID, share doesn't exist")
        return row

    def get(self, session: Session, principal: Principal, share_id: int) -> dict[str, Any]:
        row = self._visible_row(session, principal, share_id)
        share = self._render(session, row)
        if share is None:
            raise ShareError(404, "Wrong share ID, share doesn't exist")
        return share

    def update(
        self,
        session: Session,
        principal: Principal,
        share_id: int,
        *,
        permissions: int | None,
        expire_date: str | None,
    ) -> dict[str, Any]:
        row = self._visible_row(session, principal, share_id)
        node = get_node(session, row.resource_id)
        if node is None:
            raise ShareError(404, "Wrong share ID, share doesn't exist")
        role = role_of(permissions) if permissions is not None else Role(row.role)
        if principal.user_id != row.owner_id:
            self._may_share(session, principal, node, role)
        expires = parse_expiry(expire_date) if expire_date is not None else row.expires_at
        subject = (
            grants.Subject.user(row.subject_user_id)
            if row.subject_user_id is not None
            else grants.Subject.group(int(row.subject_group_id or 0))
        )
        try:
            grants.grant(session, subject, Resource.node(node), role, expires_at=expires)
        except grants.GrantError as exc:
            raise ShareError(400, str(exc)) from None
        return self.get(session, principal, share_id)

    def delete(self, session: Session, principal: Principal, share_id: int) -> None:
        self._visible_row(session, principal, share_id)
        grants.revoke(session, share_id)

    def list_shares(
        self,
        session: Session,
        principal: Principal,
        *,
        path: str = "",
        reshares: bool = False,
        shared_with_me: bool = False,
    ) -> list[dict[str, Any]]:
        me = principal.user_id
        stmt = select(Grant).where(
            Grant.resource_kind.in_([ResourceKind.FOLDER.value, ResourceKind.FILE.value])
        )
        if shared_with_me:
            stmt = stmt.where(
                or_(
                    Grant.subject_user_id == me,
                    Grant.subject_group_id.in_(select(groups_of_user(me).c.gid)),
                ),
                or_(Grant.expires_at.is_(None), Grant.expires_at > utcnow()),
            )
        elif reshares or path:
            stmt = stmt.where(or_(Grant.owner_id == me, Grant.created_by == me))
        else:
            stmt = stmt.where(
                or_(Grant.created_by == me, (Grant.owner_id == me) & Grant.created_by.is_(None))
            )
        if path:
            node = self.node_at(session, principal, path)
            stmt = stmt.where(Grant.resource_id == node.id)
        targets = self._mount_paths(principal) if shared_with_me else {}
        shares = (
            self._render(session, row, targets.get(row.resource_id))
            for row in session.scalars(stmt.order_by(Grant.id))
        )
        return [share for share in shares if share is not None]

    def _mount_paths(self, principal: Principal) -> dict[int, str]:
        """Node id -> the path where the share shows in the recipient's tree (its mount)."""
        table = MountService(self.engine.db, self.share_folder).table(
            self.engine.request(principal)
        )
        return {m.node.id: f"{table.folder}/{m.name}" for m in table.mounts}

    # -- rendering ---------------------------------------------------------------------------

    def _render(
        self, session: Session, row: Grant, mount_path: str | None = None
    ) -> dict[str, Any] | None:
        """Nextcloud's share object; None when the shared node is gone or trashed.

        ``mount_path``: for the recipient, where the share shows in their own tree (Nextcloud
        then gives that as ``path`` and ``file_target``).
        """
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
        if row.subject_user_id is not None:
            share_type = SHARE_USER
            share_with = session.scalar(select(User.username).where(User.id == row.subject_user_id))
        else:
            share_type = SHARE_GROUP
            share_with = session.scalar(
                select(UserGroup.name).where(UserGroup.id == row.subject_group_id)
            )
        expiration = None
        if row.expires_at is not None:
            last_day = (row.expires_at - timedelta(seconds=1)).date()
            expiration = f"{last_day.isoformat()} 00:00:00"
        return {
            "id": str(row.id),
            "share_type": share_type,
            "uid_owner": initiator,
            "displayname_owner": initiator,
            "uid_file_owner": owner,
            "displayname_file_owner": owner,
            "permissions": permissions_of(Role(row.role), node.is_folder),
            "can_edit": True,
            "can_delete": True,
            "stime": int(row.created_at.timestamp()),
            "parent": None,
            "expiration": expiration,
            "token": None,
            "path": mount_path or node.path or "/",
            "item_type": "folder" if node.is_folder else "file",
            "mimetype": "httpd/unix-directory" if node.is_folder else node.mime_type,
            "item_source": node.id,
            "file_source": node.id,
            "file_parent": node.parent_id,
            "file_target": mount_path or "/" + (node.name if node.path else ""),
            "share_with": share_with,
            "share_with_displayname": share_with,
            "mail_send": 0,
            "hide_download": 0,
            "note": "",
            "label": "",
        }
