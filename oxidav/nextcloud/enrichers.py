"""The Nextcloud PROPFIND enrichment: ``oc:`` and ``nc:`` properties of files and folders.

``NodeEnricher`` implements ``oxidav.providers.dav.enrichment.Enricher`` over the tree's
``NodeInfo`` rows (docs/nextcloud-protocol.md#propfind-properties): ``oc:id`` (zero-padded file id +
instance id, stable across MOVE), ``oc:fileid``, ``oc:permissions``, ``oc:size`` (folders: the
rolled-up size), ``oc:checksums``, ``oc:favorite`` (also settable by PROPPATCH), ``oc:share-types``,
``oc:data-fingerprint`` (root only, constant), ``oc:owner-id``, ``oc:owner-display-name``
(the node's owner: for a share, the sharer) and ``nc:has-preview`` (false: no previews yet).

``oc:permissions`` of the caller's own nodes are all letters; of another user's node (a share,
mounted in the caller's tree) they follow the permission bits the grant engine gives
(``permissions_for``), as Nextcloud's ``getDavPermissions``: ``S`` (shared with me), ``R``
(share bit: may reshare), ``M`` on a mount point, ``G``, then — never on a mount point, which
cannot be renamed — ``D`` when the bits held on the node's folder allow deleting, ``N``/``V``
when the update bit allows renaming; ``W`` (files, update bit) or ``C``/``K`` (folders, create
bit). ``oc:share-types`` lists, on the caller's own items and
on items they reshared, the kinds of share made: 0 user, 1 group, and whatever the
``share_type_sources`` the enricher was given add (``make_app`` gives the public links': 3).

Per-request state (favorites, owner names, share types) lives in the environ, filled by
``prefetch`` with one query per page for favorites and one for owners; share types are read
for the whole page (one query per source) the first time one of them is asked. A value asked
for a row that was never prefetched costs one small query, then it is remembered too. The
reads by a page's node ids are prepared reads (``oxidav.db.prepared.PreparedReadsByCount``):
a page's IN list is not rendered and compiled again for every page.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lxml import etree
from sqlalchemy import ColumnElement, Integer, Select, bindparam, literal, or_, select

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.engine import RequestAuthz
from oxidav.authz.grants.mounts import mounts_of
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import Action, allows
from oxidav.db import Database
from oxidav.db.models.authz import Grant
from oxidav.db.models.users import User
from oxidav.db.prepared import PreparedReadsByCount
from oxidav.environ import ENVIRON_AUTHZ, ENVIRON_ENRICHMENT_STATE, principal_of
from oxidav.nextcloud.favorites import read_favorite_ids, set_favorite
from oxidav.providers.dav.enrichment import PropertyValue
from oxidav.tree.types import NodeInfo

OC = "{http://owncloud.org/ns}"
NC = "{http://nextcloud.org/ns}"
OC_ID = OC + "id"
OC_FILEID = OC + "fileid"
OC_PERMISSIONS = OC + "permissions"
OC_SIZE = OC + "size"
OC_CHECKSUMS = OC + "checksums"
OC_FAVORITE = OC + "favorite"
OC_SHARE_TYPES = OC + "share-types"
OC_DATA_FINGERPRINT = OC + "data-fingerprint"
OC_OWNER_ID = OC + "owner-id"
OC_OWNER_DISPLAY_NAME = OC + "owner-display-name"
NC_HAS_PREVIEW = NC + "has-preview"

#: Permission letters (desktop src/common/remotepermissions.cpp): R reshare, G read,
#: D delete, N rename, V move, W write (files), C add file, K add folder (folders).
FILE_PERMISSIONS = "RGDNVW"
FOLDER_PERMISSIONS = "RGDNVCK"

COMMON_NAMES = (
    OC_ID,
    OC_FILEID,
    OC_PERMISSIONS,
    OC_SIZE,
    OC_FAVORITE,
    OC_SHARE_TYPES,
    OC_OWNER_ID,
    OC_OWNER_DISPLAY_NAME,
    NC_HAS_PREVIEW,
)
ALL_NAMES = frozenset((*COMMON_NAMES, OC_CHECKSUMS, OC_DATA_FINGERPRINT))


def oc_id(node_id: int, instance_id: str) -> str:
    """Nextcloud's ``oc:id`` / ``OC-FileId``: ``sprintf('%08d', fileid) . instanceid``."""
    return f"{node_id:08d}{instance_id}"


SHARE_USER, SHARE_GROUP, SHARE_LINK = 0, 1, 3

#: ``(database, caller's user id, node ids) -> (node id, share type)`` pairs: more kinds of
#: share for ``oc:share-types`` (the public links give theirs, type 3). One read per call (per
#: ``PreparedReadsByCount.MOST`` ids).
ShareTypeSource = Callable[[Database, int, Sequence[int]], Iterable[tuple[int, int]]]


