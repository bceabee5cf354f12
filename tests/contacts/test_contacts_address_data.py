"""address-data requests (RFC 6352 §10.4), Accept negotiation and rendering."""

from __future__ import annotations

import pytest
from lxml import etree

from oxidav.contacts.address_data import (
    AddressDataRequest,
    PropRequest,
    negotiate_accept,
    parse_address_data,
    render,
)
from oxidav.contacts.errors import UnsupportedAddressDataError
from oxidav.contacts.vcard import parse_vcards
from tests.support.contacts_samples import JPEG_B64, card

C = "urn:ietf:params:xml:ns:carddav"


def element(attrs: str = "", children: str = "") -> etree._Element:
    return etree.fromstring(f'<C:address-data xmlns:C="{C}" {attrs}>{children}</C:address-data>')


def test_parse_defaults_to_3_0_and_all_props() -> None:
    assert parse_address_data(element()) == AddressDataRequest(version="3.0", props=None)
    assert parse_address_data(element('version="4.0"', "<C:allprop/>")) == AddressDataRequest(
        version="4.0"
    )


def test_parse_props() -> None:
    request = parse_address_data(
        element(
            'content-type="text/vcard" version="4.0"',
            '<C:prop name="email"/><C:prop name="FN" novalue="yes"/>',
        )
    )
    assert request == AddressDataRequest(
        version="4.0", props=(PropRequest("EMAIL"), PropRequest("FN", novalue=True))
    )


@pytest.mark.parametrize(
    "attrs", ['content-type="application/vcard+json"', 'version="2.1"', 'content-type="text/html"']
)
def test_unsupported_requests(attrs: str) -> None:
    with pytest.raises(UnsupportedAddressDataError) as info:
        parse_address_data(element(attrs))
    assert info.value.condition == "supported-address-data-conversion"


@pytest.mark.parametrize(
    ("accept", "version"),
    [
        (None, None),
        ("*/*", None),
        ("text/vcard", None),
        ("text/vcard; version=4.0", "4.0"),
        ('text/vcard;version="3.0"', "3.0"),
        ("text/vcard;version=3.0;q=0.5, text/vcard;version=4.0", "4.0"),
        ("text/vcard;version=4.0;q=0.2, text/vcard;version=3.0;q=0.9", "3.0"),
        ("application/vcard+json", None),
        ("text/x-vcard; version=4.0", "4.0"),
        ("text/vcard; version=2.1", None),
    ],
)
def test_negotiate_accept(accept: str | None, version: str | None) -> None:
    assert negotiate_accept(accept) == version


def test_render_returns_stored_text_unchanged_when_possible() -> None:
    text = card("u", "P").replace("\r\n", "\n")  # even LF endings stay as they were
    assert render(text, "3.0", AddressDataRequest()) == (text, "3.0")
    assert render(text, "3.0", AddressDataRequest(version="3.0")) == (text, "3.0")


def test_render_converts_and_selects() -> None:
    text = card("u", "P", emails=("a@b.c",), photo=True, tels=("1",))
    body, version = render(text, "3.0", AddressDataRequest(version="4.0"))
    assert version == "4.0"
    assert f"PHOTO:data:image/jpeg;base64,{JPEG_B64}" in body.replace("\r\n ", "")
    body, _ = render(
        text,
        "3.0",
        AddressDataRequest(
            version="3.0", props=(PropRequest("EMAIL"), PropRequest("FN", novalue=True))
        ),
    )
    (vcard,) = parse_vcards(body)
    assert [prop.name for prop in vcard.properties] == ["VERSION", "FN", "EMAIL"]
    assert vcard.first("FN").value == ""  # type: ignore[union-attr]
    assert vcard.first("EMAIL").value == "a@b.c"  # type: ignore[union-attr]
