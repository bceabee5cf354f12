"""The trash within the quota as Nextcloud keeps it (issue 25 item 7): the trash may hold half
of the space the live files leave free, the oldest trash goes first when it holds more (after a
DELETE and after a write that grows the live files), and the quota reports count the live files
only (``oxidav.tree.trash_room``)."""

from __future__ import annotations

import re

from sqlalchemy import update

from oxidav.db.models.users import User
from oxidav.tree.trash import list_trash
from tests.support.live import LiveServer
from tests.support.nextcloud import user_id

FILES = "/remote.php/dav/files/alice"
QUOTA = 100_000


def _trash_names(live: LiveServer) -> list[str]:
    assert live.services is not None
    db = live.services.db
    with db.read() as session:
        return sorted(path for _id, path, _at in list_trash(session, user_id(db, "alice")))


def _put_and_delete(live: LiveServer, name: str, size: int) -> None:
    assert live.request("PUT", f"{FILES}/{name}", b"t" * size).status == 201
    assert live.request("DELETE", f"{FILES}/{name}").status == 204


def _quota_props(live: LiveServer) -> tuple[int, int]:
    body = (
        '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop>'
        "<d:quota-used-bytes/><d:quota-available-bytes/></d:prop></d:propfind>"
    )
    resp = live.request("PROPFIND", f"{FILES}/", body, headers={"Depth": "0"})
    assert resp.status == 207
    used = re.search(r"quota-used-bytes>(\d+)<", resp.text)
    free = re.search(r"quota-available-bytes>(-?\d+)<", resp.text)
    assert used is not None and free is not None
    return int(used.group(1)), int(free.group(1))


def test_the_oldest_trash_goes_first_when_space_is_needed(live_server: LiveServer) -> None:
    assert live_server.services is not None
    with live_server.services.db.write() as session:
        session.execute(update(User).where(User.username == "alice").values(quota_bytes=QUOTA))
    _put_and_delete(live_server, "a.bin", 20_000)
    _put_and_delete(live_server, "b.bin", 20_000)
    # 40 kB of trash within half of the 100 kB free: both kept.
    assert _trash_names(live_server) == ["/a.bin", "/b.bin"]
    # The reports count the live files only, as Nextcloud's do.
    assert _quota_props(live_server) == (0, QUOTA)
    # 30 kB of live files leave 70 kB free, of which the trash may hold 35 kB: a (oldest) goes.
    assert live_server.request("PUT", f"{FILES}/c.bin", b"c" * 30_000).status == 201
    assert _trash_names(live_server) == ["/b.bin"]
    # 90 kB of live files: 5 kB for the trash; b goes too, and the PUT is not refused.
    assert live_server.request("PUT", f"{FILES}/d.bin", b"d" * 60_000).status == 201
    assert _trash_names(live_server) == []
    assert _quota_props(live_server) == (90_000, 10_000)
    # Beyond the quota it is still 507, trash or not.
    assert live_server.request("PUT", f"{FILES}/e.bin", b"e" * 20_000).status == 507


def test_a_delete_expires_the_oldest_trash_beyond_its_share(live_server: LiveServer) -> None:
    assert live_server.services is not None
    with live_server.services.db.write() as session:
        session.execute(update(User).where(User.username == "alice").values(quota_bytes=QUOTA))
    _put_and_delete(live_server, "a.bin", 30_000)
    _put_and_delete(live_server, "b.bin", 15_000)
    assert _trash_names(live_server) == ["/a.bin", "/b.bin"]
    # 60 kB of trash with nothing live exceeds the 50 kB share: the oldest, a, goes.
    _put_and_delete(live_server, "c.bin", 15_000)
    assert _trash_names(live_server) == ["/b.bin", "/c.bin"]


def test_without_a_quota_the_trash_is_left_alone(live_server: LiveServer) -> None:
    for name in ("a.bin", "b.bin", "c.bin"):
        _put_and_delete(live_server, name, 50_000)
    assert live_server.request("PUT", f"{FILES}/d.bin", b"d" * 50_000).status == 201
    assert _trash_names(live_server) == ["/a.bin", "/b.bin", "/c.bin"]
