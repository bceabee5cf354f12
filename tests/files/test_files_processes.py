"""oxidav as separate processes on one database: shared locks and files, and a kill -9 in the
middle of a large PUT that must leave the previous version intact."""

from __future__ import annotations

import base64
import http.client
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.cli import run_oxidav
from tests.support.live import ServerProcess, start_server_process

AUTH = {"Authorization": "Basic " + base64.b64encode(b"alice:secret").decode()}
FILE = "/remote.php/dav/files/alice/shared.txt"
LOCKINFO = (
    b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
    b"</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
)


def _oxidav(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_oxidav(env, *args, timeout=120)


def _request(
    server: ServerProcess, method: str, path: str, body: bytes | None = None, **headers: str
) -> tuple[int, dict[str, str], bytes]:
    port = int(server.base_url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.request(method, path, body=body, headers={**AUTH, **headers})
    response = conn.getresponse()
    result = response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    conn.close()
    return result


@pytest.fixture
def data_env(db_url: str, tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "OXIDAV_DATABASE_URL": db_url, "OXIDAV_DATA_DIR": str(tmp_path / "d")}
    created = _oxidav(env, "user", "add", "alice", "--password", "secret", "--init")
    assert created.returncode == 0, created.stderr
    return env


@contextmanager
def _serving(env: dict[str, str]) -> Iterator[ServerProcess]:
    server = start_server_process(["--port", "0"], env=env)
    try:
        yield server
    finally:
        server.stop()


def test_two_processes_share_locks_and_files(data_env: dict[str, str]) -> None:
    with _serving(data_env) as one, _serving(data_env) as two:
        assert _request(one, "PUT", FILE, b"written by one")[0] == 201
        assert _request(two, "GET", FILE)[2] == b"written by one"
        status, headers, _ = _request(one, "LOCK", FILE, LOCKINFO, Timeout="Second-600")
        assert status == 200
        token = headers["lock-token"]
        assert _request(two, "PUT", FILE, b"no token")[0] == 423
        assert _request(two, "LOCK", FILE, LOCKINFO)[0] == 423
        assert _request(two, "PUT", FILE, b"with token", If=f"({token})")[0] == 204
        assert _request(one, "GET", FILE)[2] == b"with token"
        assert _request(two, "UNLOCK", FILE, **{"Lock-Token": token})[0] == 204
        assert _request(one, "PUT", FILE, b"free again")[0] == 204


def _blob_count(data_dir: Path) -> int:
    return sum(1 for p in (data_dir / "blobs").rglob("*") if p.is_file())


def _kill_during_put(env: dict[str, str], size: int, min_sent: int = 0) -> None:
    data_dir = Path(env["OXIDAV_DATA_DIR"])
    old = os.urandom(1 << 20)
    with _serving(env) as server:
        assert _request(server, "PUT", "/remote.php/dav/files/alice/big.bin", old)[0] == 201
    server = start_server_process(["--port", "0"], env=env)
    port = int(server.base_url.rsplit(":", 1)[1])
    before = _blob_count(data_dir)
    sock = socket.create_connection(("127.0.0.1", port), timeout=60)
    try:
        head = (
            "PUT /remote.php/dav/files/alice/big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            f"Authorization: {AUTH['Authorization']}\r\nContent-Length: {size}\r\n\r\n"
        )
        sock.sendall(head.encode())
        # Send the body until the server has written chunks of it (the PUT is in flight),
        # always stopping well before its end.
        piece = 1 << 20
        sent = 0
        while _blob_count(data_dir) == before or sent < min_sent:
            assert sent + 2 * piece < size, "no chunk was written while the body streamed"
            sock.sendall(os.urandom(piece))  # distinct bytes: nothing deduplicates
            sent += piece
            time.sleep(0.01)  # let the server's reader catch up before looking again
        server.process.kill()
        server.process.wait(timeout=20)
    finally:
        sock.close()
        if server.process.poll() is None:  # a failed assertion: do not leak the server
            server.process.kill()
            server.process.wait(timeout=20)
    with _serving(env) as restarted:
        status, _, body = _request(restarted, "GET", "/remote.php/dav/files/alice/big.bin")
        assert status == 200 and body == old
    fsck = _oxidav(env, "blobs", "fsck", "--deep")
    assert fsck.returncode == 0 and fsck.stdout.strip().endswith("clean"), fsck.stdout


def test_kill_9_during_put_keeps_the_old_content(data_env: dict[str, str]) -> None:
    _kill_during_put(data_env, 24 << 20)


@pytest.mark.slow
def test_kill_9_during_200mib_put_keeps_the_old_content(data_env: dict[str, str]) -> None:
    _kill_during_put(data_env, 200 << 20, min_sent=100 << 20)
