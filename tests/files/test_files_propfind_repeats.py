"""A PROPFIND naming one property many times answers it once (issue 24, case 4), over HTTP
against a live oxidav (SQLite and PostgreSQL): a dead property of 50 KB named 1000 times in a
request of a few KB is not answered 1000 times, on a file (Depth 0) and in its folder's
listing (Depth 1), nor a live property from the row."""

from __future__ import annotations

from lxml import etree

from tests.support.files import url
from tests.support.live import LiveServer

VALUE = "v" * 50_000


def test_propfind_answers_a_repeated_property_once(live_server: LiveServer) -> None:
    assert live_server.request("PUT", url("/f.txt"), b"x").status == 201
    patch = (
        '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:X="urn:x"><D:set><D:prop>'
        f"<X:color>{VALUE}</X:color></D:prop></D:set></D:propertyupdate>"
    )
    assert live_server.request("PROPPATCH", url("/f.txt"), patch).status == 207
    for names in ("<X:color/>", "<X:color/><D:getetag/>", "<D:getetag/><D:resourcetype/>"):
        body = (
            '<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:X="urn:x"><D:prop>'
            + names * 1000
            + "</D:prop></D:propfind>"
        )
        for path, depth in (("/f.txt", "0"), ("/", "1")):
            answer = live_server.request("PROPFIND", url(path), body, {"Depth": depth})
            assert answer.status == 207
            responses = {
                r.findtext("{DAV:}href"): r
                for r in etree.fromstring(answer.body).iter("{DAV:}response")
            }
            file_response = responses[url("/f.txt")]
            for tag in ("{urn:x}color", "{DAV:}getetag", "{DAV:}resourcetype"):
                assert len(file_response.findall(f".//{tag}")) <= 1
            if "color" in names:
                assert file_response.findtext(".//{urn:x}color") == VALUE
            assert len(answer.body) < 2 * len(VALUE) + (4 << 10)
