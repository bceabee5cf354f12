"""``PrincipalsProvider``: principals (RFC 3744 §2, RFC 5397) at ``/remote.php/dav/principals/``.

URL layout below the mount point (docs/architecture.md#urls)::

    /                   the principal collection (member: users)
    /users/             lists the authenticated user only
    /users/<user>/      the user's principal

A principal answers what a client needs to find its calendars and address books:
``current-user-principal``, ``principal-URL``, ``displayname``, ``calendar-home-set``,
``calendar-user-address-set`` (``mailto:`` from the user's email, RFC 4791 §6.2.1),
``principal-collection-set``, ``addressbook-home-set``: ``HOME_PROPERTIES``, which ``make_app``
hands to the provider (an embedder may hand others). Another user's principal answers 404.
principal-property-search and principal-search-property-set (RFC 3744 §9.4-9.5) work on the
DAV root and the principal collections and find the authenticated user only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from lxml import etree
from wsgidav.dav_provider import DAVCollection, DAVProvider

from oxidav import urls
from oxidav.db import Database
from oxidav.providers.dav.collections import Getter, LiveProperties, finite_depth
from oxidav.providers.dav.multistatus import response_bytes, send_multistatus
from oxidav.providers.dav.root import DavRoot
from oxidav.providers.dav.users import UserDirectory, UserRecord
from oxidav.providers.dav.xml import (
    CURRENT_USER_PRINCIPAL,
    CURRENT_USER_PRIVILEGE_SET,
    OWNER,
    RESOURCETYPE,
    SUPPORTED_REPORT_SET,
    href_element,
    privilege_set,
    resourcetype,
    supported_report_set,
    text_element,
)
from oxidav.settings import Settings

PRINCIPAL_URL = "{DAV:}principal-URL"
PRINCIPAL_COLLECTION_SET = "{DAV:}principal-collection-set"
GROUP_MEMBERSHIP = "{DAV:}group-membership"
ALTERNATE_URI_SET = "{DAV:}alternate-URI-set"
ADDRESSBOOK_HOME_SET = "{urn:ietf:params:xml:ns:carddav}addressbook-home-set"
CALENDAR_HOME_SET = "{urn:ietf:params:xml:ns:caldav}calendar-home-set"
CALENDAR_USER_ADDRESS_SET = "{urn:ietf:params:xml:ns:caldav}calendar-user-address-set"
CALENDAR_USER_TYPE = "{urn:ietf:params:xml:ns:caldav}calendar-user-type"
#: A principal may be read, not changed (RFC 3744 §3).
PRINCIPAL_PRIVILEGES = ("{DAV:}read", "{DAV:}read-current-user-privilege-set")

PrincipalGetter = Callable[["UserPrincipal"], Any]


class _PrincipalBase(LiveProperties, DAVCollection):  # type: ignore[misc]
    """Collections of the principal tree: read-only, with the discovery properties."""

    def __init__(self, path: str, environ: dict[str, Any], backend: UserDirectory) -> None:
        super().__init__(path, environ)
        self.backend = backend

    def live_properties(self) -> dict[str, Getter]:
        return {
            CURRENT_USER_PRINCIPAL: self._current_user_principal,
            PRINCIPAL_COLLECTION_SET: lambda: href_element(
                PRINCIPAL_COLLECTION_SET, self.provider.mount_path + urls.PRINCIPALS + "/"
            ),
            CURRENT_USER_PRIVILEGE_SET: lambda: privilege_set(PRINCIPAL_PRIVILEGES),
            SUPPORTED_REPORT_SET: lambda: supported_report_set(self),
        }

    def _current_user_principal(self) -> etree._Element:
        user = self.environ.get("wsgidav.auth.user_name")
        if not user:
            return etree.Element(CURRENT_USER_PRINCIPAL)
        return href_element(
            CURRENT_USER_PRINCIPAL, urls.principal_href(user, self.provider.mount_path)
        )


class PrincipalCollection(_PrincipalBase):
    """``/`` and ``/users/``: lead to the authenticated user's principal, nothing else."""

    def __init__(
        self, path: str, environ: dict[str, Any], backend: UserDirectory, members: list[str]
    ) -> None:
        super().__init__(path, environ, backend)
        self._members = members

    def get_member_names(self) -> list[str]:
        return list(self._members)


