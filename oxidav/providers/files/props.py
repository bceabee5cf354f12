"""Properties of files and folders: live properties from the loaded row, dead properties and
locks prefetched once per page, and the PROPFIND enrichment plug-in point.

WsgiDAV asks every resource for every property one at a time, two or three times per request
(docs/wsgidav.md#properties). Here each answer is an O(1) read: live properties come from the
``NodeInfo`` the resource was built from; dead properties (RFC 4918 §4) and lock discovery (§15.8)
come from a ``Page`` shared by all resources of one listing, which loads them for the whole page
with one query each, and only if some resource asks.

Client XML is stored only in the form ``xml_input.storable`` makes (it reads back by
construction); a stored value that does not read back (written before that rule) is left out
of the resource's properties with a WARNING, and a lock owner that does not is left out of
its ``activelock`` — never a 500.

Enrichers (docs/architecture.md#request-path, ``oxidav.providers.dav.enrichment``) are objects a
middleware puts into the environ; a page calls each one's ``prefetch`` once with all its nodes, then
asks it for names and values; PROPPATCH of a property an enricher lists goes to its ``set_value``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from lxml import etree
from wsgidav import util
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_FORBIDDEN,
    HTTP_NOT_FOUND,
    DAVError,
    PRECONDITION_CODE_ProtectedProperty,
)

from oxidav.environ import ENVIRON_PROPPATCH
from oxidav.providers.dav.enrichment import Enricher, enrichers
from oxidav.providers.dav.xml_input import storable, stored_xml
from oxidav.providers.files.context import FilesBackend
from oxidav.providers.files.locks import DbLockStorage
from oxidav.tree import locks as lock_rows
from oxidav.tree.props import read_props
from oxidav.tree.types import NodeInfo

MAX_DEAD_NAME = 512
MAX_DEAD_VALUE = 1 << 20

GETETAG = "{DAV:}getetag"
LOCK_PROPS = ("{DAV:}lockdiscovery", "{DAV:}supportedlock")
QUOTA_PROPS = ("{DAV:}quota-used-bytes", "{DAV:}quota-available-bytes")
FILE_PROPS = (
    "{DAV:}resourcetype",
    "{DAV:}creationdate",
    "{DAV:}getcontentlength",
    "{DAV:}getcontenttype",
    "{DAV:}getlastmodified",
    "{DAV:}displayname",
    GETETAG,
)
FOLDER_PROPS = (
    "{DAV:}resourcetype",
    "{DAV:}creationdate",
    "{DAV:}getlastmodified",
    "{DAV:}displayname",
    GETETAG,
)
#: The DAV: properties this module answers; never passed on to enrichers.
STANDARD = frozenset((*FILE_PROPS, *QUOTA_PROPS, *LOCK_PROPS))
#: Nextcloud's quota-available-bytes for "no quota" (its SPACE_UNLIMITED).
UNLIMITED = -3


class Page:
    """Nodes loaded together, with their dead properties and locks fetched on first need."""

    def __init__(
        self,
        backend: FilesBackend,
        environ: dict[str, Any],
        nodes: Sequence[NodeInfo],
        lock_root: str,
        *,
        listing: bool,
    ) -> None:
        self.backend = backend
        self.environ = environ
        self.nodes = nodes
        #: Normalized lock root of the listed folder (or of the single resource).
        self.lock_root = lock_root
        self.listing = listing
        self._props: dict[int, dict[str, bytes]] | None = None
        #: Node ids whose values have been checked to read back (unreadable ones dropped).
        self._checked: set[int] = set()
        self._locks: dict[str, list[dict[str, Any]]] | None = None
        self._enrichers: list[Enricher] | None = None

    def props(self, node_id: int, where: Callable[[], str]) -> dict[str, bytes]:
        """The dead properties of ``node_id`` that read back (``where()``: its URL, for the log
        of one that does not; asked only then)."""
        if self._props is None:
            self._props = read_props(self.backend.db, [n.id for n in self.nodes])
            self._checked.clear()
        found = self._props.get(node_id, {})
        if node_id not in self._checked:
            self._checked.add(node_id)
            for name, value in list(found.items()):
                if stored_xml(value, resource=where(), name=name) is None:
                    del found[name]
        return found

    def forget_props(self) -> None:
        self._props = None

    def locks(self, root: str) -> list[dict[str, Any]]:
        """Live locks rooted exactly at ``root`` (normalized)."""
        if self._locks is None:
            found = lock_rows.read_locks(
                self.backend.db, self.lock_root, include_root=True, include_children=self.listing
            )
            self._locks = {}
            for lock in found:
                self._locks.setdefault(lock["root"], []).append(lock)
        return self._locks.get(root, [])

    def holds_no_locks(self, manager: Any) -> bool:
        """True when ``manager`` keeps its locks in the database (as ``_direct_locks`` reads
        them) and none is alive at or below the page's lock root: no node of the page has a
        lock to show. False when that is not known."""
        if not isinstance(getattr(manager, "storage", None), DbLockStorage):
            return False
        self.locks(self.lock_root)
        return not self._locks

    def enrichers(self) -> list[Enricher]:
        if self._enrichers is None:
            self._enrichers = list(enrichers(self.environ))
            for enricher in self._enrichers:
                enricher.prefetch(self.nodes, self.environ)
        return self._enrichers


class NodeProperties:
    """Mixin of ``FileResource`` and ``FolderResource``: property reads and PROPPATCH."""

    node: NodeInfo
    page: Page
    provider: Any
    environ: dict[str, Any]
    is_collection: bool

    def get_ref_url(self) -> str:
        raise NotImplementedError

    def get_href(self) -> str:
        raise NotImplementedError

    def get_last_modified(self) -> float:
        raise NotImplementedError

    def get_creation_date(self) -> float:
        raise NotImplementedError

    def get_display_name(self) -> str:
        raise NotImplementedError

    # -- reading --------------------------------------------------------------------------

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names = list(FOLDER_PROPS if self.is_collection else FILE_PROPS)
        if self.is_collection and not is_allprop:
            names.extend(QUOTA_PROPS)  # RFC 4331 §3: not part of allprop
        if self.provider.lock_manager is not None:
            names.extend(LOCK_PROPS)
        names.extend(self.page.props(self.node.id, self.get_ref_url))
        for enricher in self.page.enrichers():
            names.extend(enricher.property_names(self.node))
        return names

    def get_property_value(self, name: str) -> Any:
        value = self.find_property_value(name)
        if value is None and not name.startswith("{DAV:}"):
            raise DAVError(HTTP_NOT_FOUND)
        return value

    def find_property_value(self, name: str) -> Any:
        """``get_property_value``, with None for a property this node does not have instead of
        a raised 404: a PROPFIND names properties most nodes lack (``oc:downloadURL``)."""
        if name.startswith("{DAV:}"):
            return self._live_value(name)
        found = self._enriched(name)
        if found is not None:
            return found
        value = self.page.props(self.node.id, self.get_ref_url).get(name)
        return None if value is None else stored_xml(value, resource=self.get_ref_url(), name=name)

    def _live_value(self, name: str) -> Any:
        node = self.node
        if name == GETETAG:
            return f'"{node.etag}"'  # the same quoted form as the ETag header (RFC 4918 §15.6)
        if name == "{DAV:}getlastmodified":
            return util.get_rfc1123_time(self.get_last_modified())
        if name == "{DAV:}resourcetype":
            if not self.is_collection:
                return ""
            element = etree.Element(name)
            etree.SubElement(element, "{DAV:}collection")
            return element
        if name == "{DAV:}displayname":
            return self.get_display_name()
        if name == "{DAV:}creationdate":
            return util.get_rfc3339_time(self.get_creation_date())
        if not self.is_collection:
            if name == "{DAV:}getcontentlength":
                return str(node.size)
            if name == "{DAV:}getcontenttype":
                return node.mime_type
        elif name in QUOTA_PROPS:
            used, available = self.provider.backend.quota(self.environ, node.user_id)
            if name == "{DAV:}quota-used-bytes":
                return str(used if node.parent_id is None else node.size)
            return str(UNLIMITED if available is None else available)
        if self.provider.lock_manager is not None:
            if name == "{DAV:}lockdiscovery":
                return self._lockdiscovery()
            if name == "{DAV:}supportedlock":
                return _supportedlock()
        if name in STANDARD:
            raise DAVError(HTTP_NOT_FOUND)  # ours, and not defined for this resource
        found = self._enriched(name)
        if found is not None:
            return found
        raise DAVError(HTTP_NOT_FOUND)

    def _enriched(self, name: str) -> Any:
        for enricher in self.page.enrichers():
            value = enricher.value(self.node, name, self.environ)
            if value is not None:
                return value
        return None

    def has_locks(self) -> bool:
        return bool(self._direct_locks())

    def _direct_locks(self) -> list[dict[str, Any]]:
        manager = self.provider.lock_manager
        root = lock_rows.normalize_root(self.get_ref_url())
        storage = getattr(manager, "storage", None)
        if isinstance(storage, DbLockStorage):
            # Read with the page's batch; a lock whose holder lost access is not shown.
            return storage.standing(self.page.locks(root))
        locks: list[dict[str, Any]] = manager.get_url_lock_list(root)
        return locks

    def _lockdiscovery(self) -> etree._Element:
        """RFC 4918 §15.8: the locks whose root is this resource."""
        element = etree.Element("{DAV:}lockdiscovery")
        for lock in self._direct_locks():
            active = etree.SubElement(element, "{DAV:}activelock")
            etree.SubElement(etree.SubElement(active, "{DAV:}locktype"), "{DAV:}" + lock["type"])
            etree.SubElement(etree.SubElement(active, "{DAV:}lockscope"), "{DAV:}" + lock["scope"])
            etree.SubElement(active, "{DAV:}depth").text = lock["depth"]
            if lock["owner"]:
                owner = stored_xml(lock["owner"], resource=self.get_ref_url(), name="lock owner")
                if owner is not None:
                    active.append(owner)
            if lock["timeout"] < 0:
                timeout = "Infinite"
            else:
                timeout = f"Second-{max(0, int(lock['expire'] - time.time()))}"
            etree.SubElement(active, "{DAV:}timeout").text = timeout
            token = etree.SubElement(active, "{DAV:}locktoken")
            etree.SubElement(token, "{DAV:}href").text = lock["token"]
            root = etree.SubElement(active, "{DAV:}lockroot")
            etree.SubElement(root, "{DAV:}href").text = self.get_href()
        return element

    # -- PROPPATCH -------------------------------------------------------------------------

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        """RFC 4918 §9.2: dead properties of any namespace; protected live ones refused.

        The real (non dry-run) changes are collected in the environ and written by the
        provider in one transaction once every property has been accepted.
        """
        if name.startswith("{DAV:}"):
            config = self.environ["wsgidav.config"]
            if name == "{DAV:}getlastmodified" and name in config.get("mutable_live_props", []):
                stamp = util.parse_time_string(value.text if value is not None else "")
                if stamp is None:
                    raise DAVError(HTTP_BAD_REQUEST, "invalid getlastmodified")
                if not dry_run:
                    self.environ.setdefault(ENVIRON_PROPPATCH, []).append(
                        (self.node.id, name, float(stamp))
                    )
                return
            raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)
        for enricher in self.page.enrichers():
            if name in enricher.property_names(self.node):
                if not dry_run and not enricher.set_value(self.node, name, value, self.environ):
                    raise DAVError(
                        HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty
                    )
                return
        if len(name) > MAX_DEAD_NAME:
            raise DAVError(HTTP_FORBIDDEN, "property name too long")
        data = None if value is None else storable(value)
        if data is not None and len(data) > MAX_DEAD_VALUE:
            raise DAVError(HTTP_FORBIDDEN, "property value too large")
        if not dry_run:
            self.environ.setdefault(ENVIRON_PROPPATCH, []).append((self.node.id, name, data))


def _supportedlock() -> etree._Element:
    element = etree.Element("{DAV:}supportedlock")
    for scope in ("exclusive", "shared"):
        entry = etree.SubElement(element, "{DAV:}lockentry")
        etree.SubElement(etree.SubElement(entry, "{DAV:}lockscope"), "{DAV:}" + scope)
        etree.SubElement(etree.SubElement(entry, "{DAV:}locktype"), "{DAV:}write")
    return element
