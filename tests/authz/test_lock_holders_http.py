"""Locks never outlive access (issue 25 item 5), over real HTTP on both backends.

A sharee's lock is capped by ``lock_max_timeout``, and the owner of the file can remove it;
revoking or reducing a share (reshares made through it included) and deleting an edit link
release the locks taken through them; ``oxidav locks list|remove`` shows and removes locks.
Shares are made through the OCS Share API and used through the recipient's mount.
"""

from __future__ import annotations

import io
import re
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from oxidav.authz.grants.targets import user_id
from oxidav.authz.links import store as links
from oxidav.authz.links.store import LinkMode
from oxidav.cli import main
from oxidav.db import utcnow
from oxidav.db.models.authz import Grant
from oxidav.settings import SettingsError, load_settings
from oxidav.tree import resolve
from tests.support.live import LiveServer
from tests.support.nextcloud import ocs
from tests.support.share_bits import LOCKINFO, SHARES, add_users, dav, share, status

PUBLIC = "/public.php/dav/files"
LOCKDISCOVERY = (
    '<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop><d:lockdiscovery/></d:prop>'
    "</d:propfind>"
)


def lock(server: LiveServer, user: str, path: str, timeout: str = "Infinite") -> str:
    """``user`` locks ``path`` of his tree; the lock token (without its ``<>``)."""
    resp = dav(server, user, "LOCK", path, LOCKINFO, Timeout=timeout)
    assert resp.status == 200, resp.body
    return resp.headers["lock-token"].strip("<>")


def granted_timeout(body: bytes) -> int:
    """The seconds left on the lock a LOCK answer describes."""
    found = re.search(rb"<(?:\w+:)?timeout>Second-(\d+)</", body)
    assert found is not None, body
    return int(found.group(1))


def team(server: LiveServer, bits: int = 15, to: str = "bob") -> str:
    """alice's /Team/doc.txt, shared with ``to``; the share id."""
    assert status(server, "alice", "MKCOL", "/Team") == 201
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v1") == 201
    code, made = share(server, "alice", "/Team", to, bits)
    assert code == 200, made
    return str(made["data"]["id"])


def test_sharee_infinite_lock_is_capped(live_server: LiveServer) -> None:
    server = live_server
    team(server)
    resp = dav(server, "bob", "LOCK", "/Team/doc.txt", LOCKINFO, Timeout="Infinite")
    assert resp.status == 200, resp.body
    assert 1700 < granted_timeout(resp.body) <= 1800  # lock_max_timeout, not 4 weeks
    props = dav(server, "alice", "PROPFIND", "/Team/doc.txt", LOCKDISCOVERY, Depth="0")
    assert 1700 < granted_timeout(props.body) <= 1800


def test_the_owner_removes_a_sharees_lock(live_server: LiveServer) -> None:
    server = live_server
    team(server)
    resp = dav(server, "bob", "LOCK", "/Team/doc.txt", LOCKINFO, Timeout="Second-600")
    assert resp.status == 200, resp.body
    token = resp.headers["lock-token"]
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 423
    # Another sharee cannot remove bob's lock, even with its token.
    add_users(server, "carol")
    assert share(server, "alice", "/Team", "carol", 15)[0] == 200
    assert status(server, "carol", "UNLOCK", "/Team/doc.txt", **{"Lock-Token": token}) == 403
    # The owner can, and then writes.
    assert status(server, "alice", "UNLOCK", "/Team/doc.txt", **{"Lock-Token": token}) == 204
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 204
    assert status(server, "bob", "PUT", "/Team/doc.txt", b"v3", If=f"({token})") == 412


def test_large_timeouts_are_capped_and_small_ones_kept(live_server: LiveServer) -> None:
    server = live_server
    assert status(server, "alice", "PUT", "/a.txt", b"a") == 201
    assert status(server, "alice", "PUT", "/b.txt", b"b") == 201
    big = dav(server, "alice", "LOCK", "/a.txt", LOCKINFO, Timeout="Second-4100000000")
    assert 1700 < granted_timeout(big.body) <= 1800
    small = dav(server, "alice", "LOCK", "/b.txt", LOCKINFO, Timeout="Second-60")
    assert 0 < granted_timeout(small.body) <= 60
    refresh = dav(
        server, "alice", "LOCK", "/b.txt", If=f"({small.headers['lock-token']})", Timeout="Infinite"
    )
    assert refresh.status == 200 and 1700 < granted_timeout(refresh.body) <= 1800


def test_revoking_a_share_releases_its_locks(live_server: LiveServer) -> None:
    server = add_users(live_server, "carol")
    share_id = team(server)
    lock(server, "bob", "/Team/doc.txt")
    # A reshare made through bob's grant: carol's lock goes with it.
    assert status(server, "alice", "PUT", "/Team/other.txt", b"o") == 201
    assert ocs(server, "PUT", f"{SHARES}/{share_id}", "alice", {"permissions": 31})[0] == 200
    assert share(server, "bob", "/Team", "carol", 15)[0] == 200
    lock(server, "carol", "/Team/other.txt")
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 423
    assert status(server, "alice", "PUT", "/Team/other.txt", b"o2") == 423
    assert ocs(server, "DELETE", f"{SHARES}/{share_id}", "alice")[0] == 200
    # Gone at once: the owner's lock discovery no longer shows them ...
    props = dav(server, "alice", "PROPFIND", "/Team/", LOCKDISCOVERY, Depth="1")
    assert props.status == 207 and b"doc.txt" in props.body
    assert b"opaquelocktoken" not in props.body
    # ... and the owner writes without their tokens.
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 204
    assert status(server, "alice", "PUT", "/Team/other.txt", b"o2") == 204


