"""The DAV:sync-collection REPORT (RFC 6578 §3.2), for any collection that can answer it.

A collection takes part by implementing ``SyncCollection``: the change log answers "what
changed since this token" (``oxidav.sync``), the collection answers the properties of the
members that are still there, in one batch. The report itself knows neither calendars nor
address books; register it once per room, each with its own resource type (the registry
picks the one that applies).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from lxml import etree
from wsgidav import util, xml_tools
from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_FORBIDDEN, DAVError, DAVErrorCondition

from oxidav.providers.dav_reports import NOT_FOUND, limit_exceeded, nresults, status_response
from oxidav.sync import ChangeSet, InvalidSyncToken

SYNC_COLLECTION = "{DAV:}sync-collection"


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
        try:
            changes = resource.sync_changes(token or None, limit)
        except InvalidSyncToken as exc:
            raise DAVError(
                HTTP_FORBIDDEN,
                str(exc),
                err_condition=DAVErrorCondition("{DAV:}valid-sync-token"),
            ) from None
        present = [change.name for change in changes.changes if change.kind != "removed"]
        responses = resource.sync_member_responses(present, body.find("{DAV:}prop"))
        multistatus = xml_tools.make_multistatus_el()
        for change in changes.changes:
            props = responses.get(change.name)
            href = resource.sync_member_href(change.name)
            if props is None:
                status_response(multistatus, href, NOT_FOUND)
            else:
                util.add_property_response(multistatus, href, props)
        if changes.truncated:
            # RFC 6578 §3.6: the request-URI with 507 tells the client to ask again.
            limit_exceeded(multistatus, resource.get_href())
        etree.SubElement(multistatus, "{DAV:}sync-token").text = changes.token
        return util.send_multi_status_response(environ, start_response, multistatus)  # type: ignore[no-any-return]
