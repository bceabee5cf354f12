"""CardDAV REPORTs: addressbook-query (RFC 6352 §8.6), addressbook-multiget (§8.7) and, through
``sync_report``, sync-collection (RFC 6578) on address books.

Each answer is built from one store call (the query with its SQL pre-filter, the multiget in
batched lookups), and every card's response is filled from the loaded row: ``address-data`` is
rendered per the request (version, property selection), the other properties come from the
card resource.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any
from urllib.parse import unquote, urlsplit

from lxml import etree
from wsgidav import util, xml_tools
from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError

from oxidav.contacts import ContactsError, parse_filter, parse_limit
from oxidav.providers.addressbook_resources import AddressBookCollection
from oxidav.providers.contacts_context import C, dav_error
from oxidav.providers.contacts_props import PropRequest
from oxidav.providers.request_server import register_report
from oxidav.providers.sync_report import (
    INSUFFICIENT_STORAGE,
    NOT_FOUND,
    SyncCollectionReport,
    status_response,
)

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
            result = resource.backend.store.query(resource.book.id, flt, limit)
        except ContactsError as exc:
            raise dav_error(exc) from None
        multistatus = xml_tools.make_multistatus_el()
        for card in result.cards:
            card_res = resource.card_resource(card)
            util.add_property_response(multistatus, card_res.get_href(), props.properties(card_res))
        if result.truncated:
            status_response(
                multistatus,
                resource.get_href(),
                INSUFFICIENT_STORAGE,
                error="{DAV:}number-of-matches-within-limits",
            )
        return util.send_multi_status_response(environ, start_response, multistatus)  # type: ignore[no-any-return]


class AddressbookMultigetReport:
    """RFC 6352 §8.7: the named cards of one address book; an href that names no card of it
    gets its own 404 response."""

    name = ADDRESSBOOK_MULTIGET

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
        hrefs = [(el.text or "").strip() for el in body.findall("{DAV:}href")]
        base = unquote(str(resource.get_href()))
        names = {href: _member_name(base, href) for href in hrefs}
        cards = resource.backend.store.cards_by_name(
            resource.book.id, [name for name in names.values() if name]
        )
        multistatus = xml_tools.make_multistatus_el()
        for href in hrefs:
            card = cards.get(names[href] or "")
            if card is None:
                status_response(multistatus, href, NOT_FOUND)
            else:
                card_res = resource.card_resource(card)
                util.add_property_response(multistatus, href, props.properties(card_res))
        return util.send_multi_status_response(environ, start_response, multistatus)  # type: ignore[no-any-return]


def _member_name(base: str, href: str) -> str | None:
    """The card name an href names inside the collection at ``base`` (decoded), else None."""
    path = unquote(urlsplit(href).path)
    if not path.startswith(base):
        return None
    name = path[len(base) :]
    return name if name and "/" not in name else None


REPORT_NAMES = (ADDRESSBOOK_QUERY, ADDRESSBOOK_MULTIGET, SyncCollectionReport.name)

for _report in (
    AddressbookQueryReport(),
    AddressbookMultigetReport(),
    SyncCollectionReport(AddressBookCollection),
):
    register_report(_report)
