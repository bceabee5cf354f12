"""CardDAV over HTTP against a live oxidav (SQLite and PostgreSQL): books, cards, reports."""

from __future__ import annotations

import base64

import pytest
import vobject
from lxml import etree

from tests.support.carddav_client import (
    BOOKS,
    NS,
    XML,
    C,
    CardDav,
    book_path,
    card_path,
    parse_multistatus,
    prop_xml,
)
from tests.support.contacts_samples import JPEG_B64, card
from tests.support.live import LiveServer

CR = "{" + C + "}"


@pytest.fixture
def dav(live_server: LiveServer) -> CardDav:
    return CardDav(live_server)


def condition_of(body: bytes) -> list[str]:
    root = etree.fromstring(body)
    assert root.tag == "{DAV:}error"
    return [child.tag for child in root]


def test_home_and_default_book_properties(dav: CardDav) -> None:
    home = f"{BOOKS}/alice/"
    listing = dav.propfind(
        home,
        "D:resourcetype",
        "D:displayname",
        "CS:getctag",
        "D:sync-token",
        "C:supported-address-data",
        "C:max-resource-size",
        "C:addressbook-description",
        "D:supported-report-set",
        "D:current-user-privilege-set",
        "D:current-user-principal",
        depth="1",
    )
    assert set(listing.items) == {home, home + "contacts/"}
    book = listing.items[home + "contacts/"]
    assert book.props["{DAV:}resourcetype"].find(CR + "addressbook") is not None
    assert book.text("{DAV:}displayname") == "Contacts"
    assert book.text("{http://calendarserver.org/ns/}getctag").startswith(
        "http://oxidav.org/ns/sync/"
    )
    assert book.text("{DAV:}sync-token") == book.text("{http://calendarserver.org/ns/}getctag")
    versions = {
        el.get("version")
        for el in book.props[CR + "supported-address-data"].findall("C:address-data-type", NS)
    }
    assert versions == {"3.0", "4.0"}
    assert int(book.text(CR + "max-resource-size")) > 0
    reports = {
        el.tag
        for el in book.props["{DAV:}supported-report-set"].iter()
        if el.getparent().tag == "{DAV:}report"
    }
    assert reports == {
        CR + "addressbook-query",
        CR + "addressbook-multiget",
        "{DAV:}sync-collection",
    }
    privileges = {el.tag for el in book.props["{DAV:}current-user-privilege-set"].iter()}
    assert "{DAV:}write-content" in privileges
    principal = book.props["{DAV:}current-user-principal"].findtext("D:href", namespaces=NS)
    assert principal == "/remote.php/dav/principals/users/alice/"


def test_options_advertises_addressbook(dav: CardDav) -> None:
    response = dav.request("OPTIONS", book_path("alice"))
    assert response.status == 200
    assert "addressbook" in response.headers["dav"]
    assert "REPORT" in response.headers["allow"]


