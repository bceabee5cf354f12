"""Validation of an address object resource body (RFC 6352 §5.1, §6.3.2.1).

An address object resource holds exactly one vCard, of version 3.0 (RFC 2426) or 4.0
(RFC 6350), with a UID (RFC 6352 §5.1) and an FN (RFC 6350 §6.2.1, RFC 2426 §3.1.1). The raw
text is what gets stored; ``ParsedCard`` carries it with the parsed form and the UID.
"""

from __future__ import annotations

from dataclasses import dataclass

from oxidav.contacts.errors import CardTooLargeError, InvalidCardError, UnsupportedCardError
from oxidav.contacts.vcard import VCard, VCardSyntaxError, parse_vcards
from oxidav.xml_chars import first_xml_invalid

SUPPORTED_VERSIONS = ("3.0", "4.0")
#: Longest UID accepted: it is a unique-indexed column, and B-tree keys have a size limit.
MAX_UID_LENGTH = 512


@dataclass(frozen=True)
class ParsedCard:
    """A validated vCard: ``text`` is the body as received (decoded), ``card`` its parse."""

    text: str
    card: VCard
    uid: str
    version: str


def parse_card(data: bytes | str, max_bytes: int) -> ParsedCard:
    """Validate ``data`` as the body of an address object resource.

    Raises ``CardTooLargeError`` (``max-resource-size``) when it exceeds ``max_bytes``,
    ``UnsupportedCardError`` (``supported-address-data``) for a vCard version other than 3.0
    and 4.0, and ``InvalidCardError`` (``valid-address-data``) for everything else: bytes that
    are not UTF-8, a syntax error, zero or several vCards, a missing or repeated VERSION, a
    missing or empty UID, a missing FN.
    """
    raw = data.encode("utf-8") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise CardTooLargeError(f"the vCard has {len(raw)} bytes; at most {max_bytes} are allowed")
    if isinstance(data, str):
        text = data
    else:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidCardError("the vCard is not UTF-8 text") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    bad = first_xml_invalid(text)
    if bad is not None:
        raise InvalidCardError(f"the vCard contains the control character {bad!r}")
    try:
        cards = parse_vcards(text)
    except VCardSyntaxError as exc:
        raise InvalidCardError(str(exc)) from None
    if len(cards) != 1:
        raise InvalidCardError(
            f"an address object resource holds exactly one vCard, not {len(cards)} (RFC 6352 §5.1)"
        )
    card = cards[0]
    version = _version(card)
    return ParsedCard(text=text, card=card, uid=_uid(card), version=version)


def _version(card: VCard) -> str:
    versions = card.get("VERSION")
    if len(versions) != 1:
        raise InvalidCardError(f"a vCard has exactly one VERSION, not {len(versions)}")
    version = versions[0].value.strip()
    if version not in SUPPORTED_VERSIONS:
        raise UnsupportedCardError(f"vCard version {version!r} is not supported (3.0 and 4.0 are)")
    if not card.get("FN"):
        raise InvalidCardError("the vCard has no FN property")
    return version


def _uid(card: VCard) -> str:
    uids = card.get("UID")
    if len(uids) != 1:
        raise InvalidCardError(f"the vCard must have exactly one UID, not {len(uids)}")
    uid = uids[0].text().strip()
    if not uid:
        raise InvalidCardError("the vCard's UID is empty")
    if len(uid) > MAX_UID_LENGTH:
        raise InvalidCardError(f"the vCard's UID is longer than {MAX_UID_LENGTH} characters")
    return uid