def shared_nodes(
    kind: Any, resource_id: Any, owner_id: Any, created_by: Any, node_ids: Any
) -> list[ColumnElement[bool]]:
    """The conditions of a share-type read (a table of shares given as its four columns): a
    share of one of ``node_ids`` made by its owner or by the caller (``:user_id``). The node
    kinds are bound values: an IN list of plain values would be an expanding parameter, which
    a prepared read does not take."""
    user_id = bindparam("user_id", type_=Integer())
    return [
        kind.in_([literal(ResourceKind.FOLDER.value), literal(ResourceKind.FILE.value)]),
        resource_id.in_(node_ids),
        or_(owner_id == user_id, created_by == user_id),
    ]


def _grants_of(node_ids: Any) -> Select[int, bool]:
    return (
        select(Grant.resource_id, Grant.subject_user_id.is_not(None))
        .where(
            *shared_nodes(
                Grant.resource_kind, Grant.resource_id, Grant.owner_id, Grant.created_by, node_ids
            )
        )
        .distinct()
    )


_GRANTS_OF = PreparedReadsByCount("node", _grants_of, Integer())


_USERS_OF = PreparedReadsByCount(
    "user",
    lambda ids: select(User.id, User.username, User.display_name).where(User.id.in_(ids)),
    Integer(),
)


def grant_share_types(
    db: Database, user_id: int, node_ids: Sequence[int]
) -> Iterable[tuple[int, int]]:
    """User (0) and group (1) shares of these nodes made by their owner or by ``user_id``."""
    rows = _GRANTS_OF.rows(db, node_ids, user_id=user_id)
    return [(int(rid), SHARE_USER if to_user else SHARE_GROUP) for rid, to_user in rows]


def permissions(node: NodeInfo) -> str:
    return FOLDER_PERMISSIONS if node.is_folder else FILE_PERMISSIONS


def shared_permissions(node: NodeInfo, inherited: int, effective: int, *, mount_point: bool) -> str:
    """The letters of another user's node, from the caller's bits on it (module docstring)."""
    letters = "S"
    if allows(effective, Action.RESHARE):
        letters += "R"
    if mount_point:
        letters += "M"
    letters += "G"
    if not mount_point and allows(inherited, Action.DELETE):
        letters += "D"
    if not mount_point and allows(effective, Action.RENAME):
        letters += "NV"
    if node.is_folder and allows(effective, Action.CREATE):
        letters += "CK"
    if not node.is_folder and allows(effective, Action.WRITE):
        letters += "W"
    return letters


def permissions_for(node: NodeInfo, environ: Mapping[str, Any]) -> str:
    """``oc:permissions`` of ``node`` for the request's caller."""
    principal = principal_of(environ)
    if not isinstance(principal, Principal) or node.user_id == principal.user_id:
        return permissions(node)
    authz = environ.get(ENVIRON_AUTHZ)
    if not isinstance(authz, RequestAuthz):
        return "SG"  # never reached through the authz middleware: read only
    inherited, effective = authz.roles(Resource.node(node))
    mounts = mounts_of(environ)
    mount_point = mounts is not None and mounts.is_mount_root(node.id)
    return shared_permissions(node, inherited, effective, mount_point=mount_point)


def _caller_id(environ: Mapping[str, Any]) -> int | None:
    principal = principal_of(environ)
    return principal.user_id if isinstance(principal, Principal) else None


@dataclass
class _State:
    """What this request knows: favorites per node id, (user name, display name) per user,
    share types per node id (and the node ids of the pages whose share types are not read)."""

    favorites: dict[int, bool] = field(default_factory=dict)
    owners: dict[int, tuple[str, str]] = field(default_factory=dict)
    share_types: dict[int, set[int]] = field(default_factory=dict)
    unread_share_types: set[int] = field(default_factory=set)


def _state(environ: Mapping[str, Any]) -> _State:
    state = environ.get(ENVIRON_ENRICHMENT_STATE)
    if state is None:
        state = _State()
        if isinstance(environ, MutableMapping):
            environ[ENVIRON_ENRICHMENT_STATE] = state
    assert isinstance(state, _State)
    return state


def _share_types_element(kinds: list[int]) -> etree._Element:
    element = etree.Element(OC_SHARE_TYPES)
    for kind in kinds:
        etree.SubElement(element, OC + "share-type").text = str(kind)
    return element


def _checksums_element(value: str) -> etree._Element:
    element = etree.Element(OC_CHECKSUMS)
    etree.SubElement(element, OC + "checksum").text = value
    return element


