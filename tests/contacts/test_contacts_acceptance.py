"""Acceptance (issue 6): the full CardDAV flow with raw HTTP + vobject, SQLite and PostgreSQL.

Discover from the root, PUT 500 cards (3.0 and 4.0, Unicode names, photos), list, multiget,
query by EMAIL contains / FN starts-with / TEL, sync-collection incrementally with deletions,
delete.
"""

from __future__ import annotations

import base64
import hashlib

import vobject

from tests.support.carddav_client import NS, CardDav, card_path, parse_multistatus, prop_xml
from tests.support.contacts_samples import card
from tests.support.live import LiveServer

C = "{urn:ietf:params:xml:ns:carddav}"
COUNT = 500
DOMAINS = ("alpha.example", "Beta.example", "gamma.example")


def photo(i: int) -> bytes:
    return b"\xff\xd8\xff\xe0" + hashlib.sha256(str(i).encode()).digest() * 20 + b"\xff\xd9"


def person(i: int) -> tuple[str, str]:
    """(name, vCard text) of person ``i``: even ones 3.0, odd ones 4.0, every 5th a photo."""
    version = "3.0" if i % 2 == 0 else "4.0"
    extra: tuple[str, ...] = ()
    if i % 5 == 0:
        data = base64.b64encode(photo(i)).decode()
        extra = (
            f"PHOTO;ENCODING=b;TYPE=JPEG:{data}"
            if version == "3.0"
            else f"PHOTO:data:image/jpeg;base64,{data}",
        )
    text = card(
        f"uid-{i:04d}",
        f"Pérson {i:04d} Jürgen-李{i} 😀",
        version=version,
        n=f"Jürgen-李{i};Pérson;;;",
        emails=(f"p{i:04d}@{DOMAINS[i % 3]}",),
        tels=(f"+49 30 {i:05d}",),
        extra=extra,
    )
    return f"p{i:04d}.vcf", text


def discover(dav: CardDav) -> str:
    """RFC 6764 + RFC 5397 + RFC 6352 §7.1.1: the address book URL, starting from the root."""
    redirect = dav.live.request("GET", "/.well-known/carddav", user=None)
    assert redirect.status == 301
    root = redirect.headers["location"]
    found = dav.propfind(root, "D:current-user-principal")
    principal = (
        found.items[root].props["{DAV:}current-user-principal"].findtext("D:href", namespaces=NS)
    )
    assert principal
    found = dav.propfind(principal, "C:addressbook-home-set")
    home = (
        found.items[principal].props[C + "addressbook-home-set"].findtext("D:href", namespaces=NS)
    )
    assert home
    listing = dav.propfind(home, "D:resourcetype", depth="1")
    books = [
        href
        for href, item in listing.items.items()
        if item.props["{DAV:}resourcetype"].find(C + "addressbook") is not None
    ]
    assert len(books) == 1
    return books[0]


def test_full_flow(live_server: LiveServer) -> None:
    dav = CardDav(live_server)
    book = discover(dav)
    assert book == "/remote.php/dav/addressbooks/users/alice/contacts/"
    token0 = parse_multistatus(dav.sync(None).body).sync_token

    cards = dict(person(i) for i in range(COUNT))
    etags = {}
    for name, text in cards.items():
        response = dav.put(name, text, If_None_Match="*")
        assert response.status == 201, response.text
        etags[card_path("alice", name)] = response.headers["etag"]

    listing = dav.propfind(book, "D:getetag", depth="1")
    assert {
        href: item.text("{DAV:}getetag") for href, item in listing.items.items() if href != book
    } == etags

    # multiget as stored: every card comes back byte for byte
    as_stored = prop_xml("D:getetag", address_data='<C:address-data version="4.0"/>')
    hrefs = list(etags)
    got = parse_multistatus(dav.multiget(hrefs[1::2], props=as_stored).body).items  # the 4.0 ones
    for href in hrefs[1::2]:
        name = href.rsplit("/", 1)[1]
        assert got[href].text(C + "address-data") == cards[name]
    # multiget as 3.0: vobject reads every card, names and photos intact
    got = parse_multistatus(dav.multiget(hrefs).body).items
    assert len(got) == COUNT
    for i in range(COUNT):
        href = card_path("alice", f"p{i:04d}.vcf")
        parsed = vobject.readOne(got[href].text(C + "address-data"))
        assert parsed.version.value == "3.0"
        assert parsed.fn.value == f"Pérson {i:04d} Jürgen-李{i} 😀"
        assert parsed.email.value == f"p{i:04d}@{DOMAINS[i % 3]}"
        if i % 5 == 0:
            assert parsed.photo.value == photo(i)
        assert got[href].text("{DAV:}getetag") == etags[href]

    def query(filter_xml: str) -> set[str]:
        response = dav.query(filter_xml)
        assert response.status == 207, response.text
        return set(parse_multistatus(response.body).items)

    beta = query(
        '><C:prop-filter name="EMAIL"><C:text-match>@beta.EXAMPLE</C:text-match></C:prop-filter>'
    )
    assert beta == {card_path("alice", f"p{i:04d}.vcf") for i in range(COUNT) if i % 3 == 1}
    starts = query(
        '><C:prop-filter name="FN"><C:text-match match-type="starts-with">PÉRSON 012</C:text-match>'
        "</C:prop-filter>"
    )
    assert starts == {card_path("alice", f"p{i:04d}.vcf") for i in range(120, 130)}
    tel = query(
        '><C:prop-filter name="TEL"><C:text-match match-type="ends-with">00042</C:text-match>'
        "</C:prop-filter>"
    )
    assert tel == {card_path("alice", "p0042.vcf")}
    both = query(
        'test="allof"><C:prop-filter name="EMAIL"><C:text-match>gamma</C:text-match>'
        "</C:prop-filter>"
        '<C:prop-filter name="FN"><C:text-match match-type="starts-with">pérson 00</C:text-match>'
        "</C:prop-filter>"
    )
    assert both == {card_path("alice", f"p{i:04d}.vcf") for i in range(100) if i % 3 == 2}

    # sync-collection: everything since the empty book, then an incremental delta
    full = parse_multistatus(dav.sync(token0).body)
    assert set(full.items) == set(etags)
    changed = [f"p{i:04d}.vcf" for i in range(0, 20, 2)]
    deleted = [f"p{i:04d}.vcf" for i in range(1, 20, 2)]
    added = [f"new{i}.vcf" for i in range(5)]
    for name in changed:
        assert (
            dav.put(
                name,
                cards[name].replace("FN:", "FN:Changed "),
                If_Match=etags[card_path("alice", name)],
            ).status
            == 204
        )
    for name in deleted:
        assert dav.request("DELETE", card_path("alice", name)).status == 204
    for i, name in enumerate(added):
        assert dav.put(name, card(f"new-{i}", f"Neu {i}")).status == 201
    delta = parse_multistatus(
        dav.sync(full.sync_token, props=prop_xml("D:getetag", "C:address-data")).body
    )
    assert set(delta.items) == {card_path("alice", n) for n in changed + deleted + added}
    for name in deleted:
        assert "404" in (delta.items[card_path("alice", name)].status or "")
    for name in changed:
        assert "FN:Changed " in delta.items[card_path("alice", name)].text(C + "address-data")
    assert parse_multistatus(dav.sync(delta.sync_token).body).items == {}

    # delete: the whole book, then it is gone (and re-created empty on first use)
    assert dav.request("DELETE", book).status == 204
    assert dav.request("GET", card_path("alice", "p0000.vcf")).status == 404
    relisted = dav.propfind(book, "D:getetag", depth="1")
    assert set(relisted.items) == {book}
