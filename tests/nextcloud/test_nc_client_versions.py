"""The installed desktop client (``nextcloudcmd``) on DEFAULT settings syncs trees with empty
files, Unicode and space names and nested folders (issue 26, "client versions").

Which upload path it takes depends on its version (``oxidav.nextcloud.client_version``): a
client offered bulk upload must get every batch accepted (bulk POSTs in the access log, none
refused); an older one (Debian's 3.7.3) is not offered bulk and PUTs each file. Either way every
file arrives byte-exact (read back over WebDAV), the client exits 0 and reports no failed item,
and a second run transfers nothing. A last test shows, with the real 3.7.3 client and bulk
forced on, why the old ones are not offered bulk. Both backends; the 3000-file run is ``-m slow``.
"""

from __future__ import annotations

import logging
import random
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path
from urllib.parse import quote

import pytest

from oxidav.nextcloud.client_version import offers_bulk
from tests.support.live import LiveServer, in_process_server, make_settings
from tests.support.nextcloud_sync import local_files, nextcloudcmd, requests_of, transfers

pytestmark = pytest.mark.skipif(
    shutil.which("nextcloudcmd") is None, reason="nextcloudcmd is not installed"
)

DAV = "/remote.php/dav/files/alice/"
_NAMES = ("rapport", "été", "日本語", "naïve café", "Ωmega", "straße", "plain", "a  b")
#: A propagation that did not end in Success ("Unknown error" with status Success is the
#: client's own default Qt error string, logged after every successful MKCOL).
_FAILED_ITEM = re.compile(
    r"Could not complete propagation of .* with status (?!OCC::SyncFileItem::Success)"
)


def _client_user_agent() -> str:
    """A User-Agent naming the installed client's version, as the client itself sends it."""
    done = subprocess.run(["nextcloudcmd", "--version"], capture_output=True, text=True, timeout=60)
    match = re.search(r"version (\d+\.\d+\.\d+)", done.stdout + done.stderr)
    assert match, done.stdout + done.stderr
    return f"Mozilla/5.0 (Linux) mirall/{match.group(1)} (nextcloudcmd)"


def make_tree(root: Path, files: int, empty_every: int, seed: int = 26) -> None:
    """``files`` files under nested folders with Unicode and space names; every
    ``empty_every``-th file is empty, the others 1 byte to 200 KB."""
    rng = random.Random(seed)
    folders = [root]
    for i in range(max(4, files // 40)):
        folder = rng.choice(folders) / f"{_NAMES[i % len(_NAMES)]} {i}"
        folder.mkdir(parents=True, exist_ok=True)
        folders.append(folder)
    root.mkdir(parents=True, exist_ok=True)
    for i in range(files):
        size = 0 if i % empty_every == 0 else rng.choice((1, 17, 300, 4096, 70_000, 200_000))
        name = f"{_NAMES[(i * 3) % len(_NAMES)]} {i}.txt"
        (folders[i % len(folders)] / name).write_bytes(rng.randbytes(size))


def _failed_items(output: str) -> list[str]:
    return [line for line in output.splitlines() if _FAILED_ITEM.search(line)]


def sync_on_defaults(
    server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture, files: int
) -> Counter[tuple[str, str]]:
    caplog.set_level(logging.INFO, logger="oxidav.access")
    caplog.set_level(logging.INFO, logger="oxidav.nextcloud")
    local = tmp_path / "local"
    make_tree(local, files, empty_every=100)
    here = local_files(local)
    assert len(here) == files and sum(1 for data in here.values() if not data) >= files // 100

    output = nextcloudcmd(local, server.base_url)  # asserts exit 0
    assert _failed_items(output) == []
    # 3.7's PropagateRemoteMkdir copies the reply's errorString() into the item even on success,
    # and Qt's default for a reply without error is "Unknown error": one line per new folder,
    # status Success (the MKCOL answer carries OC-FileId and OC-ETag, test_nc_middleware).
    unknown = [line for line in output.splitlines() if "Unknown error" in line]
    assert all("PropagateRemoteMkdir" in line and "Success" in line for line in unknown), unknown
    counts = requests_of(caplog.records)
    print("RUN1", dict(counts))
    refused = [r.getMessage() for r in caplog.records if "rejected" in r.getMessage()]
    assert refused == []
    if offers_bulk(_client_user_agent(), True, server.settings.nextcloud_bulk_min_desktop):
        assert counts[("POST", "bulk")] >= files // 100, counts
    else:
        assert counts[("POST", "bulk")] == 0, counts
        assert counts[("PUT", "files")] == files, counts

    # A second run transfers nothing (before the reads below: the server writes a request's
    # access-log line after the response, so a read's line could land in this run's count).
    caplog.clear()
    output = nextcloudcmd(local, server.base_url)
    assert _failed_items(output) == []
    assert transfers(requests_of(caplog.records)) == 0

    for path, data in here.items():
        got = server.request("GET", DAV + quote(path))
        assert got.status == 200 and got.body == data, (path, got.status, len(got.body))
    return counts


def test_default_settings_sync_with_empty_files(
    live_server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sync_on_defaults(live_server, tmp_path, caplog, files=300)


@pytest.mark.slow
def test_default_settings_sync_thousands(
    live_server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    sync_on_defaults(live_server, tmp_path, caplog, files=3000)


def test_old_client_offered_bulk_cannot_send_an_empty_file(
    db_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """With bulk offered to every version, a pre-3.9 client aborts the batch holding an empty
    file before its body: the server answers 400 with the reason and nothing of the batch is
    written; the client fails. (What the default ``nextcloud_bulk_min_desktop`` avoids.)"""
    if offers_bulk(_client_user_agent(), True, "3.10"):
        pytest.skip("the installed client is offered bulk upload by default")
    caplog.set_level(logging.INFO, logger="oxidav.nextcloud")
    local = tmp_path / "local"
    (local / "dossier été").mkdir(parents=True)
    (local / "a.txt").write_bytes(b"hello")
    (local / "vide.txt").write_bytes(b"")
    (local / "dossier été" / "日本語.txt").write_bytes("ünï\n".encode())
    settings = make_settings(tmp_path / "data", db_url, nextcloud_bulk_min_desktop="0")
    with in_process_server(settings) as server:
        args = ["--non-interactive", "-u", "alice", "-p", "secret", str(local), server.base_url]
        done = subprocess.run(["nextcloudcmd", *args], capture_output=True, text=True, timeout=300)
        assert done.returncode != 0
        reasons = {
            r.getMessage().rsplit(": ", 1)[-1] for r in caplog.records if "bulk" in r.getMessage()
        }
        assert reasons == {"body ends before the opening boundary"}
        for path in ("a.txt", "vide.txt", quote("dossier été/日本語.txt")):
            assert server.request("GET", DAV + path).status == 404
