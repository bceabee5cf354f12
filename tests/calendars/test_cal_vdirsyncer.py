"""Acceptance: vdirsyncer syncs a calendar two ways with a local folder and converges.

First sync, then edits on both sides (modify, delete, add), a second sync, and a third that
finds nothing to do; SQLite and PostgreSQL.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import icalendar
import pytest

VDIRSYNCER = Path(sys.executable).with_name("vdirsyncer")
BASE = "/remote.php/dav/calendars/alice/team/"


def ics(uid: str, summary: str, day: int) -> str:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:202603{day:02d}T100000Z\r\n"
        f"DTEND:202603{day:02d}T110000Z\r\nSUMMARY:{summary}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    )


def vdirsyncer(config: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "VDIRSYNCER_CONFIG": str(config)}
    result = subprocess.run(
        [str(VDIRSYNCER), *args],
        input="y\n" * 10,
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result


def server_items(live_server) -> dict[str, str]:
    """UID -> SUMMARY of the server calendar, read through the store."""
    store_calendar = live_server.request(
        "PROPFIND",
        BASE,
        '<propfind xmlns="DAV:"><prop><getetag/></prop></propfind>',
        {"Depth": "1"},
    )
    assert store_calendar.status == 207
    from lxml import etree

    items: dict[str, str] = {}
    hrefs = [h.text for h in etree.fromstring(store_calendar.body).iter("{DAV:}href")]
    for href in hrefs:
        if href.endswith("/"):
            continue
        body = live_server.request("GET", href).text
        event = icalendar.Calendar.from_ical(body).walk("VEVENT")[0]
        uid = str(event["UID"])
        assert uid not in items, "duplicate UID on the server"
        items[uid] = str(event["SUMMARY"])
    return items


def local_items(folder: Path) -> dict[str, str]:
    items: dict[str, str] = {}
    for path in folder.glob("*.ics"):
        event = icalendar.Calendar.from_ical(path.read_text()).walk("VEVENT")[0]
        uid = str(event["UID"])
        assert uid not in items, "duplicate UID in the folder"
        items[uid] = str(event["SUMMARY"])
    return items


@pytest.mark.skipif(not VDIRSYNCER.exists(), reason="vdirsyncer is not installed")
def test_vdirsyncer_two_way_sync_converges(live_server, tmp_path: Path) -> None:
    assert live_server.request("MKCALENDAR", BASE).status == 201
    for i in range(10):
        response = live_server.request(
            "PUT",
            f"{BASE}e{i}.ics",
            ics(f"e{i}", f"Event {i}", i + 1),
            {"Content-Type": "text/calendar"},
        )
        assert response.status == 201
    local = tmp_path / "local"
    local.mkdir()
    config = tmp_path / "config"
    config.write_text(
        f"""[general]
status_path = "{tmp_path / "status"}"

[pair cal]
a = "server"
b = "folder"
collections = ["team"]
conflict_resolution = "a wins"

[storage server]
type = "caldav"
url = "{live_server.base_url}/"
username = "alice"
password = "secret"

[storage folder]
type = "filesystem"
path = "{local}"
fileext = ".ics"
"""
    )
    vdirsyncer(config, "discover")
    vdirsyncer(config, "sync")
    folder = local / "team"
    assert (
        local_items(folder)
        == server_items(live_server)
        == {f"e{i}": f"Event {i}" for i in range(10)}
    )

    # Local edits: modify e1, delete e2, add l1.
    by_uid = {
        str(icalendar.Calendar.from_ical(p.read_text()).walk("VEVENT")[0]["UID"]): p
        for p in folder.glob("*.ics")
    }
    by_uid["e1"].write_text(ics("e1", "Event 1 (local edit)", 2))
    by_uid["e2"].unlink()
    (folder / "l1.ics").write_text(ics("l1", "Local new", 20))
    # Server edits: modify e3, delete e4, add s1.
    assert (
        live_server.request(
            "PUT",
            f"{BASE}e3.ics",
            ics("e3", "Event 3 (server edit)", 4),
            {"Content-Type": "text/calendar"},
        ).status
        == 204
    )
    assert live_server.request("DELETE", f"{BASE}e4.ics").status == 204
    assert (
        live_server.request(
            "PUT", f"{BASE}s1.ics", ics("s1", "Server new", 21), {"Content-Type": "text/calendar"}
        ).status
        == 201
    )

    vdirsyncer(config, "sync")
    expected = {f"e{i}": f"Event {i}" for i in range(10) if i not in (2, 4)}
    expected.update(
        {
            "e1": "Event 1 (local edit)",
            "e3": "Event 3 (server edit)",
            "l1": "Local new",
            "s1": "Server new",
        }
    )
    assert server_items(live_server) == expected
    assert local_items(folder) == expected

    result = vdirsyncer(config, "sync")
    assert "Copying" not in result.stdout + result.stderr
    assert server_items(live_server) == local_items(folder) == expected
