"""Shared calendars and address books as they appear in the recipient's home (CalDAV, CardDAV).

A collection alice shared with bob appears in bob's home as its own collection, named as
Nextcloud names it (``<uri>_shared_by_<owner>``), served from alice's data: its objects, its
sync token, its properties. Whether bob may see or change it is asked of
``oxidav.authz.grants.collections`` on every request; this module only turns the answer into DAV:

- ``shared_name`` / ``parse_shared_name``: the member name in the recipient's home;
- ``SharedState``: the answer for one collection (the ``Reach``) and what follows from it for
  DAV — ``current-user-privilege-set`` (RFC 3744 §5.4: read-only shares list only read
  privileges; read-write ones add ``write-content``, ``bind`` and ``unbind``), the sharing
  properties (``CS:shared-url``, ``CS:invite``, ``DAV:share-access``, ``OC:owner-principal``) and
  ``require``, which refuses a write with 403 and an RFC 3744 §7.1.1 ``DAV:need-privileges``
  body (or 404 when nothing reaches the collection any more).

The recipient cannot change the owner's collection properties through a share: PROPPATCH of
a *personal* property (``displayname``; for calendars also ``calendar-color`` and
``calendar-order``) stores the recipient's own value, shown only to them
(``oxidav.providers.dav.share_overrides``, as Nextcloud does for sharees); any other property is
refused with ``need-privileges``, and ``write-properties`` is never listed. DELETE of the shared
collection removes it from the recipient's home (``CollectionAccess.decline``) with their own
values. A personal value is stored as ``xml_input.storable`` makes it; one that does not read
back (written before that rule) is left out with a WARNING.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any, Protocol, TypeVar

from lxml import etree
from wsgidav.dav_error import HTTP_FORBIDDEN, HTTP_NOT_FOUND, DAVError, DAVErrorCondition

from oxidav.authz.authn.principal import Principal
from oxidav.authz.grants.collections import CollectionAccess, Reach, SharedCollections
from oxidav.authz.grants.decision import Decision
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import Action
from oxidav.environ import ENVIRON_OVERRIDES, principal_of
from oxidav.providers.dav import share_overrides
from oxidav.providers.dav.collections import Getter, ObjectCollection, TextObjectResource
from oxidav.providers.dav.users import HomeBackend
from oxidav.providers.dav.xml import CS, DISPLAYNAME, href_element
from oxidav.providers.dav.xml_input import parse_xml, storable, stored_xml
from oxidav.urls import principal_href

SHARED_BY = "_shared_by_"
OWNCLOUD_NS = "http://owncloud.org/ns"

SHARED = CS + "shared"
SHARED_URL = CS + "shared-url"
INVITE = CS + "invite"
SHARE_ACCESS = "{DAV:}share-access"
OWNER_PRINCIPAL = f"{{{OWNCLOUD_NS}}}owner-principal"

READ = "{DAV:}read"
READ_ACL_SELF = "{DAV:}read-current-user-privilege-set"
WRITE_CONTENT = "{DAV:}write-content"
WRITE_PROPERTIES = "{DAV:}write-properties"
BIND = "{DAV:}bind"
UNBIND = "{DAV:}unbind"

#: The privilege each member action needs (RFC 3744 §3.3, §3.9, §3.10).
MEMBER_PRIVILEGE = {Action.WRITE: WRITE_CONTENT, Action.CREATE: BIND, Action.DELETE: UNBIND}


def shared_name(uri: str, owner: str) -> str:
    """The member name of ``owner``'s collection ``uri`` in a recipient's home."""
    return f"{uri}{SHARED_BY}{owner}"


def parse_shared_name(name: str) -> tuple[str, str] | None:
    """(uri, owner) of a shared member name, or None if ``name`` is not one."""
    uri, sep, owner = name.rpartition(SHARED_BY)
    if not sep or not uri or not owner:
        return None
    return uri, owner


def need_privileges(href: str, privilege: str) -> DAVErrorCondition:
    """The ``DAV:need-privileges`` body of a 403 (RFC 3744 §7.1.1) for one resource.

    WsgiDAV accepts only a plain ``DAVErrorCondition`` (its constructor checks the exact
    type) whose body is a flat list of hrefs, so this one builds its own body."""
    cond = DAVErrorCondition("{DAV:}need-privileges")

    def as_xml() -> etree._Element:
        error = etree.Element("{DAV:}error", nsmap={"d": "DAV:"})
        resource = etree.SubElement(
            etree.SubElement(error, "{DAV:}need-privileges"), "{DAV:}resource"
        )
        etree.SubElement(resource, "{DAV:}href").text = href
        etree.SubElement(etree.SubElement(resource, "{DAV:}privilege"), privilege)
        return error

    cond.as_xml = as_xml
    return cond


def refusal(decision: Decision, href: str, privilege: str) -> DAVError:
    """The error of a denied write: 404 when nothing reaches the collection, else 403 with
    ``need-privileges`` naming ``privilege`` on ``href``."""
    if decision.status == HTTP_NOT_FOUND:
        return DAVError(HTTP_NOT_FOUND)
    return DAVError(HTTP_FORBIDDEN, decision.reason, err_condition=need_privileges(href, privilege))


@dataclass(frozen=True)
class SharedState:
    """What a shared collection knows of its share: the reach, the owner, where it lives."""

    reach: Reach
    owner_name: str
    #: The owner's URL of the collection (CS:shared-url).
    owner_href: str
    #: Privileges every principal holds here besides read (CALDAV:read-free-busy).
    extra_read: tuple[str, ...] = ()
    #: The ``base_path`` prefix of the hrefs it answers (the provider's ``mount_path``).
    mount: str = ""

    @property
    def privileges(self) -> tuple[str, ...]:
        """DAV:current-user-privilege-set of the collection and of its objects."""
        granted = [READ, READ_ACL_SELF, *self.extra_read]
        granted += [p for action, p in MEMBER_PRIVILEGE.items() if self.reach.may(action)]
        return tuple(granted)

    def properties(
        self, environ: dict[str, Any], display_name: Callable[[str], str]
    ) -> dict[str, Callable[[], Any]]:
        """The sharing properties; ``display_name(user)`` gives a user's common name."""
        return {
            SHARED_URL: lambda: href_element(SHARED_URL, self.owner_href),
            INVITE: lambda: self._invite(environ, display_name),
            SHARE_ACCESS: self._share_access,
            OWNER_PRINCIPAL: lambda: _text(
                OWNER_PRINCIPAL, principal_href(self.owner_name, self.mount).strip("/")
            ),
        }

    def _share_access(self) -> etree._Element:
        element = etree.Element(SHARE_ACCESS)
        etree.SubElement(element, "{DAV:}read-write" if self.reach.writable else "{DAV:}read")
        return element

    def _invite(
        self, environ: dict[str, Any], display_name: Callable[[str], str]
    ) -> etree._Element:
        """CS:invite as CalendarServer answers it to a sharee: the organizer and this user."""
        invite = etree.Element(INVITE)
        organizer = etree.SubElement(invite, CS + "organizer")
        etree.SubElement(organizer, "{DAV:}href").text = principal_href(self.owner_name, self.mount)
        _text(CS + "common-name", display_name(self.owner_name), organizer)
        user = str(environ.get("wsgidav.auth.user_name") or "")
        if user:
            entry = etree.SubElement(invite, CS + "user")
            etree.SubElement(entry, "{DAV:}href").text = principal_href(user, self.mount)
            _text(CS + "common-name", display_name(user), entry)
            etree.SubElement(entry, CS + "invite-accepted")
            access = etree.SubElement(entry, CS + "access")
            etree.SubElement(access, CS + ("read-write" if self.reach.writable else "read"))
        return invite

    def require(
        self, shares: SharedCollections, environ: dict[str, Any], action: Action, href: str
    ) -> None:
        """Raise the refusal unless the principal may do ``action`` on an object of this
        collection (asked again, so a share revoked since the lookup is honoured)."""
        access = shares.for_request(environ)
        decision = (
            access.check_member(action, self.reach.resource)
            if isinstance(access, CollectionAccess)
            else Decision(False, HTTP_NOT_FOUND, "not authenticated")
        )
        if not decision.allowed:
            raise refusal(decision, href, MEMBER_PRIVILEGE.get(action, WRITE_CONTENT))

    def refuse_proppatch(self, href: str) -> DAVError:
        """PROPPATCH of a shared collection's non-personal property: it is the owner's."""
        return DAVError(
            HTTP_FORBIDDEN,
            "the properties of a shared collection belong to its owner",
            err_condition=need_privileges(href, WRITE_PROPERTIES),
        )


