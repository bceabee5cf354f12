"""``oxidav serve --workers N``: pre-forked processes on one socket, on SQLite and PostgreSQL.

Real processes. Which worker serves a connection is found from the kernel (``/proc``: the
worker holding the server end of the connection's socket), so each test makes sure both
workers took part instead of hoping they did. What one worker does is seen by the other on
the next request: a lock, a changed password, failed logins, the metrics.
"""

from __future__ import annotations

import base64
import http.client
import os
import re
import signal
import ssl
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.support.cli import run_oxidav
from tests.support.live import ServerProcess, start_server_process, until
from tests.support.tls import self_signed

PASSWORD = "workers-pw"
FILES = "/remote.php/dav/files/admin/"


def _auth(password: str = PASSWORD) -> str:
    return "Basic " + base64.b64encode(f"admin:{password}".encode()).decode()


def _env(tmp_path: Path, db_url: str) -> dict[str, str]:
    env = {
        "OXIDAV_ADMIN_PASSWORD": PASSWORD,
        "OXIDAV_DATA_DIR": str(tmp_path / "data"),
        "OXIDAV_SWEEP_INTERVAL_SECONDS": "0",
        "OXIDAV_AUTH_MAX_FAILURES": "4",
        "TMPDIR": str(tmp_path / "tmp"),
    }
    (tmp_path / "tmp").mkdir(exist_ok=True)
    if not db_url.startswith("sqlite"):
        env["OXIDAV_DATABASE_URL"] = db_url
    return env


@pytest.fixture
def served(tmp_path: Path, db_url: str) -> Iterator[tuple[ServerProcess, dict[str, str]]]:
    env = _env(tmp_path, db_url)
    server = start_server_process(
        ["--port", "0", "--workers", "2"], env=env, stderr=tmp_path / "server.log"
    )
    try:
        until(lambda: len(_workers(server)) == 2, 30, "two workers")
        yield server, {**os.environ, **env}
    finally:
        server.stop()


def _workers(server: ServerProcess) -> list[int]:
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children")
    return [int(pid) for pid in children.read_text().split()]


def _port(server: ServerProcess) -> int:
    return int(server.base_url.rsplit(":", 1)[1])


def _socket_inodes(pid: int) -> set[str]:
    found = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(target[8:-1])
    return found