def test_put_get_delete_and_validation(dav: CardDav) -> None:
    text = card("uid-1", "Zoë Ünïcødé", emails=("zoe@example.com",), photo=True)
    created = dav.put("zoe.vcf", text)
    assert created.status == 201
    etag = created.headers["etag"]
    got = dav.request("GET", card_path("alice", "zoe.vcf"))
    assert got.status == 200 and got.text == text and got.headers["etag"] == etag
    assert got.headers["content-type"].startswith("text/vcard")
    # GET as 4.0: the photo becomes a data: URI with the same bytes
    v4 = dav.request("GET", card_path("alice", "zoe.vcf"), Accept="text/vcard; version=4.0")
    parsed = vobject.readOne(v4.text)
    assert parsed.version.value == "4.0"
    assert f"data:image/jpeg;base64,{JPEG_B64}" in v4.text.replace("\r\n ", "")
    # invalid bodies: 403 naming the precondition, never a 500
    bad = dav.put("bad.vcf", "BEGIN:VCARD\r\nVERSION:3.0\r\nFN:x\r\nEND:VCARD\r\n")
    assert bad.status == 403 and condition_of(bad.body) == [CR + "valid-address-data"]
    bad = dav.put("bad.vcf", b"\xff\xfe\x00garbage")
    assert bad.status == 403 and condition_of(bad.body) == [CR + "valid-address-data"]
    bad = dav.put("bad.vcf", card("x", "x", version="2.1"))
    assert bad.status == 403 and condition_of(bad.body) == [CR + "supported-address-data"]
    bad = dav.put("bad.vcf", "{}", Content_Type="application/json")
    assert bad.status == 403 and condition_of(bad.body) == [CR + "supported-address-data"]
    too_big = card("big", "Big", extra=("NOTE:" + "x" * (11 << 20),))
    bad = dav.put("big.vcf", too_big)
    assert bad.status == 403 and condition_of(bad.body) == [CR + "max-resource-size"]
    conflict = dav.put("other.vcf", card("uid-1", "Duplicate"))
    assert conflict.status == 403
    root = etree.fromstring(conflict.body)
    assert root.find(CR + "no-uid-conflict/D:href", NS).text == card_path("alice", "zoe.vcf")
    assert dav.request("GET", card_path("alice", "bad.vcf")).status == 404
    # a declared charset other than UTF-8 is honoured; the card is stored as UTF-8
    latin = card("latin-1", "Jürgen").encode("latin-1")
    assert dav.put("latin.vcf", latin, Content_Type="text/vcard; charset=ISO-8859-1").status == 201
    assert "FN:Jürgen" in dav.request("GET", card_path("alice", "latin.vcf")).text
    bad = dav.put("bad.vcf", latin, Content_Type="text/vcard; charset=x-nonsense")
    assert bad.status == 403 and condition_of(bad.body) == [CR + "valid-address-data"]
    # homes cannot be deleted
    assert dav.request("DELETE", f"{BOOKS}/alice/").status == 403
    # update, then delete
    updated = dav.put("zoe.vcf", card("uid-1", "Zoë", emails=("z@example.com",)))
    assert updated.status == 204 and updated.headers["etag"] != etag
    assert dav.request("DELETE", card_path("alice", "zoe.vcf")).status == 204
    assert dav.request("GET", card_path("alice", "zoe.vcf")).status == 404
    assert dav.request("DELETE", card_path("alice", "zoe.vcf")).status == 404


def test_conditional_requests(dav: CardDav) -> None:
    text = card("c1", "Cond")
    assert dav.put("c.vcf", text, If_Match='"abc"').status == 412  # missing target
    assert dav.put("c.vcf", text, If_Match="*").status == 412
    first = dav.put("c.vcf", text, If_None_Match="*")
    assert first.status == 201
    etag = first.headers["etag"]
    assert dav.put("c.vcf", text, If_None_Match="*").status == 412
    assert dav.put("c.vcf", text, If_Match='"stale"').status == 412
    second = dav.put("c.vcf", card("c1", "Cond 2"), If_Match=etag)
    assert second.status == 204
    assert (
        dav.request("GET", card_path("alice", "c.vcf"), If_None_Match=second.headers["etag"]).status
        == 304
    )
    assert dav.request("DELETE", card_path("alice", "c.vcf"), If_Match=etag).status == 412
    assert dav.request("DELETE", card_path("alice", "gone.vcf"), If_Match="*").status == 412
    assert (
        dav.request("DELETE", card_path("alice", "c.vcf"), If_Match=second.headers["etag"]).status
        == 204
    )


