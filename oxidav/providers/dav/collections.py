"""The generic resources of the store-backed DAV rooms: CalDAV and CardDAV add small classes.

- ``LiveProperties``: live properties from a ``{name: getter}`` table, before WsgiDAV's own;
  every property is protected and nothing can be locked (clients synchronise with ETags).
- ``OwnedCollection``: a collection below a user's home, with DAV:owner,
  current-user-principal, current-user-privilege-set and supported-report-set.
- ``ObjectCollection``: a calendar or address book holding text objects, with its CS:getctag /
  DAV:sync-token (RFC 6578 §4) and the member lookups of ``SyncCollection``.
- ``TextObjectResource``: one stored text object (an iCalendar object, a vCard), its ETag
  quoted in PROPFIND exactly as in the ETag header.

To add a kind of collection, subclass ``ObjectCollection`` and implement ``load_rows``,
``load_row``, ``member_resource`` and ``load_sync_token``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, Generic, Protocol, TypeVar
from urllib.parse import quote

from lxml import etree
from wsgidav.dav_error import HTTP_FORBIDDEN, DAVError, PRECONDITION_CODE_ProtectedProperty
from wsgidav.dav_provider import DAVCollection, DAVNonCollection

from oxidav.providers.dav.xml import (
    CURRENT_USER_PRINCIPAL,
    CURRENT_USER_PRIVILEGE_SET,
    GETCTAG,
    GETETAG,
    OWNER,
    OWNER_PRIVILEGES,
    RESOURCETYPE,
    SUPPORTED_REPORT_SET,
    SYNC_TOKEN,
    href_element,
    privilege_set,
    resourcetype,
    supported_report_set,
    text_element,
)
from oxidav.urls import principal_href

Getter = Callable[[], Any]
BackendT = TypeVar("BackendT")


class CollectionRow(Protocol):
    """What a collection resource reads of its stored row (``CalendarInfo``, ``BookInfo``)."""

    @property
    def id(self) -> int: ...
    @property
    def uri(self) -> str: ...
    @property
    def displayname(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...


class ObjectRow(Protocol):
    """What an object resource reads of its stored row (``ObjectInfo``, ``CardInfo``)."""

    @property
    def name(self) -> str: ...
    @property
    def etag(self) -> str: ...
    @property
    def size(self) -> int: ...
    @property
    def modified_at(self) -> datetime: ...


class LiveProperties:
    """Mixin: live properties from ``live_properties()``, answered before WsgiDAV's own.

    A collection lists them all for propname (allprop keeps to RFC 4918's, §9.1)."""

    def live_properties(self) -> dict[str, Getter]:
        return {}

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = super().get_property_names(is_allprop=is_allprop)  # type: ignore[misc]
        if is_allprop:
            return names
        return names + [name for name in self.live_properties() if name not in names]

    def get_property_value(self, name: str) -> Any:
        getter = self.live_properties().get(name)
        if getter is not None:
            return getter()
        return super().get_property_value(name)  # type: ignore[misc]

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        raise DAVError(HTTP_FORBIDDEN, err_condition=PRECONDITION_CODE_ProtectedProperty)

    def prevent_locking(self) -> bool:
        """No LOCK here: clients synchronise with entity tags (If-Match)."""
        return True


class OwnedProperties(LiveProperties):
    """Mixin: the access properties of a resource below ``owner_name``'s home."""

    environ: dict[str, Any]
    provider: Any  # its DAVProvider: ``mount_path`` is the hrefs' prefix
    owner_name: str
    #: DAV:current-user-privilege-set of the owner (RFC 3744 §5.4).
    privileges: tuple[str, ...] = OWNER_PRIVILEGES

    def live_properties(self) -> dict[str, Getter]:
        return {
            CURRENT_USER_PRINCIPAL: self._current_user_principal,
            CURRENT_USER_PRIVILEGE_SET: lambda: privilege_set(self.privileges),
            OWNER: lambda: href_element(
                OWNER, principal_href(self.owner_name, self.provider.mount_path)
            ),
            SUPPORTED_REPORT_SET: lambda: supported_report_set(self),
        }

    def _current_user_principal(self) -> etree._Element:
        user = self.environ.get("wsgidav.auth.user_name") or self.owner_name
        return href_element(CURRENT_USER_PRINCIPAL, principal_href(user, self.provider.mount_path))


class OwnedCollection(OwnedProperties, DAVCollection, Generic[BackendT]):  # type: ignore[misc]
    """A collection of one owner, served from ``backend``; read-only unless a subclass says
    otherwise."""

    def __init__(
        self, path: str, environ: dict[str, Any], backend: BackendT, owner_name: str
    ) -> None:
        super().__init__(path, environ)
        self.backend = backend
        self.owner_name = owner_name


class ObjectCollection(OwnedCollection[BackendT]):
    """A collection of text objects (a calendar, an address book) read from its row ``info``.

    Subclasses name their resource type (``kinds``) and implement the store lookups."""

    info: CollectionRow
    #: The DAV:resourcetype children besides DAV:collection.
    kinds: tuple[str, ...] = ()

    def __init__(
        self,
        path: str,
        environ: dict[str, Any],
        backend: BackendT,
        owner_name: str,
        info: CollectionRow,
    ) -> None:
        super().__init__(path, environ, backend, owner_name)
        self.info = info
        self._token: str | None = None

    def live_properties(self) -> dict[str, Getter]:
        props = super().live_properties()
        props[RESOURCETYPE] = lambda: resourcetype(*self.kinds)
        return props

    def sync_token(self) -> str:
        """The DAV:sync-token (RFC 6578 §4), also the CS:getctag: it changes with every
        change of a member. Read once per resource."""
        if self._token is None:
            self._token = self.load_sync_token()
        return self._token

    def sync_properties(self) -> dict[str, Getter]:
        """CS:getctag and DAV:sync-token, for ``live_properties``."""
        return {GETCTAG: self.sync_token, SYNC_TOKEN: self.sync_token}

    def load_sync_token(self) -> str:
        raise NotImplementedError

    def load_rows(self) -> Sequence[ObjectRow]:
        """The rows of all members (without their data)."""
        raise NotImplementedError

    def load_row(self, name: str) -> ObjectRow | None:
        raise NotImplementedError

    def member_resource(self, row: Any) -> TextObjectResource:
        raise NotImplementedError

    def get_display_name(self) -> str:
        return self.info.displayname or self.info.uri

    def get_creation_date(self) -> float:
        return self.info.created_at.timestamp()

    def member_href(self, name: str) -> str:
        """The href of member ``name``: this collection's own href (quoted once per request,
        not once per member of a listing) and the quoted name."""
        own: str | None = self.__dict__.get("_own_href")
        if own is None:
            own = self.__dict__["_own_href"] = str(self.get_href())
        return own + _quote_segment(name)

    def member_path(self, name: str) -> str:
        return f"{self.path.rstrip('/')}/{name}"

    def get_member_names(self) -> list[str]:
        return [row.name for row in self.load_rows()]

    def get_member_list(self) -> list[TextObjectResource]:
        return [self.member_resource(row) for row in self.load_rows()]

    def get_member(self, name: str) -> TextObjectResource | None:
        row = self.load_row(name)
        return None if row is None else self.member_resource(row)

    def sync_member_href(self, name: str) -> str:
        """``SyncCollection`` (oxidav.providers.dav.sync_report)."""
        return self.member_href(name)


class TextObjectResource(OwnedProperties, DAVNonCollection):  # type: ignore[misc]
    """One stored text object: its ``row`` answers the metadata, ``text()`` the body, which
    is also the value of the room's data property (``data_property``)."""

    #: The data property (CALDAV:calendar-data, CARDDAV:address-data).
    data_property: str = ""
    #: Properties propname lists besides WsgiDAV's.
    listed_properties: tuple[str, ...] = (CURRENT_USER_PRIVILEGE_SET, OWNER)

    row: ObjectRow

    def __init__(
        self, path: str, environ: dict[str, Any], collection: ObjectCollection[Any], row: Any
    ) -> None:
        super().__init__(path, environ)
        self.row = row
        self.owner_name = collection.owner_name

    def text(self) -> str:
        """The stored text, loaded on first use."""
        raise NotImplementedError

    def get_content_length(self) -> int:
        return self.row.size

    def get_etag(self) -> str:
        return self.row.etag

    def support_etag(self) -> bool:
        return True

    def support_ranges(self) -> bool:
        return False

    def get_last_modified(self) -> float:
        return self.row.modified_at.timestamp()

    def get_display_name(self) -> str:
        return str(self.name)

    def get_property_names(self, *, is_allprop: bool) -> list[str]:
        names: list[str] = DAVNonCollection.get_property_names(self, is_allprop=is_allprop)
        return names if is_allprop else [*names, *self.listed_properties]

    def get_property_value(self, name: str) -> Any:
        if name == GETETAG:
            return row_etag(self.row)
        if name == self.data_property:
            return text_element(self.data_property, self.text())
        return super().get_property_value(name)


def row_etag(row: ObjectRow) -> str:
    """DAV:getetag of a stored object: its ETag quoted, exactly as in the ETag header (WsgiDAV
    would send it bare). A REPORT that asks for nothing else answers it from the row alone."""
    return f'"{row.etag}"'


def _quote_segment(name: str) -> str:
    # The characters WsgiDAV's get_href() leaves unquoted, so both spell an href alike.
    return quote(name, safe="!*'(),$-_|.")


def finite_depth(environ: dict[str, Any]) -> None:
    """PROPFIND with Depth: infinity (or none, which means infinity) is answered as Depth: 1,
    as SabreDAV does: the calendar tree is at most two levels deep below a home, and a client
    that omits the header still gets its answer (RFC 4918 §9.1 lets a server limit depth)."""
    if environ.get("HTTP_DEPTH", "infinity").strip().lower() not in ("0", "1"):
        environ["HTTP_DEPTH"] = "1"
