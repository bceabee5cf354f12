"""A Depth:1 PROPFIND answers common live properties straight from the members' rows
(``MemberRow``s, whose resources are built only for a property the row cannot answer; read
without their creation time when none is asked for: ``read_children_brief``; only the columns
a file browser shows, as ``ListedMember``s, when that is all that is asked for:
``read_listed_rows``), and the ``oc:`` / ``nc:`` properties and allprop from the rows and the
page's enrichers: the answer is byte-for-byte the one of the general path, and each member
answers as it does when asked on its own (Depth:0)"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

import pytest
from lxml import etree

import oxidav.providers.files.propfind as propfind
from tests.support.files import url
from tests.support.live import LiveServer
from tests.support.public_links import make_link

NAMES = [
    "plain.txt",
    "with space.txt",
    "ünïcødé ☃.txt",
    "hash#q?&+%25=;.txt",
    "it's (1) [x] {y}!*$|~.txt",
    "sub folder",
]
LOCKINFO = (
    b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
    b"</D:lockscope><D:locktype><D:write/></D:locktype><D:owner>me</D:owner></D:lockinfo>"
)
ALL_FROM_ROWS = (
    "<D:getetag/><D:getlastmodified/><D:getcontentlength/><D:resourcetype/><D:displayname/>"
    "<D:getcontenttype/><D:creationdate/><D:supportedlock/><D:lockdiscovery/>"
)
BODIES = {
    "named4": "<D:getetag/><D:getlastmodified/><D:getcontentlength/><D:resourcetype/>",
    "files-only": "<D:getcontentlength/><D:getcontenttype/>",
    "all-from-rows": ALL_FROM_ROWS,
    "repeated": "<D:getetag/><D:getetag/>",
    # A folder's length and type are absent (a 404 propstat): asked for first, it comes first.
    "absent-first": "<D:getcontentlength/><D:getetag/><D:getcontenttype/><D:resourcetype/>",
    # No creation date: the brief rows, and for the locked member and the folder's length the
    # general path on a member built from them.
    # Only what a file browser shows: the fewest columns read (``read_listed_rows``).
    "listed": "<D:displayname/><D:getcontenttype/><D:getlastmodified/><D:getcontentlength/>",
    "brief-with-fallbacks": (
        "<D:lockdiscovery/><D:getcontentlength/><D:displayname/><D:supportedlock/><D:getetag/>"
    ),
}


def _prop(inner: str) -> str:
    """A named PROPFIND body of the properties ``inner`` (DAV:, ``oc:`` and ``nc:``)."""
    return (
        '<?xml version="1.0"?><D:propfind xmlns:D="DAV:" xmlns:oc="http://owncloud.org/ns"'
        f' xmlns:nc="http://nextcloud.org/ns"><D:prop>{inner}</D:prop></D:propfind>'
    )


def _propfind(server: LiveServer, path: str, body: str, depth: str) -> bytes:
    response = server.request("PROPFIND", url(path), body, headers={"Depth": depth})
    assert response.status == 207, response.status
    return response.body


def _answers(server: LiveServer, folder: str, body: str, depth: str) -> list[bytes]:
    """The answers to ``body``: for ``folder`` at Depth 1, for each member at Depth 0."""
    paths = [folder] if depth == "1" else [folder + name for name in NAMES]
    return [_propfind(server, path, body, depth) for path in paths]


def _count_answers(monkeypatch: pytest.MonkeyPatch, name: str) -> list[bool]:
    """Whether each call of ``propfind.<name>`` (a response from the rows, None for the
    general path) answered, in a list filled as the calls come."""
    from_rows = getattr(propfind, name)
    answered: list[bool] = []

    def counted(*args: Any) -> bytes | None:
        found: bytes | None = from_rows(*args)
        answered.append(found is not None)
        return found

    monkeypatch.setattr(propfind, name, counted)
    return answered


def _responses(body: bytes) -> dict[str, bytes]:
    """Each ``<D:response>`` of a multistatus, canonicalized, by href."""
    tree = etree.fromstring(body)
    return {
        response.findtext("{DAV:}href"): etree.tostring(response, method="c14n")
        for response in tree.iter("{DAV:}response")
    }


@pytest.fixture
def folder(live_server: LiveServer) -> str:
    assert live_server.request("MKCOL", url("/p")).status == 201
    for name in NAMES:
        if name == "sub folder":
            assert live_server.request("MKCOL", url(f"/p/{name}")).status == 201
        else:
            assert live_server.request("PUT", url(f"/p/{name}"), name.encode()).status == 201
    # A locked member: its lockdiscovery is not in its row, so it takes the general path.
    assert live_server.request("LOCK", url("/p/plain.txt"), LOCKINFO).status == 200
    return "/p/"


@pytest.mark.parametrize("body", BODIES)
def test_a_listing_from_rows_is_the_general_answer_byte_for_byte(
    live_server: LiveServer, folder: str, body: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from_rows = _propfind(live_server, folder, _prop(BODIES[body]), "1")
    monkeypatch.setattr(propfind, "row_formatters", lambda mode, requested: None)
    general = _propfind(live_server, folder, _prop(BODIES[body]), "1")
    assert from_rows == general
    assert len(_responses(from_rows)) == len(NAMES) + 1


@pytest.mark.parametrize(
    "body", ["all-from-rows", "brief-with-fallbacks", "absent-first", "listed"]
)
def test_each_member_answers_in_a_listing_as_it_does_on_its_own(
    live_server: LiveServer, folder: str, body: str
) -> None:
    listed = _responses(_propfind(live_server, folder, _prop(BODIES[body]), "1"))
    for name in NAMES:
        suffix = "/" if name == "sub folder" else ""
        alone = _propfind(live_server, f"{folder}{name}{suffix}", _prop(BODIES[body]), "0")
        alone = _responses(alone)
        ((href, answer),) = alone.items()
        assert listed[href] == answer, name


@pytest.mark.parametrize("depth", ["0", "1"])
def test_a_folders_length_and_type_are_answered_not_found(
    live_server: LiveServer, folder: str, depth: str
) -> None:
    answer = _propfind(live_server, f"{folder}sub folder/", _prop(BODIES["absent-first"]), depth)
    ((response,),) = [list(etree.fromstring(answer).iter("{DAV:}response"))]
    statuses = [
        (stat.findtext("{DAV:}status"), [prop.tag for prop in stat.find("{DAV:}prop")])
        for stat in response.iter("{DAV:}propstat")
    ]
    assert statuses == [
        ("HTTP/1.1 404 Not Found", ["{DAV:}getcontentlength", "{DAV:}getcontenttype"]),
        ("HTTP/1.1 200 OK", ["{DAV:}getetag", "{DAV:}resourcetype"]),
    ]


OC = "{http://owncloud.org/ns}"
PROPPATCH = (
    '<?xml version="1.0"?><D:propertyupdate xmlns:D="DAV:" xmlns:oc="http://owncloud.org/ns"'
    ' xmlns:x="urn:example"><D:set><D:prop>{}</D:prop></D:set></D:propertyupdate>'
)


@pytest.fixture
def varied_folder(live_server: LiveServer, folder: str) -> str:
    """``folder`` with what takes the general path (the members with dead properties; the
    locked member) or is answered from values that are not plain text (share types, a
    favorite)."""
    for name, props in (
        ("with space.txt", "<x:colour>blue</x:colour>"),  # a dead property
        ("hash#q?&+%25=;.txt", "<oc:favorite>1</oc:favorite>"),
        (NAMES[4], "<oc:note>hello</oc:note>"),  # a dead property in an enricher's namespace
    ):
        body = PROPPATCH.format(props)
        assert live_server.request("PROPPATCH", url(folder + name), body).status == 207
    make_link(live_server, folder + "ünïcødé ☃.txt")
    make_link(live_server, folder + "sub folder")
    return folder


def test_each_member_answers_allprop_in_a_listing_as_it_does_on_its_own(
    live_server: LiveServer, varied_folder: str
) -> None:
    listed = _responses(_propfind(live_server, varied_folder, "", "1"))
    for name in NAMES:
        suffix = "/" if name == "sub folder" else ""
        alone = _responses(_propfind(live_server, f"{varied_folder}{name}{suffix}", "", "0"))
        ((href, answer),) = alone.items()
        assert listed[href] == answer, name


NEXTCLOUD_BODIES = {
    # The desktop client's listing (its sync engine's PROPFIND).
    "client": (
        "<D:resourcetype/><D:getlastmodified/><D:getcontentlength/><D:getetag/><oc:size/>"
        "<oc:id/><oc:fileid/><oc:downloadURL/><oc:dDC/><oc:permissions/><oc:checksums/>"
        "<oc:share-types/>"
    ),
    # Not answered for anyone, first: the 404 propstat comes first.
    "absent-first": "<oc:downloadURL/><D:getetag/><oc:favorite/><oc:owner-display-name/>",
    # A dead property in the enrichers' namespace, set on one member only.
    "dead-in-oc": "<oc:note/><oc:fileid/><nc:has-preview/><D:displayname/>",
}


#: Bodies answered from the rows and the page's enrichers: (the function answering a response
#: from the rows, the members of ``varied_folder`` it leaves to the general path).
FROM_ENRICHERS = {
    # allprop: the locked member, and the two with dead properties.
    "allprop-empty": ("", "_allprop_from_row", 3),
    "allprop": (
        '<?xml version="1.0"?><D:propfind xmlns:D="DAV:"><D:allprop/></D:propfind>',
        "_allprop_from_row",
        3,
    ),
    # Named: each body names a property no enricher answers, which could be a dead one: the
    # two members with dead properties.
    **{name: (_prop(inner), "_from_row", 2) for name, inner in NEXTCLOUD_BODIES.items()},
}


@pytest.mark.parametrize("body", FROM_ENRICHERS)
@pytest.mark.parametrize("depth", ["0", "1"])
def test_answers_from_the_enrichers_are_the_general_answer_byte_for_byte(
    live_server: LiveServer,
    varied_folder: str,
    body: str,
    depth: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request, from_row, general = FROM_ENRICHERS[body]
    answered = _count_answers(monkeypatch, from_row)
    from_rows = _answers(live_server, varied_folder, request, depth)
    assert answered.count(False) == general
    assert answered.count(True) == len(NAMES) + int(depth) - general
    monkeypatch.setattr(propfind, from_row, lambda *args: None)
    assert from_rows == _answers(live_server, varied_folder, request, depth)
    answers = {
        unquote(href).rstrip("/").rpartition("/")[2]: answer
        for multistatus in from_rows
        for href, answer in _responses(multistatus).items()
    }

    def text(name: str, prop: str) -> str | None:
        return etree.fromstring(answers[name]).findtext(f".//{prop}")

    if from_row == "_allprop_from_row":
        assert text("sub folder", OC + "share-type") == "3"
        assert text("with space.txt", "{urn:example}colour") == "blue"
        assert text("hash#q?&+%25=;.txt", OC + "favorite") == "1"
        assert text("plain.txt", "{DAV:}lockscope/{DAV:}exclusive") is not None
    if body == "dead-in-oc":
        assert [name for name in NAMES if text(name, OC + "note")] == [NAMES[4]]
