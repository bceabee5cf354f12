"""The trashbin provider over HTTP: list, restore (412 on conflict), purge one / all."""

from __future__ import annotations

import re

from tests.support.live import LiveServer

FILES = "/remote.php/dav/files/alice"
TRASH = "/remote.php/dav/trashbin/alice/trash"
RESTORE = "/remote.php/dav/trashbin/alice/restore"
PROPS = (
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:" xmlns:nc="http://nextcloud.org/ns"><d:prop>'
    "<nc:trashbin-filename/><nc:trashbin-original-location/><nc:trashbin-deletion-time/>"
    "<d:getcontentlength/><d:resourcetype/></d:prop></d:propfind>"
)


def _items(live: LiveServer) -> list[str]:
    resp = live.request("PROPFIND", f"{TRASH}/", PROPS, headers={"Depth": "1"})
    assert resp.status == 207, resp.text
    hrefs = re.findall(r"<D:href>([^<]+)</D:href>", resp.text)
    return hrefs[1:]


def test_delete_list_restore(live_server: LiveServer) -> None:
    assert live_server.request("MKCOL", f"{FILES}/dir").status == 201
    assert live_server.request("PUT", f"{FILES}/dir/a.txt", b"hello").status == 201
    assert live_server.request("DELETE", f"{FILES}/dir").status == 204
    items = _items(live_server)
    assert len(items) == 1 and re.search(r"/dir\.d\d+/$", items[0])
    resp = live_server.request("PROPFIND", items[0], PROPS, headers={"Depth": "0"})
    assert re.search(r"trashbin-filename>dir</", resp.text)
    assert re.search(r"trashbin-original-location>dir</", resp.text)
    assert re.search(r"trashbin-deletion-time>\d+</", resp.text)
    name = items[0].rstrip("/").rsplit("/", 1)[1]
    resp = live_server.request("MOVE", items[0], headers={"Destination": f"{RESTORE}/{name}"})
    assert resp.status == 201, resp.text
    assert live_server.request("GET", f"{FILES}/dir/a.txt").body == b"hello"
    assert _items(live_server) == []


def test_restore_conflict_is_412(live_server: LiveServer) -> None:
    live_server.request("PUT", f"{FILES}/f.txt", b"old")
    assert live_server.request("DELETE", f"{FILES}/f.txt").status == 204
    live_server.request("PUT", f"{FILES}/f.txt", b"new")
    (item,) = _items(live_server)
    name = item.rsplit("/", 1)[1]
    resp = live_server.request("MOVE", item, headers={"Destination": f"{RESTORE}/{name}"})
    assert resp.status == 412
    assert live_server.request("GET", f"{FILES}/f.txt").body == b"new"
    bad = live_server.request("MOVE", item, headers={"Destination": f"{FILES}/elsewhere"})
    assert bad.status in (400, 404)


def test_purge_one_and_all(live_server: LiveServer) -> None:
    for name in ("a", "b", "c"):
        live_server.request("PUT", f"{FILES}/{name}", name.encode())
        live_server.request("DELETE", f"{FILES}/{name}")
    items = _items(live_server)
    assert len(items) == 3
    assert live_server.request("DELETE", items[0]).status == 204
    assert len(_items(live_server)) == 2
    assert live_server.request("DELETE", f"{TRASH}/").status == 204
    assert _items(live_server) == []


def test_other_users_trash_is_404(live_server: LiveServer) -> None:
    live_server.request("PUT", f"{FILES}/x", b"x")
    live_server.request("DELETE", f"{FILES}/x")
    (item,) = _items(live_server)
    assert live_server.request("PROPFIND", f"{TRASH}/", user="bob").status == 404
    assert live_server.request("DELETE", item, user="bob").status == 404
    assert live_server.request("PROPFIND", f"{TRASH}/nothing.d999", user="alice").status == 404
