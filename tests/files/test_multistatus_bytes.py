"""``response_bytes`` writes a response of ``DAV:`` text properties directly: byte for byte
what WsgiDAV's lxml path (``util.add_property_response``) writes, for any href and value
hypothesis makes up (text XML cannot hold, ``\\r``, other namespaces and element values take
the lxml path)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st
from lxml import etree
from wsgidav import util, xml_tools

from oxidav.providers.dav import multistatus
from oxidav.providers.dav.multistatus import response_bytes


def lxml_response(href: str, props: list[tuple[str, object]]) -> bytes:
    tree = xml_tools.make_multistatus_el()
    util.add_property_response(tree, href, props)
    data: bytes = etree.tostring(tree, encoding="UTF-8", xml_declaration=False)
    return data[len(multistatus.OPEN) : -len(multistatus.CLOSE)]


XML_TEXT = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x00")
).filter(
    lambda text: (
        all(c in "\t\n" or c >= " " for c in text) and "\ufffe" not in text and "\uffff" not in text
    )
)
NAMES = st.sampled_from(
    ["{DAV:}getetag", "{DAV:}getcontenttype", "{DAV:}displayname", "{DAV:}getlastmodified"]
)
PROPS = st.lists(st.tuples(NAMES, st.none() | XML_TEXT), min_size=1, max_size=4)


@given(href=XML_TEXT, props=PROPS)
def test_dav_text_properties_are_written_as_lxml_writes_them(
    href: str, props: list[tuple[str, object]]
) -> None:
    props = list(dict(props).items())  # a property once, as a request names it
    assert response_bytes(href, props) == lxml_response(href, props)


def test_what_the_direct_path_leaves_to_lxml_is_still_lxml_bytes() -> None:
    caldata = etree.Element("{urn:ietf:params:xml:ns:caldav}calendar-data")
    caldata.text = "BEGIN:VCALENDAR\r\n"
    for href, props in [
        ("/a\r.ics", [("{DAV:}getetag", '"1"')]),
        ("/b.ics", [("{DAV:}getetag", "x\ry")]),
        ("/c.ics", [("{urn:ietf:params:xml:ns:caldav}calendar-data", "BEGIN:VCALENDAR")]),
        ("/d.ics", [("{DAV:}getetag", '"2"'), ("{x:}y", caldata)]),
    ]:
        assert response_bytes(href, props) == lxml_response(href, props)