def test_short_body_is_refused(dav: CardDav, live_server: LiveServer) -> None:
    import socket

    text = card("s1", "Short").encode()
    with socket.create_connection(("127.0.0.1", live_server.port)) as sock:
        token = base64.b64encode(b"alice:secret").decode()
        head = (
            f"PUT {card_path('alice', 's.vcf')} HTTP/1.1\r\nHost: x\r\n"
            f"Authorization: Basic {token}\r\nContent-Type: text/vcard\r\n"
            f"Content-Length: {len(text) + 100}\r\nConnection: close\r\n\r\n"
        )
        sock.sendall(head.encode() + text)
        sock.shutdown(socket.SHUT_WR)
        reply = sock.makefile("rb").read()
    assert not reply.startswith(b"HTTP/1.1 2")
    assert dav.request("GET", card_path("alice", "s.vcf")).status == 404


def test_books_mkcol_proppatch_delete(dav: CardDav) -> None:
    mkcol = (
        '<D:mkcol xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:set><D:prop>'
        "<D:resourcetype><D:collection/><C:addressbook/></D:resourcetype>"
        "<D:displayname>Work</D:displayname><C:addressbook-description>Colleagues</C:addressbook-description>"
        "</D:prop></D:set></D:mkcol>"
    )
    assert dav.request("MKCOL", book_path("alice", "work"), mkcol, **XML).status == 201
    assert dav.request("MKCOL", book_path("alice", "work"), mkcol, **XML).status == 405
    calendar = mkcol.replace(
        "<C:addressbook/>", '<X:calendar xmlns:X="urn:ietf:params:xml:ns:caldav"/>'
    )
    refused = dav.request("MKCOL", book_path("alice", "cal"), calendar, **XML)
    assert refused.status == 403 and condition_of(refused.body) == ["{DAV:}valid-resourcetype"]
    assert dav.request("MKCOL", book_path("alice", "plain")).status == 201
    props = dav.propfind(book_path("alice", "work"), "D:displayname", "C:addressbook-description")
    item = props.items[book_path("alice", "work")]
    assert item.text("{DAV:}displayname") == "Work"
    assert item.text(CR + "addressbook-description") == "Colleagues"
    patch = (
        '<D:propertyupdate xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:carddav"><D:set><D:prop>'
        "<D:displayname>Job</D:displayname><C:addressbook-description>Büro</C:addressbook-description>"
        "</D:prop></D:set></D:propertyupdate>"
    )
    assert dav.request("PROPPATCH", book_path("alice", "work"), patch, **XML).status == 207
    item = dav.propfind(
        book_path("alice", "work"), "D:displayname", "C:addressbook-description"
    ).items[book_path("alice", "work")]
    assert (item.text("{DAV:}displayname"), item.text(CR + "addressbook-description")) == (
        "Job",
        "Büro",
    )
    assert dav.put("w.vcf", card("w", "W"), book="work").status == 201
    assert dav.request("DELETE", book_path("alice", "work")).status == 204
    assert dav.request("PROPFIND", book_path("alice", "work"), Depth="0").status == 404
    assert dav.put("w.vcf", card("w", "W"), book="work").status == 409


def test_other_users_books_are_not_found(live_server: LiveServer) -> None:
    alice, bob = CardDav(live_server, "alice"), CardDav(live_server, "bob")
    assert alice.put("a.vcf", card("a", "A")).status == 201
    assert bob.request("PROPFIND", book_path("alice"), Depth="0").status == 404
    assert bob.request("GET", card_path("alice", "a.vcf")).status == 404
    assert bob.request("PUT", card_path("alice", "b.vcf"), card("b", "B")).status == 404
    assert bob.request("DELETE", card_path("alice", "a.vcf")).status == 404
    assert bob.request("MKCOL", book_path("alice", "x")).status == 404
    assert bob.report(book_path("alice"), "<x/>").status == 404
    assert alice.request("GET", card_path("alice", "a.vcf")).status == 200


