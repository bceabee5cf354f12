"""``xml_input``: the parser of client XML and the stored form it guarantees (no server)."""

from __future__ import annotations

import logging

import pytest
from lxml import etree

from oxidav.providers.dav.xml_input import (
    MAX_DEPTH,
    MAX_ELEMENTS,
    XmlRefused,
    canonical,
    parse_xml,
    storable,
    stored_xml,
)

REFUSED = {
    "internal subset": b'<!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>',
    "bare doctype": b"<!DOCTYPE a><a/>",
    "external dtd": b'<!DOCTYPE a SYSTEM "file:///etc/passwd"><a/>',
    "utf-16 doctype": (
        '<?xml version="1.0" encoding="UTF-16"?><!DOCTYPE a [<!ENTITY x "y">]><a>&x;</a>'
    ).encode("utf-16"),
    "undeclared entity": b"<a>&x;</a>",
    "nul reference": b"<a>&#0;</a>",
    "raw control character": b"<a>\x01</a>",
    "too deep": b"<a>" * (MAX_DEPTH + 1) + b"</a>" * (MAX_DEPTH + 1),
    "too many": b"<a>" + b"<b/>" * MAX_ELEMENTS + b"</a>",
    "truncated": b"<a><b>",
}


@pytest.mark.parametrize("case", list(REFUSED))
def test_refused(case: str) -> None:
    with pytest.raises(XmlRefused):
        parse_xml(REFUSED[case])


def test_limits_are_inclusive() -> None:
    deep = b"<a>" * MAX_DEPTH + b"</a>" * MAX_DEPTH
    assert parse_xml(deep).tag == "a"
    wide = b"<a>" + b"<b/>" * (MAX_ELEMENTS - 1) + b"</a>"
    assert len(parse_xml(wide)) == MAX_ELEMENTS - 1


def test_comments_and_pis_are_dropped_and_the_stored_form_reads_back() -> None:
    root = parse_xml(b'<?pi x?><z:v xmlns:z="urn:z" a="&#13;"><!-- c -->t&#65;&lt;<?p?></z:v>')
    data = storable(root)
    assert parse_xml(data).text == "tA<"
    assert canonical(parse_xml(data)) == data
    assert b"<!--" not in data and b"<?" not in data


def test_an_entity_node_cannot_be_stored() -> None:
    element = etree.Element("{urn:z}v")
    element.append(etree.Entity("x"))
    with pytest.raises(Exception, match="cannot be stored"):
        storable(element)


def test_unreadable_stored_value_is_none_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        assert stored_xml(b'<z:v xmlns:z="urn:z">&x;</z:v>', resource="/r", name="{urn:z}v") is None
    assert "{urn:z}v" in caplog.text and "/r" in caplog.text
    assert stored_xml("<v>ok</v>", resource="/r", name="v") is not None