class UserPrincipal(_PrincipalBase):
    """A user principal (RFC 3744 §2): a collection without members."""

    user: UserRecord

    def __init__(
        self,
        path: str,
        environ: dict[str, Any],
        backend: UserDirectory,
        user: UserRecord,
        properties: Mapping[str, PrincipalGetter],
    ) -> None:
        super().__init__(path, environ, backend)
        self.user = user
        self.properties = properties

    def get_member_names(self) -> list[str]:
        return []

    def get_display_name(self) -> str:
        return self.user.display_name or self.user.username

    def live_properties(self) -> dict[str, Getter]:
        props = super().live_properties()
        href = urls.principal_href(self.user.username, self.provider.mount_path)
        props[RESOURCETYPE] = lambda: resourcetype("{DAV:}principal")
        props[PRINCIPAL_URL] = lambda: href_element(PRINCIPAL_URL, href)
        props[OWNER] = lambda: href_element(OWNER, href)
        props[GROUP_MEMBERSHIP] = lambda: etree.Element(GROUP_MEMBERSHIP)
        props[ALTERNATE_URI_SET] = lambda: etree.Element(ALTERNATE_URI_SET)
        for name, getter in self.properties.items():
            props[name] = lambda getter=getter: getter(self)  # type: ignore[misc]
        return props


def _calendar_user_addresses(principal: UserPrincipal) -> etree._Element:
    hrefs = [f"mailto:{principal.user.email}"] if principal.user.email else []
    return href_element(
        CALENDAR_USER_ADDRESS_SET,
        *hrefs,
        urls.principal_href(principal.user.username, principal.provider.mount_path),
    )


#: The properties of every user principal that lead to its calendars and address books:
#: name -> getter(principal).
HOME_PROPERTIES: dict[str, PrincipalGetter] = {
    CALENDAR_HOME_SET: lambda p: href_element(
        CALENDAR_HOME_SET, urls.calendar_home_href(p.user.username, p.provider.mount_path)
    ),
    CALENDAR_USER_ADDRESS_SET: _calendar_user_addresses,
    CALENDAR_USER_TYPE: lambda p: text_element(CALENDAR_USER_TYPE, "INDIVIDUAL"),
    ADDRESSBOOK_HOME_SET: lambda p: href_element(
        ADDRESSBOOK_HOME_SET, urls.addressbook_home_href(p.user.username, p.provider.mount_path)
    ),
}


class PrincipalsProvider(DAVProvider):  # type: ignore[misc]
    """Serves the principals of oxidav's users; read-only. ``properties``: the live properties
    every user principal adds to the standard ones (``HOME_PROPERTIES`` in oxidav)."""

    def __init__(
        self,
        db: Database,
        settings: Settings,
        properties: Mapping[str, PrincipalGetter] = HOME_PROPERTIES,
    ) -> None:
        super().__init__()
        self.backend = UserDirectory(db, settings)
        self.properties = dict(properties)

    def is_readonly(self) -> bool:
        return True

    def custom_request_handler(
        self, environ: dict[str, Any], start_response: Any, default_handler: Callable[..., Any]
    ) -> Iterable[bytes]:
        if environ["REQUEST_METHOD"] == "PROPFIND":
            finite_depth(environ)
        return default_handler(environ, start_response)  # type: ignore[no-any-return]

    def get_resource_inst(self, path: str, environ: dict[str, Any]) -> _PrincipalBase | None:
        parts = [part for part in path.split("/") if part]
        authenticated = str(environ.get("wsgidav.auth.user_name") or "")
        if not parts:
            return PrincipalCollection("/", environ, self.backend, ["users"])
        if parts[0] != "users" or len(parts) > 2:
            return None
        if len(parts) == 1:
            members = [authenticated] if authenticated else []
            return PrincipalCollection("/users/", environ, self.backend, members)
        if authenticated and parts[1] != authenticated:
            return None  # another user's principal: not found (no enumeration)
        user = self.backend.user(parts[1])
        if user is None:
            return None
        return UserPrincipal(f"/users/{parts[1]}/", environ, self.backend, user, self.properties)


