"""What a client asks to see of a card: media type, version, properties (RFC 6352 §10.4, §6.3).

``AddressDataRequest`` comes from a ``CARDDAV:address-data`` element in a REPORT (content type,
version, ``allprop`` or a list of ``prop`` with ``novalue``) or from a GET's ``Accept`` header
(``negotiate_accept``). ``render`` produces the text: the stored text unchanged whenever no
conversion and no property selection is needed, so what a client PUT is what it gets back.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from oxidav.contacts.convert import convert
from oxidav.contacts.errors import CARDDAV_NS, UnsupportedAddressDataError
from oxidav.contacts.vcard import Property, VCard, parse_vcards

VCARD_MEDIA_TYPES = ("text/vcard", "text/x-vcard")
SUPPORTED_VERSIONS = ("3.0", "4.0")
#: RFC 6352 §10.4: ``version`` defaults to "3.0" on an address-data element.
DEFAULT_REPORT_VERSION = "3.0"
_C = f"{{{CARDDAV_NS}}}"


@dataclass(frozen=True)
class PropRequest:
    """One ``CARDDAV:prop`` of an address-data request: ``novalue`` asks for the property
    with an empty value."""

    name: str
    novalue: bool = False


@dataclass(frozen=True)
class AddressDataRequest:
    """``version`` None means "as stored"; ``props`` None means every property."""

    version: str | None = None
    props: tuple[PropRequest, ...] | None = None


def parse_address_data(element: etree._Element) -> AddressDataRequest:
    """Build a request from a ``CARDDAV:address-data`` element of a REPORT's ``DAV:prop``."""
    content_type = (element.get("content-type") or "text/vcard").split(";")[0].strip().lower()
    if content_type not in VCARD_MEDIA_TYPES:
        raise UnsupportedAddressDataError(f"cannot produce {content_type!r}, only text/vcard")
    version = (element.get("version") or DEFAULT_REPORT_VERSION).strip()
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedAddressDataError(f"cannot produce vCard {version!r}")
    props: list[PropRequest] = []
    for child in element:
        if child.tag == _C + "allprop":
            return AddressDataRequest(version=version)
        if child.tag == _C + "prop":
            name = (child.get("name") or "").strip().upper()
            if name:
                props.append(PropRequest(name=name, novalue=child.get("novalue") == "yes"))
    return AddressDataRequest(version=version, props=tuple(props) if props else None)


def negotiate_accept(accept: str | None) -> str | None:
    """The vCard version a GET's ``Accept`` header asks for, or None for "as stored".

    ``text/vcard; version=4.0`` asks for 4.0; a ``text/vcard`` without version, ``*/*`` or a
    type oxidav cannot produce leave the stored version. Entries are taken by quality.
    """
    if not accept:
        return None
    ranked: list[tuple[float, int, str | None]] = []
    for position, entry in enumerate(accept.split(",")):
        parts = [part.strip() for part in entry.split(";")]
        media = parts[0].lower()
        params = dict(
            (key.strip().lower(), value.strip().strip('"'))
            for key, _, value in (part.partition("=") for part in parts[1:])
        )
        try:
            quality = float(params.get("q", "1"))
        except ValueError:
            quality = 0.0
        if media in VCARD_MEDIA_TYPES and quality > 0:
            version = params.get("version")
            ranked.append((-quality, position, version if version in SUPPORTED_VERSIONS else None))
    if not ranked:
        return None
    return min(ranked)[2]


def media_type(version: str) -> str:
    """The Content-Type of a vCard of ``version``."""
    return f"text/vcard; charset=utf-8; version={version}"


def render(text: str, stored_version: str, request: AddressDataRequest) -> tuple[str, str]:
    """(body, version) of a stored card as ``request`` asks for it."""
    version = request.version or stored_version
    if version == stored_version and request.props is None:
        return text, version
    card = parse_vcards(text)[0]
    if version != stored_version:
        card = convert(card, version)
    if request.props is not None:
        card = _select(card, request.props)
    return card.serialize(), version


def _select(card: VCard, wanted: tuple[PropRequest, ...]) -> VCard:
    """RFC 6352 §10.4.2: only the named properties (and VERSION, which a vCard needs)."""
    novalue = {prop.name: prop.novalue for prop in wanted}
    kept: list[Property] = []
    for prop in card.properties:
        if prop.name == "VERSION":
            kept.append(prop)
        elif prop.name in novalue:
            kept.append(
                Property(prop.name, "", prop.params, prop.group) if novalue[prop.name] else prop
            )
    return VCard(kept)