def decline_share(
    shares: SharedCollections, environ: dict[str, Any], share: SharedState, href: str
) -> None:
    """DELETE of a shared collection by its recipient: the share leaves their home (their own
    grants are revoked); refused with 403 (``unbind`` on the home) while a group grant still
    reaches it."""
    access = shares.for_request(environ)
    decision = (
        access.decline(share.reach.resource)
        if isinstance(access, CollectionAccess)
        else Decision(False, HTTP_NOT_FOUND, "not authenticated")
    )
    if not decision.allowed:
        home = href.rstrip("/").rsplit("/", 1)[0] + "/"
        raise refusal(decision, home, UNBIND)
    recipient = _recipient_id(environ)
    if recipient is not None:
        share_overrides.drop(shares.db, share.reach.resource, recipient)


def forget_shares(shares: SharedCollections, resource: Resource) -> None:
    """A collection is about to be deleted: its grants and every recipient's own values go
    first (a later collection that reuses the id inherits neither)."""
    shares.forget(resource)
    share_overrides.drop(shares.db, resource)


def _readable(values: dict[int, dict[str, str]], where: str) -> dict[int, dict[str, str]]:
    """``values`` without those that do not read back (each logged)."""
    return {
        resource_id: {
            name: xml
            for name, xml in props.items()
            if stored_xml(xml, resource=f"{where}, collection {resource_id}", name=name) is not None
        }
        for resource_id, props in values.items()
    }


