"""Servers and clients shared by the ``files_*`` benchmarks.

Both contenders run as their own process on 127.0.0.1 (so the client does not share their GIL
and their memory can be read from /proc): WsgiDAV's stock ``FilesystemProvider`` through the
``wsgidav`` command (anonymous, default stack, as docs/wsgidav.md#propfind-cost describes it) and
``oxidav serve`` with user alice. Each is polled until its port answers and stopped by PID.
"""

from __future__ import annotations

import base64
import http.client
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BIN = Path(sys.executable).parent
OXIDAV_FILES = "/remote.php/dav/files/alice/"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_for_port(port: int, process: subprocess.Popen[bytes], deadline: float = 60) -> None:
    limit = time.monotonic() + deadline
    while time.monotonic() < limit:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"port {port} did not open")


def _status_kib(pid: int, field: str) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@dataclass
class Server:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    base: str  # URL path of the tree root, with trailing slash
    auth: str | None

    def serving_pids(self) -> list[int]:
        """The processes that serve requests: the children of the started process
        (``oxidav serve``'s workers, Apache's children), or the process itself if it has none."""
        pid = self.process.pid
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        return [int(child) for child in children] or [pid]

    def rss_kb(self, field: str = "VmRSS") -> int:
        """The largest ``field`` (VmRSS, VmHWM) of the serving processes, in KiB."""
        return max(_status_kib(pid, field) for pid in self.serving_pids())

    def reset_peak(self) -> None:
        """Set the serving processes' VmHWM back to their VmRSS (``clear_refs`` 5, Linux), so a
        later VmHWM is the peak of what ran in between."""
        for pid in self.serving_pids():
            Path(f"/proc/{pid}/clear_refs").write_text("5")

    def cpu_seconds(self) -> float:
        """User + system CPU time the started process and its serving processes have used."""
        pids = {self.process.pid, *self.serving_pids()}
        return sum(_cpu_ticks(pid) for pid in pids) / os.sysconf("SC_CLK_TCK")

    def client(self) -> Client:
        return Client(self)


class Client:
    """One keep-alive connection."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=600)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, bytes, dict[str, str]]:
        all_headers = dict(headers or {})
        if self.server.auth:
            all_headers["Authorization"] = self.server.auth
        self.conn.request(method, self.server.base + path, body=body, headers=all_headers)
        response = self.conn.getresponse()
        data = response.read()
        if response.will_close:
            self.conn.close()
            self.conn = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=600)
        return response.status, data, {k.lower(): v for k, v in response.getheaders()}

    def close(self) -> None:
        self.conn.close()


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


@contextmanager
def filesystem_server(root: Path) -> Iterator[Server]:
    """WsgiDAV's FilesystemProvider serving ``root`` (anonymous, stock configuration)."""
    port = free_port()
    process = subprocess.Popen(
        [
            str(BIN / "wsgidav"),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--root",
            str(root),
            "--auth",
            "anonymous",
            "--no-config",
            "-q",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
        yield Server("FilesystemProvider", process, port, "/", None)
    finally:
        _stop(process)


def oxidav_env(data_dir: Path, db_url: str | None = None) -> dict[str, str]:
    env = {**os.environ, "OXIDAV_DATA_DIR": str(data_dir), "OXIDAV_LOG_LEVEL": "WARNING"}
    if db_url:
        env["OXIDAV_DATABASE_URL"] = db_url
    return env


def add_alice(env: dict[str, str]) -> None:
    # A new installation: made here, as ``--init`` would (older revisions lack the flag).
    Path(env["OXIDAV_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "oxidav.cli", "user", "add", "alice", "--password", "secret"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )


@contextmanager
def oxidav_server(
    env: dict[str, str],
    source: Path | None = None,
    name: str = "oxidav",
    flags: Sequence[str] = (),
) -> Iterator[Server]:
    """``oxidav serve`` (alice must exist) on a free port; ``source``: run the ``oxidav``
    package found in that folder (an exported older revision) instead of the installed one;
    ``flags``: more of ``serve``'s flags (``--init``)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "oxidav.cli", "serve", "--port", str(port), *flags],
        env=env,
        cwd=source,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process)
        auth = "Basic " + base64.b64encode(b"alice:secret").decode()
        yield Server(name, process, port, OXIDAV_FILES, auth)
    finally:
        _stop(process)


@contextmanager
def alice_tree(env: dict[str, str]) -> Iterator[tuple[Any, Any, int]]:
    """(database, blob chain, alice's user id) of the installation ``env`` names, alice's root
    made: for filling her tree straight through the tree API; closed afterwards."""
    from sqlalchemy import select

    from oxidav.blobs import BlobChain
    from oxidav.db import Database
    from oxidav.db.models.users import User
    from oxidav.settings import load_settings
    from oxidav.tree import ensure_root

    settings = load_settings(env=env)
    db = Database.from_url(settings.resolved_database_url)
    chain = BlobChain.from_settings(settings, db)
    try:
        with db.read() as session:
            user_id = session.scalar(select(User.id).where(User.username == "alice"))
        assert user_id is not None
        ensure_root(db, user_id)
        yield db, chain, user_id
    finally:
        chain.close()
        db.dispose()


def median_ms(samples: list[float]) -> float:
    ordered = sorted(samples)
    return 1000 * ordered[len(ordered) // 2]
