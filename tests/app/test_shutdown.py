"""Graceful shutdown of ``oxidav serve`` as systemd and container runtimes do it: SIGTERM or
SIGINT while a slow upload is in flight and while a kept-alive connection idles; a second signal.

Real processes and raw sockets. The upload is in a worker before the signal: it sends
``Expect: 100-continue`` and waits for the ``100 Continue`` (cheroot sends it from the worker
that reads the body). Waits poll a condition with a deadline.
"""

from __future__ import annotations

import base64
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

from tests.support.live import ServerProcess, start_server_process, until

PASSWORD = "shutdown-pw"
AUTH = "Basic " + base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
FILE = "/remote.php/dav/files/admin/big.bin"
OLD = b"old version\n" * 1000
NEW = bytes(range(256)) * 4096  # 1 MiB


def _start(
    tmp_path: Path, db_url: str | None = None, log: str = "server.log", **settings: str
) -> ServerProcess:
    env = {"OXIDAV_ADMIN_PASSWORD": PASSWORD, "OXIDAV_SWEEP_INTERVAL_SECONDS": "0"}
    env.update({f"OXIDAV_{k.upper()}": v for k, v in settings.items()})
    if db_url is not None:
        env["OXIDAV_DATABASE_URL"] = db_url
    return start_server_process(
        ["--data-dir", str(tmp_path / "data"), "--port", "0"],
        env=env,
        stderr=tmp_path / log,
    )


def _port(server: ServerProcess) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def _request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request(method, path, body=body, headers={"Authorization": AUTH, "Depth": "1"})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def _refuses_connections(port: int) -> bool:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def _start_slow_put(port: int, sent: bytes) -> socket.socket:
    """A PUT of ``NEW`` whose head and first ``sent`` bytes are in a worker's hands."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=30)
    sock.sendall(
        (
            f"PUT {FILE} HTTP/1.1\r\nHost: t\r\nAuthorization: {AUTH}\r\n"
            f"Content-Length: {len(NEW)}\r\nExpect: 100-continue\r\n\r\n"
        ).encode()
    )
    assert sock.recv(64).startswith(b"HTTP/1.1 100 Continue")
    sock.sendall(sent)
    return sock


def _read_answer(sock: socket.socket) -> bytes:
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return answer


def _exited(server: ServerProcess) -> bool:
    return server.process.poll() is not None


def _log(tmp_path: Path) -> str:
    return (tmp_path / "server.log").read_text()


def _restart_and_read(tmp_path: Path, db_url: str | None = None) -> tuple[bytes, bytes]:
    """The file's bytes and the folder's PROPFIND after a restart."""
    server = _start(tmp_path, db_url, log="restart.log")
    try:
        status, body = _request(_port(server), "GET", FILE)
        assert status == 200, status
        status, listing = _request(_port(server), "PROPFIND", "/remote.php/dav/files/admin/")
        assert status == 207
        return body, listing
    finally:
        assert server.stop() == 0


def test_sigterm_lets_a_slow_put_in_flight_finish(tmp_path: Path, db_url: str) -> None:
    server = _start(tmp_path, db_url)
    port = _port(server)
    assert _request(port, "PUT", FILE, OLD)[0] in (201, 204)
    half = len(NEW) // 2
    sock = _start_slow_put(port, NEW[:half])
    server.process.send_signal(signal.SIGTERM)
    until(lambda: _refuses_connections(port), 20, "the listening socket closes")
    assert not _exited(server)  # still serving the upload in flight
    sock.sendall(NEW[half:])
    answer = _read_answer(sock)
    sock.close()
    head = answer.split(b"\r\n\r\n", 1)[0].decode()
    assert re.match(r"HTTP/1\.1 20[14] ", head), head
    assert "Connection: close" in head
    assert server.process.wait(timeout=30) == 0
    log = _log(tmp_path)
    assert "Traceback" not in log and "received SIGTERM" in log
    body, _ = _restart_and_read(tmp_path, db_url)
    assert body == NEW


def test_a_put_past_the_shutdown_timeout_leaves_the_old_version(tmp_path: Path) -> None:
    server = _start(tmp_path, shutdown_timeout="1")
    port = _port(server)
    assert _request(port, "PUT", FILE, OLD)[0] in (201, 204)
    sock = _start_slow_put(port, NEW[:1000])
    server.process.send_signal(signal.SIGTERM)
    until(lambda: _exited(server), 20, "the server exits after its shutdown timeout")
    assert server.process.returncode == 0
    assert not re.match(rb"HTTP/1\.1 2", _read_answer(sock))  # the upload was not taken
    sock.close()
    assert "Traceback" not in _log(tmp_path)
    body, listing = _restart_and_read(tmp_path)
    assert body == OLD
    # The folder and one file at its old length: nothing of the cut upload is visible.
    responses = ElementTree.fromstring(listing).findall("{DAV:}response")
    hrefs = sorted(r.findtext("{DAV:}href") or "" for r in responses)
    assert hrefs == ["/remote.php/dav/files/admin/", FILE]
    lengths = [r.findtext(".//{DAV:}getcontentlength") for r in responses]
    assert str(len(OLD)) in lengths


def test_an_idle_keepalive_connection_does_not_hold_up_shutdown(tmp_path: Path) -> None:
    server = _start(tmp_path, shutdown_timeout="120")
    port = _port(server)
    idle = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    idle.request("PROPFIND", "/remote.php/dav/", headers={"Authorization": AUTH, "Depth": "0"})
    response = idle.getresponse()
    assert response.status == 207 and response.getheader("Connection") != "close"
    response.read()
    server.process.send_signal(signal.SIGINT)
    # Far below the 120 s shutdown timeout: nothing in flight, the idle connection is closed.
    until(lambda: _exited(server), 30, "the server exits with only an idle connection open")
    assert server.process.returncode == 0
    assert idle.sock is not None
    assert idle.sock.recv(1) == b""  # closed cleanly by the server
    idle.close()
    log = _log(tmp_path)
    assert "Traceback" not in log and "received SIGINT" in log and "stopped" in log


def test_a_second_signal_exits_at_once(tmp_path: Path) -> None:
    server = _start(tmp_path, shutdown_timeout="120")
    port = _port(server)
    sock = _start_slow_put(port, NEW[:1000])
    server.process.send_signal(signal.SIGTERM)
    until(lambda: _refuses_connections(port), 20, "the first signal is taken")
    server.process.send_signal(signal.SIGTERM)
    until(lambda: _exited(server), 30, "the second signal ends the process")
    assert server.process.returncode not in (0, None)
    sock.close()
    log = _log(tmp_path)
    assert "Traceback" not in log and "SIGTERM again, exiting at once" in log


def test_the_cli_reports_shutdown_timeout_errors_in_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "oxidav.cli",
            "serve",
            "--data-dir",
            str(tmp_path),
            "--port",
            "0",
        ],
        env={**os.environ, "OXIDAV_SHUTDOWN_TIMEOUT": "-1"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "'shutdown_timeout'" in result.stderr
