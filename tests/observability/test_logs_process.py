"""The log stream of a real ``oxidav serve`` process on a fresh data dir: no Alembic chatter,
one access line per request with its fields, JSON lines with ``log_format = json``; an admin
password the operator set is never printed."""

from __future__ import annotations

import base64
import http.client
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PASSWORD = "operator-chosen-pw-1"


@contextmanager
def serve(tmp_path: Path, **env: str) -> Iterator[tuple[int, list[str], Path]]:
    """``oxidav serve`` on a fresh data dir; yields (port, stdout lines so far, stderr file)."""
    stderr, data = tmp_path / "stderr.log", tmp_path / "d"
    full_env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("OXIDAV_")},
        "OXIDAV_ADMIN_PASSWORD": PASSWORD,
        **env,
    }
    with stderr.open("w") as err:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "oxidav.cli",
                "serve",
                "--init",
                "--port",
                "0",
                "--data-dir",
                str(data),
            ],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env=full_env,
        )
    assert process.stdout is not None
    lines: list[str] = []
    port = 0
    try:
        for line in process.stdout:
            lines.append(line)
            match = re.search(r"listening on http://[^:]+:(\d+)/", line)
            if match:
                port = int(match.group(1))
                break
        assert port, (lines, stderr.read_text())
        yield port, lines, stderr
    finally:
        process.terminate()
        lines.append(process.stdout.read())  # what the line iterator buffered, too
        process.wait(timeout=30)


def request(port: int, method: str, path: str, body: bytes | None = None) -> tuple[int, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    token = base64.b64encode(f"admin:{PASSWORD}".encode()).decode()
    conn.request(method, path, body=body, headers={"Authorization": f"Basic {token}"})
    resp = conn.getresponse()
    resp.read()
    conn.close()
    return resp.status, resp.getheader("X-Request-ID") or ""


def test_first_start_text_log(tmp_path: Path) -> None:
    with serve(tmp_path) as (port, stdout, stderr):
        status, request_id = request(port, "PUT", "/remote.php/dav/files/admin/a.txt", b"hello")
        assert status == 201 and request_id
    log = stderr.read_text()
    assert "alembic" not in log.lower(), log
    assert PASSWORD not in "".join(stdout) + log
    [line] = [line for line in log.splitlines() if "oxidav.access" in line]
    message = line.split("]: ", 1)[1]
    fields = message.split(" ")
    assert fields[:3] == ["PUT", "/remote.php/dav/files/admin/a.txt", "201"]
    assert fields[3].endswith("ms")
    assert fields[4:] == ["user=admin", "addr=127.0.0.1", "bytes=0", "in=5", f"id={request_id}"]
    assert f"[{request_id}]" in line


def test_json_log_lines(tmp_path: Path) -> None:
    with serve(tmp_path, OXIDAV_LOG_FORMAT="json", OXIDAV_THREDS="4") as (port, _stdout, stderr):
        _status, put_id = request(port, "PUT", "/remote.php/dav/files/admin/b.txt", b"12345678")
        _status, get_id = request(port, "GET", "/remote.php/dav/files/admin/b.txt")
    records = [json.loads(line) for line in stderr.read_text().splitlines() if line.strip()]
    assert records, "no log records"
    assert all({"time", "level", "logger", "message", "request_id"} <= set(r) for r in records)
    assert not any(r["logger"].startswith("alembic") for r in records)
    access = [r for r in records if r["logger"] == "oxidav.access"]
    by_id = {r["request_id"]: r for r in access}
    put, get = by_id[put_id], by_id[get_id]
    assert (put["method"], put["status"], put["bytes_in"], put["user"]) == (
        "PUT",
        "201",
        8,
        "admin",
    )
    assert (get["method"], get["status"], get["bytes_out"], get["addr"]) == (
        "GET",
        "200",
        8,
        "127.0.0.1",
    )
    assert put["path"] == "/remote.php/dav/files/admin/b.txt"
    assert isinstance(get["duration_ms"], float)
    assert any(r["message"] == "stopped" for r in records)
    [warning] = [r for r in records if r["logger"] == "oxidav.settings"]
    assert warning["level"] == "WARNING"
    assert warning["message"] == (
        "unknown environment variable OXIDAV_THREDS is ignored; did you mean OXIDAV_THREADS?"
    )


def test_debug_level_lets_libraries_speak(tmp_path: Path) -> None:
    with serve(tmp_path, OXIDAV_LOG_LEVEL="DEBUG") as (port, _stdout, stderr):
        assert request(port, "GET", "/healthz")[0] == 200
    assert "alembic" in stderr.read_text()