class PrincipalPropertySearchReport:
    """RFC 3744 §9.4 on the DAV root or a principal collection: the principals whose
    properties contain the ``match`` texts (caseless substring; ``test`` anyof / allof), or
    all of them without a property-search. Only the authenticated user's principal is
    visible (no enumeration of other users), so that is the only possible answer."""

    name = "{DAV:}principal-property-search"

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, DavRoot | PrincipalCollection)

    def handle(
        self,
        server: Any,
        environ: dict[str, Any],
        start_response: Any,
        resource: Any,
        body: etree._Element,
    ) -> Iterable[bytes]:
        principal = _own_principal(environ)
        names = [child.tag for child in body.iterfind("{DAV:}prop/*")]
        # Leniency for clients that put the wanted properties next to an empty DAV:prop
        # (python-caldav 3.6 does).
        names += [
            child.tag
            for child in body
            if isinstance(child.tag, str) and child.tag not in _SEARCH_ELEMENTS
        ]
        names = list(dict.fromkeys(names))  # a property asked for twice is answered once
        responses = []
        if principal is not None and _search_matches(principal, body):
            props = principal.get_properties("named", name_list=names)
            href = urls.principal_href(principal.user.username, principal.provider.mount_path)
            responses.append(response_bytes(href, props))
        return send_multistatus(environ, start_response, responses)


class PrincipalSearchPropertySetReport:
    """RFC 3744 §9.5: the properties principal-property-search can match."""

    name = "{DAV:}principal-search-property-set"

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, DavRoot | PrincipalCollection)

    def handle(
        self,
        server: Any,
        environ: dict[str, Any],
        start_response: Any,
        resource: Any,
        body: etree._Element,
    ) -> Iterable[bytes]:
        root = etree.Element("{DAV:}principal-search-property-set", nsmap={"D": "DAV:"})
        for name, description in SEARCHABLE.items():
            entry = etree.SubElement(root, "{DAV:}principal-search-property")
            etree.SubElement(etree.SubElement(entry, "{DAV:}prop"), name)
            text_element_child = etree.SubElement(entry, "{DAV:}description")
            text_element_child.set("{http://www.w3.org/XML/1998/namespace}lang", "en")
            text_element_child.text = description
        data = etree.tostring(root, xml_declaration=True, encoding="utf-8")
        start_response(
            "200 OK",
            [
                ("Content-Type", "application/xml; charset=utf-8"),
                ("Content-Length", str(len(data))),
            ],
        )
        return [data]


_SEARCH_ELEMENTS = {
    "{DAV:}prop",
    "{DAV:}property-search",
    "{DAV:}apply-to-principal-collection-set",
}
SEARCHABLE = {
    "{DAV:}displayname": "Display name",
    CALENDAR_USER_ADDRESS_SET: "Calendar user address",
}


def _own_principal(environ: dict[str, Any]) -> UserPrincipal | None:
    user = environ.get("wsgidav.auth.user_name")
    if not user:
        return None
    _share, provider = environ["wsgidav.app"].resolve_provider(urls.PRINCIPALS_USERS + "/")
    if not isinstance(provider, PrincipalsProvider):
        return None
    found = provider.get_resource_inst(f"/users/{user}/", environ)
    return found if isinstance(found, UserPrincipal) else None


def _property_texts(principal: UserPrincipal, name: str) -> list[str]:
    if name == "{DAV:}displayname":
        return [principal.get_display_name(), principal.user.username]
    if name == CALENDAR_USER_ADDRESS_SET:
        return [h.text or "" for h in _calendar_user_addresses(principal)]
    return []


def _search_matches(principal: UserPrincipal, body: etree._Element) -> bool:
    results = []
    for search in body.iterfind("{DAV:}property-search"):
        needle = (search.findtext("{DAV:}match") or "").casefold()
        names = [child.tag for child in search.iterfind("{DAV:}prop/*")]
        texts = [t.casefold() for name in names for t in _property_texts(principal, name)]
        results.append(any(needle in text for text in texts))
    if not results:
        return True
    return any(results) if body.get("test") == "anyof" else all(results)


#: The REPORTs of principals (``make_app`` hands them to the request server).
REPORTS = (PrincipalPropertySearchReport(), PrincipalSearchPropertySetReport())