class NodeEnricher:
    """The ``oc:``/``nc:`` properties of the files provider's nodes. ``share_type_sources``:
    the kinds of share besides user and group shares that ``oc:share-types`` lists."""

    def __init__(
        self, db: Database, instance_id: str, share_type_sources: Sequence[ShareTypeSource] = ()
    ) -> None:
        self.db = db
        self.instance_id = instance_id
        self.share_type_sources = (grant_share_types, *share_type_sources)

    # -- Enricher protocol ---------------------------------------------------------------

    def property_names(self, item: Any) -> Sequence[str]:
        node: NodeInfo = item
        names = list(COMMON_NAMES)
        if node.checksums:
            names.append(OC_CHECKSUMS)
        if node.parent_id is None:
            names.append(OC_DATA_FINGERPRINT)
        return names

    def prefetch(self, items: Sequence[Any], environ: Mapping[str, Any]) -> None:
        state = _state(environ)
        nodes: Sequence[NodeInfo] = items
        state.unread_share_types.update(n.id for n in nodes if n.id not in state.share_types)
        by_user: dict[int, list[int]] = {}
        caller = _caller_id(environ)
        for node in nodes:
            if node.id not in state.favorites:
                # The caller's favorites (a share's node: the recipient's mark, not the owner's).
                by_user.setdefault(caller or node.user_id, []).append(node.id)
        for user_id, ids in by_user.items():
            starred = read_favorite_ids(self.db, user_id, ids)
            state.favorites.update((i, i in starred) for i in ids)
        missing_owners = sorted({n.user_id for n in nodes} - state.owners.keys())
        for user_id, username, display in _USERS_OF.rows(self.db, missing_owners):
            state.owners[user_id] = (username, display or username)

    def value(self, item: Any, name: str, environ: Mapping[str, Any]) -> PropertyValue | None:
        if name not in ALL_NAMES:
            return None
        node: NodeInfo = item
        if name == OC_ID:
            return oc_id(node.id, self.instance_id)
        if name == OC_FILEID:
            return str(node.id)
        if name == OC_PERMISSIONS:
            return permissions_for(node, environ)
        if name == OC_SIZE:
            return str(node.size)
        if name == OC_SHARE_TYPES:
            return _share_types_element(self._share_kinds(node, environ))
        if name == NC_HAS_PREVIEW:
            return "false"
        if name == OC_CHECKSUMS:
            return _checksums_element(node.checksums) if node.checksums else None
        if name == OC_DATA_FINGERPRINT:
            return "" if node.parent_id is None else None
        state = _state(environ)
        if node.id not in state.favorites or node.user_id not in state.owners:
            self.prefetch([node], environ)
        if name == OC_FAVORITE:
            return "1" if state.favorites.get(node.id) else "0"
        username, display = state.owners.get(node.user_id, ("", ""))
        return username if name == OC_OWNER_ID else display

    def values(
        self, item: Any, environ: Mapping[str, Any]
    ) -> Sequence[tuple[str, PropertyValue | None]]:
        """``[(name, value(item, name)) for name in property_names(item)]``, with the request's
        state looked up once; no share types as ``""`` rather than an empty element (both
        answer ``<oc:share-types/>``)."""
        node: NodeInfo = item
        state = _state(environ)
        if node.id not in state.favorites or node.user_id not in state.owners:
            self.prefetch([node], environ)
        username, display = state.owners.get(node.user_id, ("", ""))
        shared = self._share_kinds(node, environ)
        found: list[tuple[str, PropertyValue | None]] = [
            (OC_ID, oc_id(node.id, self.instance_id)),
            (OC_FILEID, str(node.id)),
            (OC_PERMISSIONS, permissions_for(node, environ)),
            (OC_SIZE, str(node.size)),
            (OC_FAVORITE, "1" if state.favorites.get(node.id) else "0"),
            (OC_SHARE_TYPES, _share_types_element(shared) if shared else ""),
            (OC_OWNER_ID, username),
            (OC_OWNER_DISPLAY_NAME, display),
            (NC_HAS_PREVIEW, "false"),
        ]
        if node.checksums:
            found.append((OC_CHECKSUMS, _checksums_element(node.checksums)))
        if node.parent_id is None:
            found.append((OC_DATA_FINGERPRINT, ""))
        return found

    def _share_kinds(self, node: NodeInfo, environ: Mapping[str, Any]) -> list[int]:
        """The kinds of share ``oc:share-types`` lists for ``node``, in order."""
        state = _state(environ)
        if node.id not in state.share_types:
            principal = principal_of(environ)
            ids = sorted(state.unread_share_types | {node.id})
            state.unread_share_types.clear()
            found: dict[int, set[int]] = {i: set() for i in ids}
            if isinstance(principal, Principal):
                for source in self.share_type_sources:
                    for node_id, kind in source(self.db, principal.user_id, ids):
                        found.setdefault(node_id, set()).add(kind)
            state.share_types.update(found)
        return sorted(state.share_types.get(node.id, ()))

    def set_value(
        self, item: Any, name: str, value: etree._Element | None, environ: Mapping[str, Any]
    ) -> bool:
        """PROPPATCH ``oc:favorite`` (``1``/``true`` marks, anything else or remove unmarks)."""
        if name != OC_FAVORITE:
            return False
        node: NodeInfo = item
        text = (value.text or "").strip().lower() if value is not None else ""
        starred = text in ("1", "true")
        with self.db.write() as session:
            set_favorite(session, _caller_id(environ) or node.user_id, node.id, starred)
        _state(environ).favorites[node.id] = starred
        return True