def test_query_multiget_and_partial_address_data(dav: CardDav) -> None:
    dav.put("1.vcf", card("1", "Anna Äpfel", emails=("anna@apple.example",), tels=("+1 555 0101",)))
    dav.put(
        "2.vcf",
        card(
            "2", "Bert Birne", version="4.0", emails=("bert@pear.example",), tels=("+1 555 0202",)
        ),
    )
    dav.put("3.vcf", card("3", "Clara Citrone", emails=("clara@APPLE.example",)))
    found = dav.query(
        'test="anyof"><C:prop-filter name="EMAIL">'
        "<C:text-match>apple</C:text-match></C:prop-filter>"
    )
    assert found.status == 207
    assert sorted(parse_multistatus(found.body).items) == [
        card_path("alice", "1.vcf"),
        card_path("alice", "3.vcf"),
    ]
    found = dav.query(
        '><C:prop-filter name="FN"><C:text-match match-type="starts-with">bert</C:text-match>'
        "</C:prop-filter>",
        props=prop_xml(
            "D:getetag",
            address_data='<C:address-data version="4.0"><C:prop name="EMAIL"/></C:address-data>',
        ),
    )
    (item,) = parse_multistatus(found.body).items.values()
    data = item.text(CR + "address-data")
    assert "VERSION:4.0" in data and "bert@pear.example" in data and "FN:" not in data
    found = dav.query(
        '><C:prop-filter name="TEL"><C:text-match>555 02</C:text-match></C:prop-filter>'
    )
    assert list(parse_multistatus(found.body).items) == [card_path("alice", "2.vcf")]
    limited = dav.query(">", limit=2)
    items = parse_multistatus(limited.body).items
    assert len([i for i in items.values() if i.status is None]) == 2
    assert "507" in items[book_path("alice")].status
    bad = dav.query(
        '><C:prop-filter name="FN"><C:text-match collation="i;klingon">x</C:text-match>'
        "</C:prop-filter>"
    )
    assert bad.status == 403 and condition_of(bad.body) == [CR + "supported-collation"]
    hrefs = [
        card_path("alice", "1.vcf"),
        card_path("alice", "2.vcf"),
        card_path("alice", "nope.vcf"),
        "/elsewhere/x.vcf",
    ]
    got = parse_multistatus(dav.multiget(hrefs).body).items
    assert "404" in got[card_path("alice", "nope.vcf")].status
    assert "404" in got["/elsewhere/x.vcf"].status
    # address-data defaults to vCard 3.0 (RFC 6352 §10.4): the 4.0 card comes back converted
    assert "VERSION:3.0" in got[card_path("alice", "2.vcf")].text(CR + "address-data")
    assert got[card_path("alice", "1.vcf")].text(CR + "address-data").replace("\r\n", "\n") == card(
        "1", "Anna Äpfel", emails=("anna@apple.example",), tels=("+1 555 0101",)
    ).replace("\r\n", "\n")


def test_a_first_sync_lists_every_present_card_as_the_change_log_does(dav: CardDav) -> None:
    """A first sync reads the cards page by page (500 a time); with a limit it goes through
    the change log. Both answer the same cards, etags and token."""
    count = 505
    for i in range(count):
        assert dav.put(f"c{i:03}.vcf", card(f"c{i}", f"Person {i}")).status == 201
    for i in (0, 250, 504):
        assert dav.request("DELETE", card_path(dav.user, f"c{i:03}.vcf")).status == 204
    assert dav.put("c001.vcf", card("c1", "Person One")).status == 204
    first = parse_multistatus(dav.sync(None).body)
    through_log = parse_multistatus(dav.sync(None, limit=1000).body)
    etags = {href: item.text("{DAV:}getetag") for href, item in first.items.items()}
    assert etags == {href: item.text("{DAV:}getetag") for href, item in through_log.items.items()}
    expected = {card_path(dav.user, f"c{i:03}.vcf") for i in range(count) if i not in (0, 250, 504)}
    assert set(etags) == expected
    assert all(etag.startswith('"') for etag in etags.values())
    assert first.sync_token == through_log.sync_token
    assert parse_multistatus(dav.sync(first.sync_token).body).items == {}


