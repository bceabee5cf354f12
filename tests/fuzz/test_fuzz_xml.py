"""Fuzzed XML bodies for every method that takes one: PROPFIND, PROPPATCH, LOCK, the REPORTs
(CalDAV, CardDAV, sync-collection, expand-property, Nextcloud filter-files), extended MKCOL,
MKCALENDAR and SEARCH. Properties: see tests/fuzz/conftest.py."""

from __future__ import annotations

import itertools

from hypothesis import example, given
from hypothesis import strategies as st

from tests.support.fuzz import BOOK, CALENDAR, FILES, Fuzz
from tests.support.raw_http import build_request
from tests.support.xml_bodies import bodies

XML = {"Content-Type": "application/xml; charset=utf-8"}
PRINCIPAL = "/remote.php/dav/principals/users/alice/"
_fresh = itertools.count()

ENTITY_PROPPATCH = (
    b'<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/hostname">]>'
    b'<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:fuzz"><D:set><D:prop>'
    b"<Z:leak>&x;</Z:leak></D:prop></D:set></D:propertyupdate>"
)
ENTITY_IN_PROP = (
    b'<!DOCTYPE d [<!ENTITY x "y">]><D:propertyupdate xmlns:D="DAV:"><D:set><D:prop>&x;'
    b"</D:prop></D:set></D:propertyupdate>"
)
COMMENT_IN_PROP = (
    b'<D:propertyupdate xmlns:D="DAV:"><D:set><D:prop><!-- c --></D:prop></D:set>'
    b"</D:propertyupdate>"
)
ENTITY_IN_PROPFIND = (
    b'<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/passwd">]><D:propfind xmlns:D="DAV:">'
    b"<D:prop><D:getetag/>&x;</D:prop></D:propfind>"
)
ENTITY_LOCK = (
    b'<!DOCTYPE d [<!ENTITY x SYSTEM "file:///etc/hostname">]>'
    b'<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope>'
    b"<D:locktype><D:write/></D:locktype><D:owner>&x;</D:owner></D:lockinfo>"
)


@given(
    body=bodies("propfind"),
    target=st.sampled_from([FILES + "/", FILES + "/a.txt", CALENDAR + "/", BOOK + "/", PRINCIPAL]),
    depth=st.sampled_from(["0", "1"]),
)
@example(body=ENTITY_IN_PROPFIND, target=CALENDAR + "/", depth="0")  # 500: entity node as a name
def test_propfind(fuzz: Fuzz, body: bytes, target: str, depth: str) -> None:
    fuzz.send(
        build_request("PROPFIND", target, {**XML, "Depth": depth}, body), "PROPFIND", writes=False
    )


@given(
    body=bodies("proppatch"),
    target=st.sampled_from(["file", "folder", "calendar", "book"]),
)
@example(body=ENTITY_PROPPATCH, target="folder")  # issue 24 case 6
@example(body=ENTITY_IN_PROP, target="file")  # 500: an entity node right under <D:prop>
@example(body=COMMENT_IN_PROP, target="file")  # 500: a comment right under <D:prop>
def test_proppatch(fuzz: Fuzz, body: bytes, target: str) -> None:
    path = fuzz.fresh(target)
    fuzz.send(build_request("PROPPATCH", path, XML, body), "PROPPATCH", reads=(path,))


@given(body=bodies("lock"), depth=st.sampled_from(["0", "infinity"]))
@example(body=ENTITY_LOCK, depth="0")  # issue 24 case 6 (lockdiscovery)
def test_lock(fuzz: Fuzz, body: bytes, depth: str) -> None:
    path = fuzz.fresh("file")
    headers = {**XML, "Depth": depth, "Timeout": "Second-60"}
    fuzz.send(build_request("LOCK", path, headers, body), "LOCK", reads=(path,))


SEARCH_INF = (  # issue 24 case 8: 500
    b'<d:searchrequest xmlns:d="DAV:"><d:basicsearch><d:select><d:prop><d:getlastmodified/>'
    b"</d:prop></d:select><d:from><d:scope><d:href>/files/alice</d:href><d:depth>infinity"
    b"</d:depth></d:scope></d:from><d:where><d:gt><d:prop><d:getlastmodified/></d:prop>"
    b"<d:literal>inf</d:literal></d:gt></d:where><d:orderby/></d:basicsearch></d:searchrequest>"
)

REPORTS = [
    ("calendar-query", CALENDAR + "/"),
    ("calendar-multiget", CALENDAR + "/"),
    ("free-busy-query", CALENDAR + "/"),
    ("sync-collection", CALENDAR + "/"),
    ("addressbook-query", BOOK + "/"),
    ("addressbook-multiget", BOOK + "/"),
    ("sync-collection", BOOK + "/"),
    ("sync-collection", FILES + "/"),
    ("expand-property", PRINCIPAL),
    ("filter-files", FILES + "/"),
]


@given(
    data=st.data(), report=st.sampled_from(REPORTS), depth=st.sampled_from(["0", "1", "infinity"])
)
def test_report(fuzz: Fuzz, data: st.DataObject, report: tuple[str, str], depth: str) -> None:
    kind, target = report
    body = data.draw(bodies(kind), label="body")
    fuzz.send(
        build_request("REPORT", target, {**XML, "Depth": depth}, body), "REPORT", writes=False
    )


@given(
    data=st.data(),
    where=st.sampled_from(
        [
            f"{FILES}/",
            "/remote.php/dav/calendars/alice/",
            "/remote.php/dav/addressbooks/users/alice/",
        ]
    ),
)
def test_mkcol_extended(fuzz: Fuzz, data: st.DataObject, where: str) -> None:
    body = data.draw(bodies("mkcol"), label="body")
    path = f"{where}new-{next(_fresh)}/"
    fuzz.send(build_request("MKCOL", path, XML, body), "MKCOL", reads=(path,))


@given(body=bodies("mkcalendar"))
def test_mkcalendar(fuzz: Fuzz, body: bytes) -> None:
    path = f"/remote.php/dav/calendars/alice/cal-{next(_fresh)}/"
    fuzz.send(build_request("MKCALENDAR", path, XML, body), "MKCALENDAR", reads=(path,))


@given(body=bodies("search"))
@example(body=SEARCH_INF)  # issue 24 case 8
def test_search(fuzz: Fuzz, body: bytes) -> None:
    fuzz.send(
        build_request("SEARCH", "/remote.php/dav/", {"Content-Type": "text/xml"}, body),
        "SEARCH",
        writes=False,
    )
