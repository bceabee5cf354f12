"""Real servers for tests: in-process (cheroot in a thread) and as an ``oxidav serve`` process.

Both bind 127.0.0.1 on a free port and are ready when the call returns (no sleeps): the
in-process server is ready once cheroot has bound its socket; the subprocess once it has
printed its URL, which it does after binding.
"""

from __future__ import annotations

import base64
import http.client
import os
import random
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from oxidav.authz.authn import accounts
from oxidav.bootstrap import prepare_storage
from oxidav.server import build_server
from oxidav.services import Services
from oxidav.settings import Settings

USERS = {"alice": "secret", "bob": "secret"}


@dataclass
class Response:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode("utf-8")


@dataclass
class LiveServer:
    base_url: str  # http://127.0.0.1:PORT
    settings: Settings
    services: Services | None = None
    users: dict[str, str] = field(default_factory=lambda: dict(USERS))

    @property
    def port(self) -> int:
        return int(urlsplit(self.base_url).port or 0)

    def request(
        self,
        method: str,
        path: str,
        body: bytes | str | None = None,
        headers: Mapping[str, str] | None = None,
        user: str | None = "alice",
        password: str | None = None,
    ) -> Response:
        """One request on a fresh connection; ``user=None`` sends no credentials."""
        all_headers = dict(headers or {})
        if user is not None:
            secret = password if password is not None else self.users[user]
            token = base64.b64encode(f"{user}:{secret}".encode()).decode()
            all_headers.setdefault("Authorization", f"Basic {token}")
        if isinstance(body, str):
            body = body.encode("utf-8")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        try:
            conn.request(method, path, body=body, headers=all_headers)
            resp = conn.getresponse()
            return Response(resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read())
        finally:
            conn.close()


def make_settings(data_dir: Path, db_url: str, **overrides: object) -> Settings:
    return Settings(data_dir=data_dir, database_url=db_url, port=0, threads=16).replace(**overrides)


@contextmanager
def in_process_server(settings: Settings, users: Mapping[str, str] = USERS) -> Iterator[LiveServer]:
    """Prepare storage, create ``users``, and serve the app in a background thread, assembled
    as ``oxidav serve`` assembles it (``build_server``)."""
    services = Services.open(settings)
    prepare_storage(settings, services.db)
    for name, password in users.items():
        accounts.create_user(services.db, name, password, email=f"{name}@example.org")
    server = build_server(settings.replace(host="127.0.0.1", port=0), services)
    server.prepare()
    thread = threading.Thread(target=server.serve, daemon=True)
    thread.start()
    try:
        port = server.bind_addr[1]
        yield LiveServer(f"http://127.0.0.1:{port}", settings, services, dict(users))
    finally:
        server.stop()
        thread.join(timeout=10)
        services.close()


@dataclass
class ServerProcess:
    process: subprocess.Popen[str]
    base_url: str
    first_lines: list[str]

    def stop(self) -> int:
        self.process.terminate()
        try:
            return self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def start_server_process(
    args: list[str],
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    init: bool = True,
    stderr: Path | None = None,
) -> ServerProcess:
    """Start ``oxidav serve ARGS`` and return once it printed its URL (it has bound by then).
    ``init``: pass ``--init`` (a test's data dir is a new installation); ``stderr``: a file
    for the server's log (else it is discarded)."""
    full_env = {**os.environ, **(env or {})}
    log = stderr.open("w") if stderr is not None else None
    process = subprocess.Popen(
        [sys.executable, "-m", "oxidav.cli", "serve", *args, *(["--init"] if init else [])],
        stdout=subprocess.PIPE,
        stderr=log if log is not None else subprocess.DEVNULL,
        text=True,
        env=full_env,
        cwd=cwd,
    )
    if log is not None:
        log.close()  # the child holds its own descriptor
    assert process.stdout is not None
    lines: list[str] = []
    for line in process.stdout:
        lines.append(line.rstrip("\n"))
        match = re.search(r"listening on (https?://[^/]+)/", line)
        if match:
            return ServerProcess(process, match.group(1), lines)
    process.wait()
    raise RuntimeError(f"oxidav serve exited with {process.returncode}: {lines}")


def stable_port() -> int:
    """A free port below the ephemeral range: a process restarted on it cannot find it taken by
    the local end of some outgoing connection (to PostgreSQL, say), as a port of that range can."""
    low = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    for candidate in random.Random().sample(range(10_000, min(low, 32_000)), 200):
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", candidate))
            except OSError:
                continue
            return candidate
    raise RuntimeError("no free port below the ephemeral range")


def until(condition: Callable[[], bool], seconds: float, what: str) -> None:
    """Poll ``condition`` until it holds; fail naming ``what`` after ``seconds`` (a deadline
    for something that happens in another process, not a timing assertion)."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {seconds}s: {what}")
        time.sleep(0.02)
