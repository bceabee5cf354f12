"""The Nextcloud PROPFIND enrichment: ``oc:`` and ``nc:`` properties of files and folders.

``NodeEnricher`` implements ``oxidav.providers.enrichment.Enricher`` over the tree's
``NodeInfo`` rows (nextcloud_protocol.md A.6): ``oc:id`` (zero-padded file id + instance id,
stable across MOVE), ``oc:fileid``, ``oc:permissions``, ``oc:size`` (folders: the rolled-up
size), ``oc:checksums``, ``oc:favorite`` (also settable by PROPPATCH), ``oc:share-types``
(empty: no sharing yet), ``oc:data-fingerprint`` (root only, constant), ``oc:owner-id``,
``oc:owner-display-name`` and ``nc:has-preview`` (false: no previews yet).

Per-request state (favorites, owner names) lives in the environ, filled by ``prefetch`` with
one query per page for favorites and one for owners; a value asked for a row that was never
prefetched costs one small query, then it is remembered too.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from lxml import etree
from sqlalchemy import select

from oxidav.db import Database
from oxidav.db.models.users import User
from oxidav.nextcloud.favorites import favorite_ids, set_favorite
from oxidav.providers.enrichment import PropertyValue
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

STATE_KEY = "oxidav.nextcloud.enrichment"


def oc_id(node_id: int, instance_id: str) -> str:
    """Nextcloud's ``oc:id`` / ``OC-FileId``: ``sprintf('%08d', fileid) . instanceid``."""
    return f"{node_id:08d}{instance_id}"


def permissions(node: NodeInfo) -> str:
    return FOLDER_PERMISSIONS if node.is_folder else FILE_PERMISSIONS


@dataclass
class _State:
    """What this request knows: favorites per node id, (user name, display name) per user."""

    favorites: dict[int, bool] = field(default_factory=dict)
    owners: dict[int, tuple[str, str]] = field(default_factory=dict)


def _state(environ: Mapping[str, Any]) -> _State:
    state = environ.get(STATE_KEY)
    if state is None:
        state = _State()
        if isinstance(environ, MutableMapping):
            environ[STATE_KEY] = state
    assert isinstance(state, _State)
    return state


def _checksums_element(value: str) -> etree._Element:
    element = etree.Element(OC_CHECKSUMS)
    etree.SubElement(element, OC + "checksum").text = value
    return element


class NodeEnricher:
    """The ``oc:``/``nc:`` properties of the files provider's nodes."""

    def __init__(self, db: Database, instance_id: str) -> None:
        self.db = db
        self.instance_id = instance_id

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
        by_user: dict[int, list[int]] = {}
        for node in nodes:
            if node.id not in state.favorites:
                by_user.setdefault(node.user_id, []).append(node.id)
        missing_owners = {n.user_id for n in nodes} - state.owners.keys()
        if not by_user and not missing_owners:
            return
        with self.db.read() as session:
            for user_id, ids in by_user.items():
                starred = favorite_ids(session, user_id, ids)
                state.favorites.update((i, i in starred) for i in ids)
            if missing_owners:
                rows = session.execute(
                    select(User.id, User.username, User.display_name).where(
                        User.id.in_(missing_owners)
                    )
                )
                for user_id, username, display in rows:
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
            return permissions(node)
        if name == OC_SIZE:
            return str(node.size)
        if name == OC_SHARE_TYPES:
            return etree.Element(OC_SHARE_TYPES)
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
            set_favorite(session, node.user_id, node.id, starred)
        _state(environ).favorites[node.id] = starred
        return True
