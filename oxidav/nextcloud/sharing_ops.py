"""The operations behind the Nextcloud OCS Share API: a user or group share *is* a grant.

A share of a file or folder to a user (``shareType`` 0) or a group (1) is recorded as one grant
(``authz.grants.store``); the share id is the grant id. Nextcloud's permission bits are stored
exactly as given (``share_bits``: read is required; a file share never carries create or
delete, as in Nextcloud). Who may share is the grant engine's answer to ``Action.RESHARE`` (the
owner, or a holder of the share bit giving at most the bits they hold, never for longer than
they hold the share bit: a reshare's expiry is clamped to theirs); who may see, change or
delete a share is its resource's owner or the user who made it — anyone else gets 404, as if
the share did not exist. After a share is changed or deleted, the reshares made through it
are brought in line (``authz.grants.reshares``); the engine already weighs each reshare by what
its maker holds on every request.

``path`` names a node in the caller's own view of their tree (``/Photos/x.jpg``), their mounts
included (``/Team/plan.md`` of a folder alice shared as ``Team``). Nothing else can be named: a
path that the caller cannot see answers exactly as one that does not exist.

To a recipient (``shared_with_me``) a share answers with the bits it is worth now and
``can_edit`` false, as Nextcloud does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants import store as grants
from oxidav.authz.grants.engine import Access, GrantEngine
from oxidav.authz.grants.grantset import earlier
from oxidav.authz.grants.groups import GroupError, group_id, groups_of_user
from oxidav.authz.grants.mounts import MountService
from oxidav.authz.grants.reshares import settle_reshares
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import ALL, FILE_BITS, Action, Permission
from oxidav.db import utcnow
from oxidav.db.models.authz import Grant, UserGroup
from oxidav.db.models.users import User
from oxidav.tree import InvalidName, NodeInfo, get_node, normalize_path, resolve

#: Nextcloud's permission bits (OCP\Constants::PERMISSION_*).
READ, UPDATE, CREATE, DELETE, SHARE = (int(bit) for bit in Permission)
SHARE_USER, SHARE_GROUP = 0, 1
_WRONG_PATH = "Wrong path, file/folder doesn't exist"


class ShareError(Exception):
    """A share request that fails: ``status`` is the HTTP/OCS status to answer with."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def share_bits(permissions: int, is_folder: bool) -> int:
    """The bits a share asks for, stored as given; a file share loses create and delete."""
    if permissions < 0 or permissions > ALL or not permissions & READ:
        raise ShareError(400, "Invalid permissions: read is required")
    return permissions if is_folder else permissions & FILE_BITS


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

    def __post_init__(self) -> None:
        self.mounts = MountService(self.engine.db, self.share_folder)

    # -- resolving ---------------------------------------------------------------------------

    def node_at(self, session: Session, principal: Principal, path: str) -> NodeInfo:
        """The node a share request's ``path`` names in the caller's view of their tree
        (see the module docstring); 404 alike for what does not exist and what they cannot
        see."""
        if not path:
            raise ShareError(404, "Please specify a file or folder path")
        try:
            tree_path = normalize_path(path)
        except InvalidName:
            raise ShareError(404, _WRONG_PATH) from None
        node = resolve(session, principal.user_id, tree_path)
        if node is None:
            node = self._mounted_node(session, principal, tree_path)
        if node is None:
            raise ShareError(404, _WRONG_PATH)
        return node

    def _mounted_node(
        self, session: Session, principal: Principal, tree_path: str
    ) -> NodeInfo | None:
        """The owner's node at a path below one of the caller's mount points, if they hold a
        bit on it."""
        authz = self.engine.request(principal, session)
        found = self.mounts.table(authz, make_folder=False).locate(tree_path)
        if found is None:
            return None
        mount, owner_path = found
        node = resolve(session, mount.node.user_id, owner_path)
        if node is None or not authz.bits(Resource.node(node)):
            return None
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
        self, session: Session, principal: Principal, node: NodeInfo, bits: int
    ) -> Access:
        """The owner, or a holder of the share bit giving at most the bits they hold; 404 if
        nothing is visible. What the caller holds (its ``share_until`` bounds the expiry)."""
        authz = self.engine.request(principal, session)
        resource = Resource.node(node)
        decision = authz.check(Action.RESHARE, resource)
        if not decision.allowed:
            message = _WRONG_PATH if decision.status == 404 else "You are not allowed to share this"
            raise ShareError(decision.status, message)
        held = authz.access(resource)
        if bits & ~held.bits:
            raise ShareError(403, "Cannot increase permissions beyond your own")
        return held

    def _expiry(
        self, principal: Principal, node: NodeInfo, held: Access, expires: datetime | None
    ) -> datetime | None:
        """A reshare never lasts longer than its maker holds the share bit."""
        if node.user_id == principal.user_id:
            return expires
        return earlier(expires, held.share_until)

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
        bits = share_bits(permissions, node.is_folder)
        held = self._may_share(session, principal, node, bits)
        subject = self._subject(session, principal, share_type, share_with)
        expires = self._expiry(principal, node, held, parse_expiry(expire_date))
        try:
            grant_id = grants.grant(
                session,
                subject,
                Resource.node(node),
                bits,
                expires_at=expires,
                created_by=principal.user_id,
            )
        except grants.GrantError as exc:
            raise ShareError(400, str(exc)) from None
        return self.get(session, principal, grant_id)

    def name_mount(self, share: dict[str, Any]) -> None:
        """Name a new user share in its recipient's tree now, as Nextcloud sets the share's
        ``file_target`` when it is made, so that a later share with the same name cannot come
        first (a group's members are named on first sight); ``file_target`` answers it."""
        if share.get("share_type") != SHARE_USER:
            return
        recipient = str(share.get("share_with") or "")
        with self.engine.db.read() as session:
            found = session.scalar(select(User.id).where(User.username == recipient))
        if found is None:
            return
        table = self.mounts.table(self.engine.request(Principal(int(found), recipient)))
        for mount in table.mounts:
            if mount.node.id == share.get("item_source"):
                share["file_target"] = f"{table.folder}/{mount.name}"

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
        bits = share_bits(permissions, node.is_folder) if permissions is not None else None
        expires = parse_expiry(expire_date) if expire_date is not None else row.expires_at
        if principal.user_id != row.owner_id:
            held = self._may_share(session, principal, node, bits or row.permissions)
            expires = self._expiry(principal, node, held, expires)
        subject = (
            grants.Subject.user(row.subject_user_id)
            if row.subject_user_id is not None
            else grants.Subject.group(int(row.subject_group_id or 0))
        )
        try:
            grants.grant(
                session,
                subject,
                Resource.node(node),
                row.permissions if bits is None else bits,
                expires_at=expires,
            )
        except grants.GrantError as exc:
            raise ShareError(400, str(exc)) from None
        settle_reshares(session, self.engine.db, row.owner_id)
        return self.get(session, principal, share_id)

    def delete(self, session: Session, principal: Principal, share_id: int) -> None:
        row = self._visible_row(session, principal, share_id)
        owner_id = row.owner_id
        grants.revoke(session, share_id)
        settle_reshares(session, self.engine.db, owner_id)

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
        rows = session.scalars(stmt.order_by(Grant.id))
        if not shared_with_me:
            shares = (self._render(session, row) for row in rows)
            return [share for share in shares if share is not None]
        authz = self.engine.request(principal, session)
        table = self.mounts.table(authz, make_folder=False)
        targets = {m.node.id: f"{table.folder}/{m.name}" for m in table.mounts}
        received: list[dict[str, Any]] = []
        for row in rows:
            shared = get_node(session, row.resource_id)
            worth = authz.granted(Resource.node(shared)) if shared is not None else 0
            share = self._render(session, row, targets.get(row.resource_id), recipient=True)
            if share is not None and worth:
                share["permissions"] = row.permissions & worth
                received.append(share)
        return received

    # -- rendering ---------------------------------------------------------------------------

    def _render(
        self,
        session: Session,
        row: Grant,
        mount_path: str | None = None,
        *,
        recipient: bool = False,
    ) -> dict[str, Any] | None:
        """Nextcloud's share object; None when the shared node is gone or trashed.

        ``mount_path``: for the recipient, where the share shows in their own tree (Nextcloud
        then gives that as ``path`` and ``file_target``). ``recipient``: rendered for one who
        received it (``can_edit`` false: only its owner and maker may change it).
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
            "permissions": row.permissions,
            "can_edit": not recipient,
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
