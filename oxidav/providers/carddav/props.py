"""What a CardDAV REPORT asks to see of each card (RFC 6352 §8.6, §8.7; RFC 6578 §3.2).

``PropRequest`` reads the ``DAV:prop`` / ``DAV:allprop`` / ``DAV:propname`` of a REPORT body,
including how ``CARDDAV:address-data`` is to be rendered (version, selected properties), and
produces each card's property list for ``util.add_property_response``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lxml import etree

from oxidav.contacts import AddressDataRequest, ContactsError
from oxidav.contacts.address_data import parse_address_data
from oxidav.providers.carddav.context import ADDRESS_DATA, dav_error
from oxidav.providers.dav.reports import ReportProps

if TYPE_CHECKING:
    from oxidav.providers.carddav.resources import CardResource


class PropRequest(ReportProps):
    """The properties a REPORT asks for: names, and how to render ``address-data``."""

    data_property = ADDRESS_DATA

    def __init__(self, prop: etree._Element | None, mode: str = "named") -> None:
        self.address_data = AddressDataRequest(version="3.0")
        super().__init__(prop, mode)

    def read_data_request(self, element: etree._Element) -> None:
        try:
            self.address_data = parse_address_data(element)
        except ContactsError as exc:
            raise dav_error(exc) from None

    def properties(self, card: CardResource) -> list[tuple[str, Any]]:
        return self.property_list(card, lambda: card.render(self.address_data))