def _recipient_id(environ: Mapping[str, Any]) -> int | None:
    principal = principal_of(environ)
    return principal.user_id if isinstance(principal, Principal) else None


def _text(tag: str, text: str, parent: etree._Element | None = None) -> etree._Element:
    element = etree.Element(tag) if parent is None else etree.SubElement(parent, tag)
    element.text = text
    return element


HomeT = TypeVar("HomeT", bound=HomeBackend[Any])


class SharedObjectCollection(ObjectCollection[HomeT]):
    """Another user's calendar or address book in the recipient's home
    (``<uri>_shared_by_<owner>``), mixed in before the collection's own class: the owner's
    objects, sync token and properties; what the recipient may do follows from the grant."""

    share: SharedState
    #: Properties the recipient may set for themselves (``share_overrides``).
    personal_properties: frozenset[str] = frozenset({DISPLAYNAME})

    def bind_share(self, share: SharedState) -> None:
        """Make this collection the recipient's view of ``share`` (call from ``__init__``)."""
        self.share = share
        self.privileges = share.privileges
        self.kinds = (*self.kinds, SHARED)

    def live_properties(self) -> dict[str, Getter]:
        props = super().live_properties()
        props.update(self.share.properties(self.environ, self.backend.display_name))
        for name, xml in self.overrides().items():
            props[name] = partial(parse_xml, xml.encode())
        return props

    def overrides(self) -> dict[str, str]:
        """The recipient's own values, read once per request for all collections of a kind."""
        resource = self.share.reach.resource
        recipient = _recipient_id(self.environ)
        if recipient is None:
            return {}
        loaded = self.environ.setdefault(ENVIRON_OVERRIDES, {})
        if resource.kind not in loaded:
            loaded[resource.kind] = _readable(
                share_overrides.load_all(self.backend.db, recipient, resource.kind),
                f"{resource.kind.value} overrides of user {recipient}",
            )
        found: dict[str, str] = loaded[resource.kind].get(resource.id, {})
        return found

    def check_personal_value(self, name: str, value: etree._Element | None) -> None:
        """Raise a DAVError for a value the owner could not set either (subclasses)."""

    def member_resource(self, row: Any) -> TextObjectResource:
        resource = super().member_resource(row)
        resource.privileges = self.privileges
        return resource

    def require(self, action: Action, href: str) -> None:
        """Refuse (403 need-privileges, or 404) unless ``action`` on an object is allowed."""
        self.share.require(self.backend.shares, self.environ, action, href)

    def handle_delete(self) -> bool:
        """DELETE removes the share from the recipient's home, never the owner's collection."""
        decline_share(self.backend.shares, self.environ, self.share, str(self.get_href()))
        return True

    def set_property_value(self, name: str, value: Any, *, dry_run: bool = False) -> None:
        """PROPPATCH: a personal property is the recipient's own; the rest is refused."""
        recipient = _recipient_id(self.environ)
        if name not in self.personal_properties or recipient is None:
            raise self.share.refuse_proppatch(str(self.get_href()))
        self.check_personal_value(name, value)
        if dry_run:
            return
        xml = None if value is None else storable(value).decode()
        share_overrides.save(self.backend.db, recipient, self.share.reach.resource, name, xml)
        self.environ.pop(ENVIRON_OVERRIDES, None)


class SharedRow(Protocol):
    """What a calendar's or address book's row offers for share listings."""

    @property
    def id(self) -> int: ...
    @property
    def uri(self) -> str: ...
    @property
    def user_id(self) -> int: ...


RowT = TypeVar("RowT", bound=SharedRow)


def home_access(
    shares: SharedCollections, environ: dict[str, Any], home_user_id: int
) -> CollectionAccess | None:
    """The request's share questions, when the home is the authenticated user's own."""
    access = shares.for_request(environ)
    if access is None or access.principal.user_id != home_user_id:
        return None
    return access


def reachable_rows(
    access: CollectionAccess,
    kind: ResourceKind,
    rows_with_owners: Callable[[Mapping[int, Reach]], Iterable[tuple[RowT, str]]],
    taken: Collection[str] = (),
) -> list[tuple[RowT, str, Reach]]:
    """The collections of others of ``kind`` this principal reaches, with their owners' names
    and reaches (one query, ``rows_with_owners``, for all of them); a row whose owner is not
    the one recorded in its grant, or whose shared name ``taken`` already holds, is left out."""
    reaches = {r.resource.id: r for r in access.reachable(kind)}
    found = []
    for info, owner in rows_with_owners(reaches):
        reach = reaches[info.id]
        if reach.resource.owner_id == info.user_id and shared_name(info.uri, owner) not in taken:
            found.append((info, owner, reach))
    return found
