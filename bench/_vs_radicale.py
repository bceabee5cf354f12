"""What the oxidav-vs-Radicale benchmarks share: both servers started side by side, a client.

``side_by_side(tmp, database_url)`` starts ``oxidav serve`` and Radicale 3 (no auth, owner-only
rights) as their own processes on free ports of 127.0.0.1, waits until both accept connections,
yields a ``Client`` for each, and stops both by PID afterwards.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.live import start_server_process

USER, PASSWORD = "admin", "bench-secret"


class Client:
    """One keep-alive connection with Basic auth; reconnects when the server closed it."""

    def __init__(self, port: int) -> None:
        self.port = port
        token = base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
        self.auth = f"Basic {token}"
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def _reconnect(self) -> None:
        self.conn.close()
        self.conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=600)

    def _send(
        self, method: str, path: str, body: str, headers: dict[str, str]
    ) -> tuple[int, bytes]:
        self.conn.request(method, path, body=body.encode("utf-8"), headers=headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.will_close:
            self._reconnect()
        return response.status, data

    def request(
        self, method: str, path: str, body: str = "", headers: dict[str, str] | None = None
    ) -> tuple[int, bytes]:
        all_headers = {"Authorization": self.auth, **(headers or {})}
        try:
            return self._send(method, path, body, all_headers)
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            self._reconnect()  # the server dropped an idle keep-alive connection
            return self._send(method, path, body, all_headers)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)  # polling a port that is not bound yet; not a fixed wait
    raise SystemExit(f"port {port} did not open")


@contextmanager
def side_by_side(tmp: Path, database_url: str = "") -> Iterator[tuple[Client, Client]]:
    """Yield (oxidav client, Radicale client); both servers are stopped on exit."""
    env = {"OXIDAV_ADMIN_PASSWORD": PASSWORD, "MALLOC_ARENA_MAX": "2"}
    if database_url:
        env["OXIDAV_DATABASE_URL"] = database_url
    oxidav = start_server_process(["--data-dir", str(tmp / "oxidav"), "--port", "0"], env=env)
    radicale_port = free_port()
    radicale = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "radicale",
            "--config",
            "",
            "--server-hosts",
            f"127.0.0.1:{radicale_port}",
            "--auth-type",
            "none",
            "--rights-type",
            "owner_only",
            "--storage-filesystem-folder",
            str(tmp / "radicale"),
            "--logging-level",
            "warning",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        wait_for_port(radicale_port, radicale)
        yield Client(int(oxidav.base_url.rsplit(":", 1)[1])), Client(radicale_port)
    finally:
        radicale.terminate()
        radicale.wait(timeout=30)
        oxidav.stop()
