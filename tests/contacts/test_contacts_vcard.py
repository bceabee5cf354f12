"""The content-line model: parsing, raw values, folding, escaping, serialization."""

from __future__ import annotations

import pytest

from oxidav.contacts.vcard import (
    Property,
    VCardSyntaxError,
    escape_text,
    fold_line,
    parse_vcards,
    split_unescaped,
    unescape_text,
)
from tests.support.contacts_samples import JPEG_B64, card


def test_parse_keeps_raw_values_groups_and_params() -> None:
    text = (
        "BEGIN:VCARD\r\nVERSION:4.0\r\nUID:u1\r\nFN:Doe\\, Jane\r\n"
        'TEL;VALUE=uri;TYPE="voice,home":tel:+1-555-555-5555;ext=5555\r\n'
        f"PHOTO:data:image/jpeg;base64,{JPEG_B64}\r\n"
        "item1.EMAIL;type=INTERNET;PREF:jane@example.com\r\nEND:VCARD\r\n"
    )
    (vcard,) = parse_vcards(text)
    assert vcard.version == "4.0"
    fn = vcard.first("FN")
    assert fn is not None and fn.value == "Doe\\, Jane" and fn.text() == "Doe, Jane"
    tel = vcard.first("TEL")
    assert tel is not None
    assert tel.value == "tel:+1-555-555-5555;ext=5555"
    assert tel.param("TYPE") == ["voice,home"]
    assert tel.types() == ["VOICE", "HOME"]
    photo = vcard.first("PHOTO")
    assert photo is not None and photo.value == f"data:image/jpeg;base64,{JPEG_B64}"
    email = vcard.first("EMAIL")
    assert email is not None and email.group == "item1"
    assert email.params == [("TYPE", ["INTERNET"]), ("PREF", [])]
    assert email.types() == ["INTERNET", "PREF"]


def test_unfolding_and_round_trip() -> None:
    text = card("u2", "Zoë Ünïcødé", emails=("a@b.c",), photo=True)
    (vcard,) = parse_vcards(text)
    again = vcard.serialize()
    assert all(len(line.encode()) <= 75 for line in again.split("\r\n"))
    (reparsed,) = parse_vcards(again)
    assert reparsed == vcard
    photo = reparsed.first("PHOTO")
    assert photo is not None and photo.value == JPEG_B64


def test_folding_never_splits_a_utf8_sequence() -> None:
    line = "NOTE:" + "ä€😀" * 40
    folded = fold_line(line)
    physical = folded.split("\r\n")
    assert all(len(part.encode("utf-8")) <= 75 for part in physical)
    assert "".join(part[1:] if i else part for i, part in enumerate(physical)) == line


def test_several_cards_and_bom() -> None:
    text = "\ufeff" + card("a", "A") + card("b", "B")
    assert [c.first("UID").value for c in parse_vcards(text)] == ["a", "b"]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    "text",
    [
        "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:x\r\n",  # never closed
        "FN:x\r\n",  # outside a card
        "BEGIN:VCARD\r\nBEGIN:VCARD\r\nEND:VCARD\r\nEND:VCARD\r\n",  # nested
        "BEGIN:VCARD\r\nthis is no content line\r\nEND:VCARD\r\n",
        "BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n",
        "END:VCARD\r\n",
    ],
)
def test_syntax_errors(text: str) -> None:
    with pytest.raises(VCardSyntaxError):
        parse_vcards(text)


def test_text_escaping() -> None:
    assert unescape_text(r"a\,b\;c\\d\ne\Nf") == "a,b;c\\d\ne\nf"
    assert escape_text("a,b;c\\d\ne") == r"a\,b\;c\\d\ne"
    assert unescape_text(escape_text("x,;\\\n")) == "x,;\\\n"
    assert split_unescaped(r"Doe;Jane\;Mary;;", ";") == ["Doe", r"Jane\;Mary", "", ""]


def test_param_quoting_on_serialize() -> None:
    prop = Property("ADR", ";;Street;City", [("LABEL", ["a:b;c"]), ("TYPE", ["home", "work"])])
    assert prop.serialize() == 'ADR;LABEL="a:b;c";TYPE=home,work:;;Street;City\r\n'


def test_set_and_remove_param() -> None:
    prop = Property("TEL", "1", [("TYPE", ["a"]), ("X", ["1"]), ("TYPE", ["b"])])
    assert prop.param("TYPE") == ["a", "b"]
    prop.set_param("TYPE", ["c"])
    assert prop.params == [("TYPE", ["c"]), ("X", ["1"])]
    prop.remove_param("X")
    assert prop.params == [("TYPE", ["c"])]
    assert prop.param("X") is None