def _server_end_inode(server_port: int, client_port: int) -> str:
    """The inode of the server's end of the connection from ``client_port`` (/proc/net/tcp)."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            local, remote = fields[1], fields[2]
            if (
                int(local.rsplit(":", 1)[1], 16) == server_port
                and int(remote.rsplit(":", 1)[1], 16) == client_port
            ):
                return fields[9]
    raise AssertionError(f"no connection from port {client_port}")


class Connection:
    """A kept-alive connection and the worker that accepted it (``tls``: over HTTPS)."""

    def __init__(self, server: ServerProcess, tls: ssl.SSLContext | None = None) -> None:
        self.port = _port(server)
        self.http = (
            http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
            if tls is None
            else http.client.HTTPSConnection("127.0.0.1", self.port, timeout=30, context=tls)
        )
        self.http.connect()
        assert self.http.sock is not None
        client_port = self.http.sock.getsockname()[1]
        self.request("OPTIONS", FILES)  # accepted (and served) by now
        self.inode = _server_end_inode(self.port, client_port)
        owners = [pid for pid in _workers(server) if self.inode in _socket_inodes(pid)]
        assert len(owners) == 1, owners
        self.worker = owners[0]

    def request(
        self, method: str, path: str, body: bytes | None = None, **headers: str
    ) -> tuple[int, bytes, http.client.HTTPResponse]:
        headers.setdefault("Authorization", _auth())
        self.http.request(method, path, body=body, headers=headers)
        response = self.http.getresponse()
        return response.status, response.read(), response


def _one_per_worker(server: ServerProcess) -> tuple[Connection, Connection]:
    """Two connections served by different workers (new ones until the kernel spread them)."""
    first = Connection(server)
    for _ in range(200):
        other = Connection(server)
        if other.worker != first.worker:
            return first, other
        other.http.close()
    raise AssertionError("every connection went to one worker")


def _check_spread(server: ServerProcess, tls: ssl.SSLContext | None = None) -> None:
    opened = [Connection(server, tls) for _ in range(8)]
    per_worker = Counter(conn.worker for conn in opened)
    assert sorted(per_worker.values()) == [4, 4], per_worker
    emptied = opened[0].worker
    closing = [conn for conn in opened if conn.worker == emptied]
    for conn in closing:
        conn.http.close()
    until(
        lambda: not any(conn.inode in _socket_inodes(emptied) for conn in closing),
        30,
        "the closed connections to end in their worker",
    )
    again = [Connection(server, tls) for _ in range(4)]
    assert [conn.worker for conn in again] == [emptied] * 4


def test_new_connections_go_to_the_worker_holding_fewer(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    """Connections opened one after another alternate between the workers (each accepted and
    served before the next), and once one worker's connections close, the next ones go to it
    (``oxidav.connection_shares``). Without the shared counts each connection went to
    whichever worker won the race for ``accept``."""
    _check_spread(served[0])


def test_tls_connections_are_counted_from_the_handshake_to_the_close(
    tmp_path: Path, db_url: str
) -> None:
    """The same over HTTPS: a connection is counted from its accept, through the handshake
    the front does, to its close."""
    cert = self_signed(tmp_path / "tls")
    env = {
        **_env(tmp_path, db_url),
        "OXIDAV_TLS_CERT": str(cert.cert),
        "OXIDAV_TLS_KEY": str(cert.key),
    }
    server = start_server_process(
        ["--port", "0", "--workers", "2"], env=env, stderr=tmp_path / "server.log"
    )
    try:
        until(lambda: len(_workers(server)) == 2, 30, "two workers")
        _check_spread(server, ssl.create_default_context(cafile=str(cert.cert)))
    finally:
        server.stop()


def test_both_workers_serve_one_socket_and_a_lock_holds_across_them(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    server, _env = served
    a, b = _one_per_worker(server)
    assert a.request("PUT", FILES + "shared.txt", b"v1")[0] == 201
    lock_body = (
        b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
        b"</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>"
    )
    status, _body, response = a.request(
        "LOCK", FILES + "shared.txt", lock_body, Timeout="Second-600"
    )
    assert status == 200
    token = response.getheader("Lock-Token")
    assert token
    assert b.request("PUT", FILES + "shared.txt", b"v2")[0] == 423
    assert b.request("PUT", FILES + "shared.txt", b"v2", If=f"({token})")[0] == 204
    assert a.request("GET", FILES + "shared.txt")[1] == b"v2"


def test_a_changed_password_and_failed_logins_count_in_every_worker(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    server, env = served
    a, b = _one_per_worker(server)
    assert a.request("PROPFIND", FILES, Depth="0")[0] == 207
    assert b.request("PROPFIND", FILES, Depth="0")[0] == 207  # both have it cached now
    changed = run_oxidav(env, "user", "passwd", "admin", "--password", "changed-pw")
    assert changed.returncode == 0, changed.stderr
    assert a.request("PROPFIND", FILES, Depth="0")[0] == 401
    assert b.request("PROPFIND", FILES, Depth="0")[0] == 401
    assert b.request("PROPFIND", FILES, Depth="0", Authorization=_auth("changed-pw"))[0] == 207
    # auth_max_failures is 4: two failures in each worker, then both refuse the pair.
    for conn in (a, b, a, b):
        conn.request("PROPFIND", FILES, Depth="0", Authorization=_auth("wrong"))
    assert a.request("PROPFIND", FILES, Depth="0", Authorization=_auth("wrong"))[0] == 429
    assert b.request("PROPFIND", FILES, Depth="0", Authorization=_auth("wrong"))[0] == 429


def test_writes_from_both_workers_at_once_all_land(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    server, _env = served
    a, b = _one_per_worker(server)
    assert a.request("MKCOL", FILES + "many")[0] == 201

    def put_all(worker_index: int) -> list[int]:
        conn = (a, b)[worker_index]
        return [
            conn.request("PUT", f"{FILES}many/w{worker_index}-{n}.txt", f"{n}".encode())[0]
            for n in range(60)
        ]

    with ThreadPoolExecutor(2) as pool:
        statuses = [s for batch in pool.map(put_all, (0, 1)) for s in batch]
    assert statuses == [201] * 120
    status, body, _response = b.request("PROPFIND", FILES + "many/", Depth="1")
    assert status == 207
    assert len(re.findall(rb"<d:href>[^<]*\.txt</d:href>", body, re.IGNORECASE)) == 120


def test_the_metrics_are_the_sum_of_every_worker(
    served: tuple[ServerProcess, dict[str, str]],
) -> None:
    server, _env = served
    a, b = _one_per_worker(server)
    for conn in (a, b):
        for _ in range(5):
            assert conn.request("PROPFIND", FILES, Depth="0")[0] == 207
    for conn in (a, b):

        def answered(conn: Connection = conn) -> float:
            text = conn.request("GET", "/metrics", Authorization="")[1].decode()
            found = re.search(r'_requests_total\{method="PROPFIND",status="207"\} (\S+)', text)
            assert found is not None, text[:2000]
            return float(found.group(1))

        # Each worker answered five; a request counts once its answer is out, so the other
        # worker's last one may be counted a moment after its answer arrived.
        until(lambda answered=answered: answered() == 10, 10, "ten PROPFINDs counted")


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_worker_that_dies_is_replaced_and_sigterm_stops_them_all(
    served: tuple[ServerProcess, dict[str, str]], tmp_path: Path
) -> None:
    server, _env = served
    before = _workers(server)
    os.kill(before[0], signal.SIGKILL)
    until(
        lambda: len(_workers(server)) == 2 and before[0] not in _workers(server),
        30,
        "a new worker in the dead one's place",
    )
    after = _workers(server)
    for _ in range(10):  # the new worker serves too: connections keep being answered
        conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=30)
        conn.request("GET", "/status.php")
        assert conn.getresponse().status == 200
        conn.close()
    log = (tmp_path / "server.log").read_text()
    assert re.search(rf"worker \d \(pid {before[0]}\) was killed by SIGKILL; starting another", log)
    metrics_dirs = list((tmp_path / "tmp").glob("oxidav-metrics-*"))
    assert len(metrics_dirs) == 1 and any(metrics_dirs[0].iterdir())
    server.process.send_signal(signal.SIGTERM)
    assert server.process.wait(timeout=60) == 0
    for pid in after:
        assert not Path(f"/proc/{pid}").exists() or "zombie" in _state(pid)
    assert not metrics_dirs[0].exists()  # the shared metrics' folder went with the supervisor


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "zombie"


def test_one_worker_runs_without_a_supervisor(tmp_path: Path) -> None:
    env = _env(tmp_path, "sqlite")
    server = start_server_process(["--port", "0", "--workers", "1"], env=env)
    try:
        assert _workers(server) == []
        conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=30)
        conn.request("GET", "/status.php")
        assert conn.getresponse().status == 200
    finally:
        assert server.stop() == 0


def test_a_bad_workers_setting_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "oxidav.cli", "serve", "--workers", "-1"],
        env={**os.environ, **_env(tmp_path, "sqlite")},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "workers" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_killed_supervisor_takes_its_workers_along(tmp_path: Path) -> None:
    env = _env(tmp_path, "sqlite")
    server = start_server_process(["--port", "0", "--workers", "2"], env=env)
    until(lambda: len(_workers(server)) == 2, 30, "two workers")
    workers = _workers(server)
    server.process.kill()
    server.process.wait()
    until(
        lambda: all(not Path(f"/proc/{pid}").exists() for pid in workers),
        30,
        "the workers gone with their supervisor",
    )
    with pytest.raises(ConnectionRefusedError):  # nobody holds the socket any more
        http.client.HTTPConnection("127.0.0.1", _port(server), timeout=5).connect()


@pytest.mark.pg
@pytest.mark.parametrize("db_url", ["pg"], indirect=True)
def test_more_workers_than_postgresql_takes_connections_is_told(
    tmp_path: Path, db_url: str
) -> None:
    """Each worker's pool may grow to 20 connections: one worker more than the server's
    max_connections allows for is told, in one line naming the setting."""
    from oxidav.db import Database

    database = Database.from_url(db_url)
    with database.engine.connect() as connection:
        limit = int(connection.exec_driver_sql("SHOW max_connections").scalar_one())
    database.dispose()
    workers = limit // 20 + 1
    env = _env(tmp_path, db_url)
    server = start_server_process(
        ["--port", "0", "--workers", str(workers), "--threads", "2"],
        env=env,
        stderr=tmp_path / "server.log",
    )
    try:
        until(lambda: len(_workers(server)) == workers, 60, f"{workers} workers")
    finally:
        assert server.stop() == 0
    warning = [
        line
        for line in (tmp_path / "server.log").read_text().splitlines()
        if "max_connections" in line
    ]
    assert len(warning) == 1
    assert f"{workers} workers may open up to {workers * 20} PostgreSQL connections" in warning[0]
    assert "OXIDAV_WORKERS" in warning[0]


@pytest.mark.pg
@pytest.mark.parametrize("db_url", ["pg"], indirect=True)
def test_workers_within_what_postgresql_takes_start_without_a_warning(
    tmp_path: Path, db_url: str
) -> None:
    server = start_server_process(
        ["--port", "0", "--workers", "2"], env=_env(tmp_path, db_url), stderr=tmp_path / "s.log"
    )
    assert server.stop() == 0
    assert "max_connections" not in (tmp_path / "s.log").read_text()
