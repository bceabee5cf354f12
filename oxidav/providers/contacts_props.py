"""What a CardDAV REPORT asks to see of each card (RFC 6352 §8.6, §8.7; RFC 6578 §3.2).

``PropRequest`` reads the ``DAV:prop`` / ``DAV:allprop`` / ``DAV:propname`` of a REPORT body,
including how ``CARDDAV:address-data`` is to be rendered (version, selected properties), and
produces each card's property list for ``util.add_property_response``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lxml import etree
from wsgidav.dav_error import DAVError

from oxidav.contacts import AddressDataRequest, ContactsError
from oxidav.contacts.address_data import parse_address_data
from oxidav.providers.contacts_context import ADDRESS_DATA, dav_error

if TYPE_CHECKING:
    from oxidav.providers.addressbook_resources import CardResource

#: Properties answered when a REPORT names none (RFC 6352 §8.6 makes DAV:prop optional).
DEFAULT_PROPS = ("{DAV:}getetag",)


def address_data_element(text: str) -> etree._Element:
    element = etree.Element(ADDRESS_DATA)
    element.text = text
    return element


class PropRequest:
    """The properties a REPORT asks for: names, and how to render ``address-data``."""

    def __init__(self, prop: etree._Element | None, mode: str = "named") -> None:
        self.mode = mode
        self.names: list[str] = []
        self.address_data = AddressDataRequest(version="3.0")
        if mode != "named":
            return
        if prop is None:
            self.names = list(DEFAULT_PROPS)
            return
        for child in prop:
            if isinstance(child, etree._Comment | etree._ProcessingInstruction):
                continue
            self.names.append(child.tag)
            if child.tag == ADDRESS_DATA:
                try:
                    self.address_data = parse_address_data(child)
                except ContactsError as exc:
                    raise dav_error(exc) from None

    @classmethod
    def from_body(cls, body: etree._Element) -> PropRequest:
        if body.find("{DAV:}allprop") is not None:
            return cls(None, "allprop")
        if body.find("{DAV:}propname") is not None:
            return cls(None, "name")
        return cls(body.find("{DAV:}prop"))

    def properties(self, card: CardResource) -> list[tuple[str, Any]]:
        if self.mode != "named":
            return list(card.get_properties(self.mode))
        result: list[tuple[str, Any]] = []
        for name in self.names:
            try:
                if name == ADDRESS_DATA:
                    value: Any = address_data_element(card.render(self.address_data))
                else:
                    value = card.get_property_value(name)
            except DAVError as exc:
                value = exc
            result.append((name, value))
        return result
