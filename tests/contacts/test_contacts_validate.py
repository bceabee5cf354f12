"""Validation of address object resource bodies (RFC 6352 §5.1, §6.3.2.1)."""

from __future__ import annotations

import pytest

from oxidav.contacts.errors import (
    CardTooLargeError,
    ContactsError,
    InvalidCardError,
    UnsupportedCardError,
)
from oxidav.contacts.validate import parse_card
from tests.support.contacts_samples import card

LIMIT = 1 << 20


def test_valid_cards_both_versions() -> None:
    for version in ("3.0", "4.0"):
        parsed = parse_card(card("uid-1", "Jörg", version=version).encode(), LIMIT)
        assert parsed.uid == "uid-1"
        assert parsed.version == version
        assert parsed.text.startswith("BEGIN:VCARD")


def test_text_is_kept_as_received_with_lf_endings() -> None:
    text = "BEGIN:VCARD\nVERSION:3.0\nUID:x\nFN:y\nEND:VCARD\n"
    assert parse_card(text, LIMIT).text == text


@pytest.mark.parametrize(
    ("body", "error", "condition"),
    [
        (b"\xff\xfe garbage", InvalidCardError, "valid-address-data"),
        (b"", InvalidCardError, "valid-address-data"),
        (b"hello world", InvalidCardError, "valid-address-data"),
        ((card("a", "A") + card("b", "B")).encode(), InvalidCardError, "valid-address-data"),
        (card("a", "A").replace("UID:a\r\n", "").encode(), InvalidCardError, "valid-address-data"),
        (card("a", "A").replace("FN:A\r\n", "").encode(), InvalidCardError, "valid-address-data"),
        (card("", "A").encode(), InvalidCardError, "valid-address-data"),
        (card("a", "A", extra=("UID:b",)).encode(), InvalidCardError, "valid-address-data"),
        (card("a", "A", extra=("VERSION:3.0",)).encode(), InvalidCardError, "valid-address-data"),
        (
            card("a", "A").replace("VERSION:3.0\r\n", "").encode(),
            InvalidCardError,
            "valid-address-data",
        ),
        (card("a", "A", version="2.1").encode(), UnsupportedCardError, "supported-address-data"),
        (card("x" * 600, "A").encode(), InvalidCardError, "valid-address-data"),
        (card("a", "A\x01B").encode(), InvalidCardError, "valid-address-data"),
    ],
)
def test_invalid_bodies_name_their_precondition(
    body: bytes, error: type[ContactsError], condition: str
) -> None:
    with pytest.raises(error) as info:
        parse_card(body, LIMIT)
    assert info.value.condition == condition
    assert info.value.clark_condition == "{urn:ietf:params:xml:ns:carddav}" + condition
    assert info.value.status == 403


def test_size_limit() -> None:
    body = card("a", "A", extra=("NOTE:" + "x" * 2000,)).encode()
    with pytest.raises(CardTooLargeError) as info:
        parse_card(body, 1000)
    assert info.value.condition == "max-resource-size"
    assert parse_card(body, len(body)).uid == "a"
