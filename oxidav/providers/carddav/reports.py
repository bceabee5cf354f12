"""CardDAV REPORTs: addressbook-query (RFC 6352 §8.6), and the generic addressbook-multiget
(§8.7, ``dav_reports.MultigetReport``) and sync-collection (RFC 6578, ``sync_report``) on
address books.

Each answer is built from one store call (the query with its SQL pre-filter, the multiget in
batched lookups), and every card's response is filled from the loaded row: ``address-data`` is
rendered per the request (version, property selection), the other properties come from the
card resource.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lxml import etree
from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError

from oxidav.contacts import ContactsError, parse_filter, parse_limit
from oxidav.providers.carddav.context import C, dav_error
from oxidav.providers.carddav.props import PropRequest
from oxidav.providers.carddav.resources import AddressBookCollection
from oxidav.providers.dav.reports import MultigetReport, matches_response
from oxidav.providers.dav.request_server import Report
from oxidav.providers.dav.sync_report import SyncCollectionReport

ADDRESSBOOK_QUERY = C + "addressbook-query"
ADDRESSBOOK_MULTIGET = C + "addressbook-multiget"


class AddressbookQueryReport:
    """RFC 6352 §8.6: the cards of one address book that match a filter, at most ``limit``
    of them; the rest is announced by a 507 for the request-URI (§8.6.1)."""

    name = ADDRESSBOOK_QUERY

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, AddressBookCollection)

    def handle(
        self,
        server: Any,
        environ: dict[str, Any],
        start_response: Any,
        resource: AddressBookCollection,
        body: etree._Element,
    ) -> Iterable[bytes]:
        props = PropRequest.from_body(body)
        filter_el = body.find(C + "filter")
        if filter_el is None:
            raise DAVError(HTTP_BAD_REQUEST, "addressbook-query needs a CARDDAV:filter")
        try:
            flt = parse_filter(filter_el)
            limit = parse_limit(body.find(C + "limit"))
            result = resource.backend.store.query(resource.info.id, flt, limit)
        except ContactsError as exc:
            raise dav_error(exc) from None
        found = [resource.member_resource(card) for card in result.cards]
        return matches_response(
            environ,
            start_response,
            resource.get_href(),
            ((card.get_href(), props.properties(card)) for card in found),
            truncated=result.truncated,
        )


REPORT_NAMES = (ADDRESSBOOK_QUERY, ADDRESSBOOK_MULTIGET, SyncCollectionReport.name)

#: The REPORTs of CardDAV (``make_app`` hands them to the request server).
REPORTS: tuple[Report, ...] = (
    AddressbookQueryReport(),
    MultigetReport(ADDRESSBOOK_MULTIGET, AddressBookCollection, PropRequest),
    SyncCollectionReport(AddressBookCollection),
)
