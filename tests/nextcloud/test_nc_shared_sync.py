"""The real Nextcloud sync engine (``nextcloudcmd``) as bob, syncing a folder alice shared.

bob's client only knows his own URLs: the share shows up as ``/Photos`` in his tree (a mount,
``oxidav.authz.grants.mounts``). As a viewer he gets the files and his local additions never reach
alice's tree; as an editor his uploads land in alice's tree — small files by bulk upload, one
file over 10 MB by chunked upload v2 (default server settings but one: bulk upload is offered
to every client version, as the installed 3.7.3 is not offered it by default and these uploads
hold no empty file, the one thing it cannot put in a batch; ``oxidav.nextcloud.client_version``).
Small on purpose (CI).
"""

from __future__ import annotations

import logging
import random
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.store import Subject, grant
from oxidav.authz.grants.targets import resolve_target, user_id
from tests.support.live import LiveServer, in_process_server, make_settings
from tests.support.nextcloud import ocs
from tests.support.nextcloud_sync import local_files, requests_of, server_files

pytestmark = pytest.mark.skipif(
    shutil.which("nextcloudcmd") is None, reason="nextcloudcmd is not installed"
)

ALICE = "/remote.php/dav/files/alice"
FILES = {"Photos/a.txt": b"alpha\n", "Photos/sub/b.bin": bytes(range(256)) * 40}


@pytest.fixture
def server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    settings = make_settings(tmp_path / "data", db_url, nextcloud_bulk_min_desktop="0")
    with in_process_server(settings) as live:
        for method, path, body in (
            ("MKCOL", "/Photos", None),
            ("MKCOL", "/Photos/sub", None),
            ("PUT", "/Photos/a.txt", FILES["Photos/a.txt"]),
            ("PUT", "/Photos/sub/b.bin", FILES["Photos/sub/b.bin"]),
            ("PUT", "/private.txt", b"private\n"),
        ):
            assert live.request(method, ALICE + path, body).status == 201
        yield live


def _share(server: LiveServer, role: Role) -> None:
    assert server.services is not None
    with server.services.db.write() as session:
        bob = user_id(session, "bob")
        grant(session, Subject.user(bob), resolve_target(session, "files/alice/Photos"), role)