def test_reducing_a_share_to_read_releases_its_locks(live_server: LiveServer) -> None:
    server = live_server
    share_id = team(server)
    lock(server, "bob", "/Team/doc.txt")
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 423
    assert ocs(server, "PUT", f"{SHARES}/{share_id}", "alice", {"permissions": 1})[0] == 200
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 204


def test_an_expired_share_releases_its_locks(live_server: LiveServer) -> None:
    server = live_server
    share_id = team(server)
    lock(server, "bob", "/Team/doc.txt")
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 423
    assert server.services is not None
    with server.services.db.write() as session:  # bob's grant runs out
        past = utcnow() - timedelta(minutes=1)
        session.execute(update(Grant).where(Grant.id == int(share_id)).values(expires_at=past))
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 204


def test_leaving_a_share_releases_its_locks(live_server: LiveServer) -> None:
    server = live_server
    team(server)
    lock(server, "bob", "/Team/doc.txt")
    assert status(server, "bob", "DELETE", "/Team") == 204  # bob leaves the share
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 204


def _edit_link(server: LiveServer, path: str) -> str:
    assert server.services is not None
    with server.services.db.write() as session:
        node = resolve(session, user_id(session, "alice"), path)
        assert node is not None
        return links.create_link(session, node, mode=LinkMode.EDIT).token


def test_deleting_an_edit_link_releases_its_locks(live_server: LiveServer) -> None:
    server = live_server
    assert status(server, "alice", "MKCOL", "/P") == 201
    assert status(server, "alice", "PUT", "/P/a.txt", b"a") == 201
    token = _edit_link(server, "/P")
    url = f"{PUBLIC}/{token}/a.txt"
    resp = server.request("LOCK", url, LOCKINFO, headers={"Timeout": "Second-600"}, user=None)
    assert resp.status == 200, resp.body
    assert status(server, "alice", "PUT", "/P/a.txt", b"by alice") == 423
    assert server.services is not None
    with server.services.db.write() as session:
        assert links.delete_link(session, token)
    assert status(server, "alice", "PUT", "/P/a.txt", b"by alice") == 204


@pytest.fixture
def oxidav(
    live_server: LiveServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    assert live_server.services is not None
    url = live_server.services.db.engine.url.render_as_string(hide_password=False)
    monkeypatch.setenv("OXIDAV_DATABASE_URL", url)

    def run(*argv: str) -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO(""))
        code = main([*argv, "--data-dir", str(tmp_path / "cli-data")])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_locks_list_and_remove_from_the_command_line(live_server: LiveServer, oxidav) -> None:
    server = live_server
    team(server)
    bob_token = lock(server, "bob", "/Team/doc.txt")
    assert status(server, "alice", "PUT", "/own.txt", b"o") == 201
    alice_token = lock(server, "alice", "/own.txt", "Second-600")

    code, out, err = oxidav("locks", "list")
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 2
    bob_line = next(line for line in lines if bob_token in line)
    assert "\tbob\talice:/Team/doc.txt\t" in bob_line and "exclusive" in bob_line
    assert oxidav("locks", "list", "--user", "bob")[1].splitlines() == [bob_line]
    listed = oxidav("locks", "list", "--user", "alice", "--path", "/Team")[1]
    assert bob_token in listed and alice_token not in listed

    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 423
    code, out, _ = oxidav("locks", "remove", bob_token)
    assert code == 0 and bob_token in out
    assert status(server, "alice", "PUT", "/Team/doc.txt", b"v2") == 204
    assert oxidav("locks", "remove", bob_token)[0] == 2  # no such lock any more

    code, out, _ = oxidav("locks", "remove", "--user", "alice", "--path", "/own.txt")
    assert code == 0 and "removed 1 lock" in out
    assert oxidav("locks", "list")[1] == ""
    assert oxidav("locks", "remove", "--path", "/own.txt")[0] == 2  # --path needs --user
    assert oxidav("locks", "remove")[0] == 2


def test_locks_list_drops_locks_whose_holder_lost_access(live_server: LiveServer, oxidav) -> None:
    server = live_server
    share_id = team(server)
    token = lock(server, "bob", "/Team/doc.txt")
    assert token in oxidav("locks", "list")[1]
    assert ocs(server, "DELETE", f"{SHARES}/{share_id}", "alice")[0] == 200
    assert oxidav("locks", "list")[1] == ""


@pytest.mark.parametrize("value", ["0", "59", "2419201", "soon"])
def test_bad_lock_max_timeout_names_the_setting(tmp_path: Path, value: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({"data_dir": tmp_path}, env={"OXIDAV_LOCK_MAX_TIMEOUT": value})
    assert "'lock_max_timeout'" in str(info.value)
    good = load_settings({"data_dir": tmp_path}, env={"OXIDAV_LOCK_MAX_TIMEOUT": "600"})
    assert good.lock_max_timeout == 600
