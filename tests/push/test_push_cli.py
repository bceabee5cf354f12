"""``oxidav push`` as a user runs it (issue 28): ``--dry-run`` sends nothing, ``--delete``
removes what an earlier push sent and is gone locally (never a file changed on the server
since), a file that fails for good is listed and the exit code is 1, a missing password is
one line and exit 2; a file changed on the server is never overwritten. Real server over HTTP.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.live import LiveServer, in_process_server, make_settings

DAV = "/remote.php/dav/files/alice"


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Iterator[LiveServer]:
    with in_process_server(make_settings(tmp_path / "data", db_url)) as live:
        yield live


def push(
    server: LiveServer, local: Path, state: Path, *extra: str, password: str | None = "secret"
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OXIDAV_PUSH")}
    if password is not None:
        env["OXIDAV_PUSH_PASSWORD"] = password
    command = [sys.executable, "-m", "oxidav.entry", "push", str(local), server.base_url]
    command += ["--user", "alice", "--state-dir", str(state), *extra]
    return subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)


def test_dry_run_delete_and_attention(server: LiveServer, tmp_path: Path) -> None:
    local, state = tmp_path / "local", tmp_path / "state"
    (local / "keep").mkdir(parents=True)
    (local / "keep" / "a.txt").write_bytes(b"a")
    (local / "gone").mkdir()
    (local / "gone" / "b.txt").write_bytes(b"b")
    (local / "c.txt").write_bytes(b"c")

    dry = push(server, local, state, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "would create 2 folders, send 3 files" in dry.stdout
    assert server.request("GET", f"{DAV}/c.txt").status == 404

    first = push(server, local, state)
    assert first.returncode == 0, first.stderr
    assert "3 files" in first.stdout and "committed" in first.stdout
    assert server.request("GET", f"{DAV}/gone/b.txt").body == b"b"

    # Gone locally: removed on the server with --delete; c.txt, edited on the server since,
    # is neither deleted nor overwritten.
    (local / "gone" / "b.txt").unlink()
    (local / "gone").rmdir()
    (local / "c.txt").unlink()
    assert server.request("PUT", f"{DAV}/c.txt", b"server edit").status == 204
    mirrored = push(server, local, state, "--delete")
    assert mirrored.returncode == 1, mirrored.stdout + mirrored.stderr
    assert "/c.txt: changed on the server" in mirrored.stderr
    assert server.request("GET", f"{DAV}/gone/b.txt").status == 404
    assert server.request("GET", f"{DAV}/gone/").status == 404
    assert server.request("GET", f"{DAV}/c.txt").body == b"server edit"
    assert server.request("GET", f"{DAV}/keep/a.txt").body == b"a"

    # A local edit of a file changed on the server meanwhile: left alone, listed, exit 1.
    (local / "keep" / "a.txt").write_bytes(b"local edit")
    assert server.request("PUT", f"{DAV}/keep/a.txt", b"server edit").status == 204
    edited = push(server, local, state)
    assert edited.returncode == 1
    assert "/keep/a.txt: changed on the server" in edited.stderr
    assert server.request("GET", f"{DAV}/keep/a.txt").body == b"server edit"


def test_a_file_refused_for_good_is_listed_and_exit_is_1(tmp_path: Path, db_url: str) -> None:
    settings = make_settings(tmp_path / "data", db_url, default_quota_bytes=10_000)
    local, state = tmp_path / "local", tmp_path / "state"
    local.mkdir()
    (local / "ok.txt").write_bytes(b"fine")
    (local / "too big.bin").write_bytes(b"x" * 20_000)
    with in_process_server(settings) as server:
        done = push(server, local, state)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "needs attention: /too big.bin: 507" in done.stderr
        assert server.request("GET", f"{DAV}/ok.txt").body == b"fine"
        assert server.request("GET", f"{DAV}/too%20big.bin").status == 404


def test_no_password_and_a_wrong_one_are_one_line_and_exit_2(
    server: LiveServer, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    local.mkdir()
    missing = push(server, local, tmp_path / "state", password=None)
    assert missing.returncode == 2 and missing.stderr.count("\n") == 1, missing.stderr
    wrong = push(server, local, tmp_path / "state", password="nope")
    assert wrong.returncode == 2 and "refused the user name or password" in wrong.stderr
    assert wrong.stderr.count("\n") == 1, wrong.stderr


def test_a_terminal_gets_a_progress_bar_and_a_pipe_one_line(
    server: LiveServer, tmp_path: Path
) -> None:
    local = tmp_path / "local"
    local.mkdir()
    for i in range(40):
        (local / f"f{i}.bin").write_bytes(os.urandom(20_000))
    piped = push(server, local, tmp_path / "state-pipe")
    assert piped.returncode == 0 and piped.stderr == ""
    assert piped.stdout.count("\n") == 1 and "40 files" in piped.stdout
    # The same through a pseudo-terminal (util-linux's script): rich draws the bar there.
    command = (
        f"{sys.executable} -m oxidav.entry push {local} {server.base_url} --user alice "
        f"--state-dir {tmp_path / 'state-tty'}"
    )
    env = {**os.environ, "OXIDAV_PUSH_PASSWORD": "secret", "COLUMNS": "120", "TERM": "xterm"}
    done = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout
    assert "push: " in done.stdout and "/40 files" in done.stdout, done.stdout
    assert "committed" in done.stdout