def _sync(server: LiveServer, local: Path) -> subprocess.CompletedProcess[str]:
    command = ["nextcloudcmd", "--non-interactive", "-u", "bob", "-p", "secret"]
    return subprocess.run(
        [*command, str(local), server.base_url],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _alice(server: LiveServer) -> dict[str, bytes]:
    assert server.services is not None
    return server_files(server.services.db, server.services.blobs, "alice")


def test_viewer_downloads_only(server: LiveServer, tmp_path: Path) -> None:
    _share(server, Role.VIEWER)
    local = tmp_path / "bob"
    local.mkdir()
    first = _sync(server, local)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert local_files(local) == FILES
    (local / "Photos" / "mine.txt").write_bytes(b"bob was here\n")
    (local / "Photos" / "a.txt").write_bytes(b"overwritten by bob\n")
    _sync(server, local)  # the client refuses these uploads itself (no W/C permission)
    alice = _alice(server)
    assert "Photos/mine.txt" not in alice
    assert alice["Photos/a.txt"] == FILES["Photos/a.txt"]
    assert "private.txt" not in local_files(local)


def test_editor_upload_lands_in_alices_tree(
    server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oxidav.access")
    _share(server, Role.EDITOR)
    local = tmp_path / "bob"
    local.mkdir()
    first = _sync(server, local)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert local_files(local) == FILES
    big = random.Random(7).randbytes(11 * 1024 * 1024)  # over the client's 10 MB first chunk
    (local / "Photos" / "sub" / "from bob é.txt").write_bytes(b"uploaded by bob\n")
    (local / "Photos" / "bob2.txt").write_bytes(b"also by bob\n")
    (local / "Photos" / "a.txt").write_bytes(b"edited by bob\n")
    (local / "Photos" / "big.bin").write_bytes(big)
    caplog.clear()
    second = _sync(server, local)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    counts = requests_of(caplog.records)
    assert counts[("POST", "bulk")] >= 1, counts  # the small files went by bulk upload
    assert counts[("PUT", "files")] == 0, counts  # none fell back to a plain PUT
    assert counts[("MOVE", "uploads")] >= 1, counts  # the big one by chunked upload v2
    alice = _alice(server)
    assert alice["Photos/sub/from bob é.txt"] == b"uploaded by bob\n"
    assert alice["Photos/bob2.txt"] == b"also by bob\n"
    assert alice["Photos/a.txt"] == b"edited by bob\n"
    assert alice["Photos/big.bin"] == big
    assert server_files(server.services.db, server.services.blobs, "bob") == {}  # type: ignore[union-attr]
    # A change alice makes comes down to bob on the next run (the etags roll up).
    assert server.request("PUT", ALICE + "/Photos/sub/new.txt", b"from alice\n").status == 201
    third = _sync(server, local)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    assert local_files(local)["Photos/sub/new.txt"] == b"from alice\n"


def test_local_moves_into_and_out_of_the_share(
    server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """bob moves a file of his own into the shared folder and one of alice's out of it: the
    server tree follows (the files cross between the two trees) and a further sync is calm."""
    caplog.set_level(logging.INFO, logger="oxidav.access")
    _share(server, Role.EDITOR)
    bob_url = "/remote.php/dav/files/bob"
    assert server.request("PUT", bob_url + "/notes.txt", b"bob's notes\n", user="bob").status == 201
    local = tmp_path / "bob"
    local.mkdir()
    first = _sync(server, local)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert local_files(local) == {**FILES, "notes.txt": b"bob's notes\n"}
    (local / "notes.txt").rename(local / "Photos" / "notes.txt")
    (local / "Photos" / "a.txt").rename(local / "a-out.txt")
    caplog.clear()
    second = _sync(server, local)
    assert second.returncode == 0, second.stdout[-3000:] + second.stderr[-3000:]
    assert server.services is not None
    alice = _alice(server)
    bob = server_files(server.services.db, server.services.blobs, "bob")
    assert alice["Photos/notes.txt"] == b"bob's notes\n" and "Photos/a.txt" not in alice
    assert bob == {"a-out.txt": FILES["Photos/a.txt"]}
    assert requests_of(caplog.records)[("MOVE", "files")] == 2, requests_of(caplog.records)
    caplog.clear()
    third = _sync(server, local)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    assert local_files(local) == {
        "Photos/notes.txt": b"bob's notes\n",
        "Photos/sub/b.bin": FILES["Photos/sub/b.bin"],
        "a-out.txt": FILES["Photos/a.txt"],
    }
    calm = requests_of(caplog.records)
    assert not any(method in ("PUT", "MOVE", "DELETE", "POST") for method, _ in calm), calm


def test_create_only_share_takes_new_files_and_refuses_edits(
    server: LiveServer, tmp_path: Path
) -> None:
    """Bits 5 (read + create, made through the OCS API): bob's new file arrives in alice's
    tree, his edit of her file does not (issue 25)."""
    body = {"path": "/Photos", "shareType": 0, "shareWith": "bob", "permissions": 5}
    status, doc = ocs(server, "POST", "/ocs/v2.php/apps/files_sharing/api/v1/shares", "alice", body)
    assert (status, doc["data"]["permissions"]) == (200, 5)
    local = tmp_path / "bob"
    local.mkdir()
    first = _sync(server, local)
    assert first.returncode == 0, first.stdout[-3000:] + first.stderr[-3000:]
    assert local_files(local) == FILES
    (local / "Photos" / "new by bob.txt").write_bytes(b"new by bob\n")
    (local / "Photos" / "a.txt").write_bytes(b"edited by bob\n")
    _sync(server, local)
    alice = _alice(server)
    assert alice["Photos/new by bob.txt"] == b"new by bob\n"
    assert alice["Photos/a.txt"] == FILES["Photos/a.txt"]
    edit = server.request("PUT", "/remote.php/dav/files/bob/Photos/a.txt", b"x", user="bob")
    assert edit.status == 403
