"""SEARCH (RFC 5323 basicsearch) over the user's files, as Nextcloud clients send it."""

from __future__ import annotations

from urllib.parse import quote, unquote

import pytest
from lxml import etree

from tests.support.live import LiveServer

DAV = "/remote.php/dav"
NS = 'xmlns:d="DAV:" xmlns:oc="http://owncloud.org/ns" xmlns:nc="http://nextcloud.org/ns"'


def _search(
    where: str, scope: str = "/files/alice", depth: str = "infinity", extra: str = ""
) -> str:
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<d:searchrequest {NS}>
 <d:basicsearch>
  <d:select><d:prop><d:displayname/><d:getcontenttype/><oc:fileid/><oc:favorite/>
   <oc:size/><d:getlastmodified/></d:prop></d:select>
  <d:from><d:scope><d:href>{scope}</d:href><d:depth>{depth}</d:depth></d:scope></d:from>
  <d:where>{where}</d:where>
  {extra}
 </d:basicsearch>
</d:searchrequest>"""


def _hrefs(body: bytes) -> list[str]:
    root = etree.fromstring(body)
    return [unquote(h.text or "") for h in root.iter("{DAV:}href")]


@pytest.fixture
def files(live_server: LiveServer) -> LiveServer:
    s = live_server
    for folder in ("/docs", "/docs/deep", "/pics"):
        assert s.request("MKCOL", f"{DAV}/files/alice{folder}").status == 201
    puts = {
        "/docs/Report one.txt": ("text/plain", "1700000000"),
        "/docs/deep/report two.md": ("text/markdown", "1700100000"),
        "/pics/cat.png": ("image/png", "1700200000"),
        "/pics/dog.jpg": ("image/jpeg", "1700300000"),
        "/readme.txt": ("text/plain", "1700400000"),
    }
    for path, (ctype, mtime) in puts.items():
        response = s.request(
            "PUT",
            f"{DAV}/files/alice{quote(path)}",
            body=b"x" * len(path),
            headers={"Content-Type": ctype, "X-OC-Mtime": mtime},
        )
        assert response.status == 201, response.text
    star = f"""<d:propertyupdate {NS}><d:set><d:prop><oc:favorite>1</oc:favorite></d:prop>
        </d:set></d:propertyupdate>"""
    assert s.request("PROPPATCH", f"{DAV}/files/alice/pics/dog.jpg", body=star).status == 207
    return s


def _run(s: LiveServer, body: str, user: str = "alice") -> tuple[int, bytes]:
    response = s.request(
        "SEARCH", f"{DAV}/", body=body, headers={"Content-Type": "text/xml"}, user=user
    )
    return response.status, response.body


def test_name_like_is_case_insensitive(files: LiveServer) -> None:
    where = "<d:like><d:prop><d:displayname/></d:prop><d:literal>%report%</d:literal></d:like>"
    status, body = _run(files, _search(where))
    assert status == 207
    assert _hrefs(body) == [
        f"{DAV}/files/alice/docs/Report one.txt",
        f"{DAV}/files/alice/docs/deep/report two.md",
    ]
    assert b"<d:displayname>Report one.txt</d:displayname>" in body or b"Report one.txt" in body


def test_mime_like_scope_depth_order_and_limit(files: LiveServer) -> None:
    where = "<d:like><d:prop><d:getcontenttype/></d:prop><d:literal>image/%</d:literal></d:like>"
    order = """<d:orderby><d:order><d:prop><d:getlastmodified/></d:prop><d:descending/>
        </d:order></d:orderby>"""
    status, body = _run(files, _search(where, extra=order))
    assert status == 207
    assert _hrefs(body) == [f"{DAV}/files/alice/pics/dog.jpg", f"{DAV}/files/alice/pics/cat.png"]
    limit = order + "<d:limit><d:nresults>1</d:nresults></d:limit>"
    status, body = _run(files, _search(where, extra=limit))
    assert _hrefs(body) == [f"{DAV}/files/alice/pics/dog.jpg"]
    text = "<d:eq><d:prop><d:getcontenttype/></d:prop><d:literal>text/plain</d:literal></d:eq>"
    status, body = _run(files, _search(text, scope="/files/alice/docs", depth="1"))
    assert _hrefs(body) == [f"{DAV}/files/alice/docs/Report one.txt"]


def test_mtime_range_and_favorite(files: LiveServer) -> None:
    where = """<d:and>
      <d:gte><d:prop><d:getlastmodified/></d:prop><d:literal>1700100000</d:literal></d:gte>
      <d:lt><d:prop><d:getlastmodified/></d:prop><d:literal>1700300000</d:literal></d:lt>
      <d:not><d:is-collection/></d:not>
    </d:and>"""
    status, body = _run(files, _search(where))
    assert status == 207
    assert _hrefs(body) == [
        f"{DAV}/files/alice/docs/deep/report two.md",
        f"{DAV}/files/alice/pics/cat.png",
    ]
    fav = "<d:eq><d:prop><oc:favorite/></d:prop><d:literal>1</d:literal></d:eq>"
    status, body = _run(files, _search(fav))
    assert _hrefs(body) == [f"{DAV}/files/alice/pics/dog.jpg"]
    root = etree.fromstring(body)
    assert root.findtext(".//{http://owncloud.org/ns}favorite") == "1"
    assert root.findtext(".//{DAV:}getcontenttype") == "image/jpeg"


def test_errors(files: LiveServer) -> None:
    where = "<d:like><d:prop><d:displayname/></d:prop><d:literal>%</d:literal></d:like>"
    assert _run(files, _search(where, scope="/files/bob"))[0] == 403
    assert _run(files, _search(where, scope="/files/alice/missing"))[0] == 404
    assert _run(files, _search(where, scope="/calendars/alice"))[0] == 400
    bad_op = "<d:contains>x</d:contains>"
    assert _run(files, _search(bad_op))[0] == 400
    assert _run(files, "<d:propfind xmlns:d='DAV:'/>")[0] == 400
    assert _run(files, _search(where), user="bob")[0] == 403


def _compare(op: str, prop: str, literal: str) -> str:
    return f"<d:{op}><d:prop>{prop}</d:prop><d:literal>{literal}</d:literal></d:{op}>"


MTIME, SIZE, FILEID = "<d:getlastmodified/>", "<oc:size/>", "<oc:fileid/>"


@pytest.mark.parametrize(
    "where",
    [
        _compare("gt", MTIME, "inf"),
        _compare("gt", MTIME, "-inf"),
        _compare("gt", MTIME, "nan"),
        _compare("lt", MTIME, "1e300"),
        _compare("lt", MTIME, "-99999999999999"),
        _compare("gt", MTIME, "Mon, 01 Jan 99999 00:00:00 GMT"),
        _compare("gt", SIZE, "1" * 23),
        _compare("gt", SIZE, "-" + "9" * 20),
        _compare("gt", SIZE, "--5"),
        _compare("gt", SIZE, "\u00b2"),
    ],
)
def test_literals_that_are_not_values_are_400(files: LiveServer, where: str) -> None:
    status, body = _run(files, _search(where))
    assert status == 400, body
    assert b"request id" not in body


def test_out_of_range_counts_are_400_and_an_unknown_file_id_matches_nothing(
    files: LiveServer,
) -> None:
    any_name = _compare("like", "<d:displayname/>", "%")
    for limit in ("1" * 23, "\u0661"):
        extra = f"<d:limit><d:nresults>{limit}</d:nresults></d:limit>"
        assert _run(files, _search(any_name, extra=extra))[0] == 400
    status, body = _run(files, _search(_compare("eq", FILEID, "9" * 23)))
    assert status == 207 and _hrefs(body) == []


def test_options_advertise_search(live_server: LiveServer) -> None:
    response = live_server.request("OPTIONS", f"{DAV}/files/alice/")
    assert "SEARCH" in response.headers["allow"]
    assert response.headers["dasl"] == "<DAV:basicsearch>"
