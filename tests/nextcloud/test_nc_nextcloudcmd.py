"""The real Nextcloud desktop sync engine (``nextcloudcmd`` 3.7.3) against oxidav.

Issue 4's acceptance run: sync a generated tree up (bulk upload for the small files, chunked
upload v2 for the ones over 10 MB), then server-side WebDAV changes come down, LOCALDIR changes
go up, both sides are byte-equal after every run, and a final run transfers nothing. The access
log (captured through ``caplog``) shows which upload paths the client took.

Both run on both backends; the full-size one is ``-m slow``.
"""

from __future__ import annotations

import logging
import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

from oxidav.services import Services
from tests.support.live import LiveServer, in_process_server, make_settings
from tests.support.nextcloud_sync import (
    TreeShape,
    local_files,
    make_tree,
    nextcloudcmd,
    requests_of,
    server_files,
    transfers,
)

pytestmark = pytest.mark.skipif(
    shutil.which("nextcloudcmd") is None, reason="nextcloudcmd is not installed"
)

DAV = "/remote.php/dav/files/alice"


@pytest.fixture
def live_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """The round trip exercises the installed client's bulk upload path, so bulk is offered to
    every client version here: the trees of ``make_tree`` hold no empty file, the one thing
    desktop clients before 3.9 cannot put in a batch (test_nc_client_versions covers the
    default settings, where those clients are not offered bulk)."""
    settings = make_settings(tmp_path / "data", db_url, nextcloud_bulk_min_desktop="0")
    with in_process_server(settings) as server:
        yield server


def _services(server: LiveServer) -> Services:
    assert server.services is not None
    return server.services


def _assert_same(server: LiveServer, local: Path) -> dict[str, bytes]:
    services = _services(server)
    remote = server_files(services.db, services.blobs, "alice")
    here = local_files(local)
    assert sorted(here) == sorted(remote)
    different = [path for path in here if here[path] != remote[path]]
    assert not different
    return here


def _run(
    server: LiveServer, local: Path, caplog: pytest.LogCaptureFixture
) -> Counter[tuple[str, str]]:
    caplog.clear()
    nextcloudcmd(local, server.base_url)
    return requests_of(caplog.records)


def _dav(server: LiveServer, method: str, path: str, body: bytes = b"", **headers: str) -> None:
    response = server.request(method, DAV + quote(path), body=body, headers=headers)
    assert response.status in (201, 204), (method, path, response.status, response.text)


def round_trip(
    server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, shape: TreeShape
) -> None:
    caplog.set_level(logging.INFO, logger="oxidav.access")
    local = tmp_path / "local"
    make_tree(local, shape)

    # 1. First sync: everything goes up.
    counts = _run(server, local, caplog)
    files = _assert_same(server, local)
    assert len(files) == shape.small + shape.medium + shape.large
    print("RUN1", dict(counts))
    assert counts[("POST", "bulk")] >= 1, counts
    assert counts[("MKCOL", "uploads")] >= shape.large, counts
    assert counts[("MOVE", "uploads")] >= shape.large, counts

    # 2. Changes made on the server through plain WebDAV reach LOCALDIR.
    nested = sorted(path for path in files if "/" in path)
    changed, renamed, deleted = nested[0], nested[1], nested[2]
    folder = changed.rsplit("/", 1)[0]
    _dav(server, "PUT", "/" + changed, b"changed on the server\n" * 3)
    _dav(server, "PUT", f"/{folder}/added on server ü.txt", b"new\n")
    _dav(server, "MKCOL", "/server folder")
    _dav(server, "PUT", "/server folder/inside.txt", b"inside\n")
    _dav(server, "PUT", "/server folder/empty", b"")
    _dav(
        server,
        "MOVE",
        "/" + renamed,
        Destination=DAV + quote("/" + renamed + ".renamed"),
    )
    _dav(server, "DELETE", "/" + deleted)
    _run(server, local, caplog)
    here = _assert_same(server, local)
    assert here[changed] == b"changed on the server\n" * 3
    assert here["server folder/inside.txt"] == b"inside\n"
    assert here["server folder/empty"] == b""
    assert renamed + ".renamed" in here and renamed not in here
    assert deleted not in here

    # 3. Changes in LOCALDIR reach the server.
    (local / changed).write_bytes(b"changed locally, longer than before\n" * 5)
    (local / "local new é.txt").write_bytes(b"local\n")
    (local / "local folder" / "deeper").mkdir(parents=True)
    (local / "local folder" / "deeper" / "n.txt").write_bytes(b"n\n")
    (local / (renamed + ".renamed")).rename(local / "moved back.bin")
    (local / "server folder" / "inside.txt").unlink()
    _run(server, local, caplog)
    here = _assert_same(server, local)
    assert here["local folder/deeper/n.txt"] == b"n\n"
    assert "moved back.bin" in here and "server folder/inside.txt" not in here

    # 4. Nothing changed: nothing is transferred.
    counts = _run(server, local, caplog)
    print("RUN4", dict(counts))
    assert transfers(counts) == 0, counts
    _assert_same(server, local)


def test_nextcloudcmd_round_trip(
    live_server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    round_trip(live_server, tmp_path, caplog, TreeShape(small=48, medium=2, large=1, folders=6))


@pytest.mark.slow
def test_nextcloudcmd_round_trip_full(
    live_server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    round_trip(live_server, tmp_path, caplog, TreeShape(small=980, medium=18, large=2, folders=40))