def test_sync_collection(dav: CardDav) -> None:
    initial = parse_multistatus(dav.sync(None).body)
    assert initial.items == {} and initial.sync_token
    dav.put("a.vcf", card("a", "A"))
    dav.put("b.vcf", card("b", "B"))
    first = parse_multistatus(dav.sync(initial.sync_token).body)
    assert sorted(first.items) == [card_path("alice", "a.vcf"), card_path("alice", "b.vcf")]
    dav.put("a.vcf", card("a", "A2"))
    dav.request("DELETE", card_path("alice", "b.vcf"))
    dav.put("c.vcf", card("c", "C"))
    delta = parse_multistatus(
        dav.sync(first.sync_token, props=prop_xml("D:getetag", "C:address-data")).body
    )
    assert "404" in delta.items[card_path("alice", "b.vcf")].status
    assert "FN:A2" in delta.items[card_path("alice", "a.vcf")].text(CR + "address-data")
    assert card_path("alice", "c.vcf") in delta.items
    again = parse_multistatus(dav.sync(delta.sync_token).body)
    assert again.items == {} and again.sync_token == delta.sync_token
    page = parse_multistatus(dav.sync(first.sync_token, limit=1).body)
    assert len(page.items) == 2 and "507" in page.items[book_path("alice")].status
    invalid = dav.sync("http://oxidav.org/ns/sync/addressbook-999-abc/1")
    assert invalid.status == 403 and condition_of(invalid.body) == ["{DAV:}valid-sync-token"]


def test_copy_and_move_between_books(dav: CardDav, live_server: LiveServer) -> None:
    assert dav.request("MKCOL", book_path("alice", "work")).status == 201
    assert dav.put("a.vcf", card("a", "A")).status == 201
    base = live_server.base_url

    def send(method: str, source: str, target: str, **headers: str) -> int:
        return dav.request(method, source, Destination=base + target, **headers).status

    # COPY into the same book: the UID is taken there (RFC 6352 §6.3.2.1)
    copy_same = dav.request(
        "COPY", card_path("alice", "a.vcf"), Destination=base + card_path("alice", "b.vcf")
    )
    assert copy_same.status == 403 and condition_of(copy_same.body) == [CR + "no-uid-conflict"]
    assert send("COPY", card_path("alice", "a.vcf"), card_path("alice", "a.vcf", "work")) == 201
    assert (
        send(
            "COPY", card_path("alice", "a.vcf"), card_path("alice", "a.vcf", "work"), Overwrite="F"
        )
        == 412
    )
    assert send("COPY", card_path("alice", "a.vcf"), card_path("alice", "a.vcf", "work")) == 204
    assert dav.request("DELETE", card_path("alice", "a.vcf", "work")).status == 204
    # MOVE: gone from the source, present at the destination, both sync logs know it
    token = parse_multistatus(dav.sync(None).body).sync_token
    assert send("MOVE", card_path("alice", "a.vcf"), card_path("alice", "moved.vcf", "work")) == 201
    assert dav.request("GET", card_path("alice", "a.vcf")).status == 404
    moved = dav.request("GET", card_path("alice", "moved.vcf", "work"))
    assert moved.status == 200 and "UID:a" in moved.text
    delta = parse_multistatus(dav.sync(token).body)
    assert "404" in (delta.items[card_path("alice", "a.vcf")].status or "")
    # a rename inside one book is a MOVE too
    moved_path = card_path("alice", "moved.vcf", "work")
    assert send("MOVE", moved_path, card_path("alice", "renamed.vcf", "work")) == 201
    assert send("MOVE", card_path("alice", "nope.vcf"), card_path("alice", "x.vcf")) == 404
    assert (
        send(
            "MOVE", card_path("alice", "renamed.vcf", "work"), card_path("alice", "x.vcf", "nobook")
        )
        == 409
    )
    assert send("MOVE", card_path("alice", "renamed.vcf", "work"), card_path("bob", "x.vcf")) == 404
    assert send(
        "MOVE", card_path("alice", "renamed.vcf", "work"), "/remote.php/dav/files/alice/x"
    ) in (403, 404)
