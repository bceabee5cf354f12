"""The DAV:sync-collection REPORT (RFC 6578 §3.2), for any collection that can answer it.

A collection takes part by implementing ``SyncCollection``: the change log answers "what
changed since this token" (``oxidav.sync``), the collection answers the properties of the
members that are still there, a batch at a time. The report itself knows neither calendars
nor address books; each room lists one with its own resource type, and ``DavExtensions`` picks
the one that applies.

The answer is streamed (``multistatus``): members are loaded a batch of changes at a time,
``CONTENT_BATCH`` when their content (calendar-data, address-data) is asked for, so a first
sync of a large collection holds a batch of objects, not the collection.

A first sync (empty token, no limit, no content asked) of a collection that is also a
``WholeSync`` reads the current token, then the members themselves, a page at a time, instead
of the change log's list of every member and a lookup of each. A member changed between the
two reads is reported again by the next sync from that token, as RFC 6578 §3.2 allows.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol, runtime_checkable

from lxml import etree
from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_FORBIDDEN, DAVError, DAVErrorCondition

from oxidav.providers.dav.multistatus import (
    element_bytes,
    response_bytes,
    send_multistatus,
    status_bytes,
)
from oxidav.providers.dav.reports import NOT_FOUND, limit_exceeded, nresults
from oxidav.sync import ChangeSet, InvalidSyncToken

SYNC_COLLECTION = "{DAV:}sync-collection"
#: Properties whose value is a member's whole content.
CONTENT_PROPERTIES = frozenset(
    {
        "{urn:ietf:params:xml:ns:caldav}calendar-data",
        "{urn:ietf:params:xml:ns:carddav}address-data",
    }
)
#: Members whose properties are loaded at once, with and without their content.
CONTENT_BATCH = 8
INFO_BATCH = 500


@runtime_checkable
class SyncCollection(Protocol):
    """A collection whose members a client can synchronise with sync-collection."""

    def sync_changes(self, token: str | None, limit: int | None) -> ChangeSet:
        """Changes after ``token`` (all members if None); raises ``InvalidSyncToken``."""
        ...

    def sync_member_href(self, name: str) -> str:
        """The href of member ``name`` (present or removed)."""
        ...

    def sync_member_responses(
        self, names: Sequence[str], prop: etree._Element | None
    ) -> dict[str, list[tuple[str, Any]]]:
        """For each member of ``names`` that exists: its ``(property name, value)`` list for
        the ``DAV:prop`` element ``prop`` (None: no properties asked), as
        ``util.add_property_response`` takes it. Missing members are left out."""
        ...


@runtime_checkable
class WholeSync(Protocol):
    """A ``SyncCollection`` that can also list every member with its properties (a first
    sync): calendars and address books."""

    def sync_token(self) -> str:
        """The collection's current DAV:sync-token."""
        ...

    def sync_every_member(self, prop: etree._Element | None) -> Iterator[tuple[str, Any]]:
        """Every member's name and ``(property name, value)`` list, as
        ``sync_member_responses`` gives them; no content property is asked."""
        ...


class SyncCollectionReport:
    """RFC 6578 §3.2 for the collections of one ``resource_type``."""

    name = SYNC_COLLECTION

    def __init__(self, resource_type: type) -> None:
        self.resource_type = resource_type

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, self.resource_type) and isinstance(resource, SyncCollection)

    def handle(
        self,
        server: Any,
        environ: dict[str, Any],
        start_response: Any,
        resource: Any,
        body: etree._Element,
    ) -> Iterable[bytes]:
        token_el = body.find("{DAV:}sync-token")
        token = (token_el.text or "").strip() if token_el is not None else ""
        level = (body.findtext("{DAV:}sync-level") or "1").strip()
        if level not in ("1", "infinite"):
            raise DAVError(HTTP_BAD_REQUEST, "sync-level must be 1 or infinite")
        limit = nresults(body.find("{DAV:}limit"))
        prop = body.find("{DAV:}prop")
        if (
            not token
            and limit is None
            and not _asks_content(prop)
            and isinstance(resource, WholeSync)
        ):
            return send_multistatus(environ, start_response, _every_member(resource, prop))
        try:
            changes = resource.sync_changes(token or None, limit)
        except InvalidSyncToken as exc:
            raise DAVError(
                HTTP_FORBIDDEN,
                str(exc),
                err_condition=DAVErrorCondition("{DAV:}valid-sync-token"),
            ) from None
        batch = CONTENT_BATCH if _asks_content(prop) else INFO_BATCH

        def pieces() -> Iterator[bytes]:
            # A batch of changes at a time: the members' properties are loaded when reached.
            for start in range(0, len(changes.changes), batch):
                part = changes.changes[start : start + batch]
                present = [change.name for change in part if change.kind != "removed"]
                responses = resource.sync_member_responses(present, prop) if present else {}
                for change in part:
                    props = responses.get(change.name)
                    href = resource.sync_member_href(change.name)
                    if props is None:
                        yield status_bytes(href, NOT_FOUND)
                    else:
                        yield response_bytes(href, props)
            if changes.truncated:
                # RFC 6578 §3.6: the request-URI with 507 tells the client to ask again.
                yield limit_exceeded(resource.get_href())
            yield element_bytes("{DAV:}sync-token", changes.token)

        return send_multistatus(environ, start_response, pieces())


def _every_member(resource: Any, prop: etree._Element | None) -> Iterator[bytes]:
    """A first sync's answer: the token read first, then every member (module docstring)."""
    token = resource.sync_token()
    for name, props in resource.sync_every_member(prop):
        yield response_bytes(resource.sync_member_href(name), props)
    yield element_bytes("{DAV:}sync-token", token)


def _asks_content(prop: etree._Element | None) -> bool:
    """Whether ``prop`` asks for a member's whole content (calendar-data, address-data)."""
    return prop is not None and any(child.tag in CONTENT_PROPERTIES for child in prop)
