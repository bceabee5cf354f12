"""Acceptance (issue 6): vdirsyncer syncs an address book with a local folder, both ways.

First sync, then edits and deletions on both sides, a second sync: both sides hold the same
cards; a third sync has nothing left to do. Runs the real ``vdirsyncer`` CLI against a live
oxidav, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.carddav_client import CardDav, card_path, parse_multistatus
from tests.support.contacts_samples import card
from tests.support.live import LiveServer

VDIRSYNCER = Path(sys.executable).with_name("vdirsyncer")


def run_vdirsyncer(config: Path, *args: str) -> str:
    result = subprocess.run(
        [str(VDIRSYNCER), "-c", str(config), *args],
        capture_output=True,
        text=True,
        timeout=120,
        input="y\n" * 10,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout + result.stderr


def server_cards(dav: CardDav, book: str = "contacts") -> dict[str, str]:
    """UID -> FN of every card of ``book`` (via addressbook-multiget of a listing)."""
    listing = dav.propfind(card_path("alice", "", book=book), "D:getetag", depth="1")
    hrefs = [href for href in listing.items if not href.endswith("/")]
    items = parse_multistatus(dav.multiget(hrefs, book=book).body).items if hrefs else {}
    result = {}
    for item in items.values():
        text = item.text("{urn:ietf:params:xml:ns:carddav}address-data")
        fields = dict(line.split(":", 1) for line in text.splitlines() if ":" in line)
        result[fields["UID"]] = fields["FN"]
    return result


def local_cards(folder: Path) -> dict[str, str]:
    result = {}
    for path in folder.glob("*.vcf"):
        fields = dict(line.split(":", 1) for line in path.read_text().splitlines() if ":" in line)
        result[fields["UID"]] = fields["FN"]
    return result


@pytest.mark.skipif(not VDIRSYNCER.exists(), reason="vdirsyncer is not installed in the venv")
def test_two_way_sync_converges(live_server: LiveServer, tmp_path: Path) -> None:
    dav = CardDav(live_server)
    local = tmp_path / "local"
    local.mkdir()
    config = tmp_path / "config"
    config.write_text(
        f"""
[general]
status_path = "{tmp_path / "status"}/"

[pair book]
a = "remote"
b = "local"
collections = null
conflict_resolution = "a wins"

[storage remote]
type = "carddav"
url = "{live_server.base_url}{card_path("alice", "")}"
username = "alice"
password = "secret"

[storage local]
type = "filesystem"
path = "{local}/"
fileext = ".vcf"
"""
    )
    for i in range(3):
        assert dav.put(f"s{i}.vcf", card(f"server-{i}", f"Server Ä{i}")).status == 201
    for i in range(2):
        (local / f"local-{i}.vcf").write_text(card(f"local-{i}", f"Local Ö{i}", version="4.0"))

    run_vdirsyncer(config, "discover")
    run_vdirsyncer(config, "sync")
    expected = {
        **{f"server-{i}": f"Server Ä{i}" for i in range(3)},
        **{f"local-{i}": f"Local Ö{i}" for i in range(2)},
    }
    assert server_cards(dav) == expected
    assert local_cards(local) == expected

    # edits and deletions on both sides
    etag = dav.propfind(card_path("alice", "s0.vcf"), "D:getetag").items[
        card_path("alice", "s0.vcf")
    ]
    assert (
        dav.put(
            "s0.vcf", card("server-0", "Server edited"), If_Match=etag.text("{DAV:}getetag")
        ).status
        == 204
    )
    assert dav.request("DELETE", card_path("alice", "s1.vcf")).status == 204
    assert dav.put("s9.vcf", card("server-9", "Server new")).status == 201
    (local / "local-0.vcf").write_text(card("local-0", "Local edited", version="4.0"))
    (local / "local-1.vcf").unlink()
    (local / "local-7.vcf").write_text(card("local-7", "Local new"))

    run_vdirsyncer(config, "sync")
    expected = {
        "server-0": "Server edited",
        "server-2": "Server Ä2",
        "server-9": "Server new",
        "local-0": "Local edited",
        "local-7": "Local new",
    }
    assert server_cards(dav) == expected
    assert local_cards(local) == expected

    # converged: a third sync changes nothing
    before = {path.name: path.read_text() for path in local.glob("*.vcf")}
    token = parse_multistatus(dav.sync(None).body).sync_token
    run_vdirsyncer(config, "sync")
    assert {path.name: path.read_text() for path in local.glob("*.vcf")} == before
    assert parse_multistatus(dav.sync(None).body).sync_token == token


@pytest.mark.skipif(not VDIRSYNCER.exists(), reason="vdirsyncer is not installed in the venv")
def test_discovery_and_collection_creation(live_server: LiveServer, tmp_path: Path) -> None:
    """vdirsyncer discovers the address books from the server URL (well-known, principal,
    home set) and creates a book for a local folder with extended MKCOL."""
    dav = CardDav(live_server)
    assert dav.put("s.vcf", card("server-1", "Server One")).status == 201
    local = tmp_path / "local"
    (local / "work").mkdir(parents=True)
    (local / "work" / "w.vcf").write_text(card("work-1", "Work One"))
    config = tmp_path / "config"
    config.write_text(
        f"""
[general]
status_path = "{tmp_path / "status"}/"

[pair books]
a = "remote"
b = "local"
collections = ["from a", "from b"]

[storage remote]
type = "carddav"
url = "{live_server.base_url}/"
username = "alice"
password = "secret"

[storage local]
type = "filesystem"
path = "{local}/"
fileext = ".vcf"
"""
    )
    run_vdirsyncer(config, "discover")
    run_vdirsyncer(config, "sync")
    assert local_cards(local / "contacts") == {"server-1": "Server One"}
    # the local folder "work" became an address book on the server
    assert server_cards(dav, "work") == {"work-1": "Work One"}
    assert server_cards(dav) == {"server-1": "Server One"}
