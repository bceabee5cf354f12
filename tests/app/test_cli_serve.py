"""`oxidav` as a user runs it: user commands, `serve` on an empty data dir, clean stop."""

from __future__ import annotations

import base64
import http.client
import re
import signal
import subprocess
import sys
from pathlib import Path

from sqlalchemy import text

from oxidav.db import Database
from tests.support.live import start_server_process


def oxidav(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oxidav.cli", *args],
        capture_output=True,
        text=True,
        input=stdin,
        timeout=120,
    )


def propfind(port: int, user: str, password: str) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    conn.request(
        "PROPFIND", "/remote.php/dav/", headers={"Depth": "0", "Authorization": f"Basic {token}"}
    )
    status = conn.getresponse().status
    conn.close()
    return status


def test_empty_data_dir_creates_admin_and_serves(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = start_server_process(["--data-dir", str(data), "--port", "0"])
    try:
        assert server.process.stdout is not None
        admin_line = server.process.stdout.readline()
        match = re.search(r"created user 'admin' with password: (\S+)", admin_line)
        assert match, admin_line
        port = int(server.base_url.rsplit(":", 1)[1])
        assert propfind(port, "admin", match.group(1)) == 207
        assert propfind(port, "admin", "wrong") == 401
        assert (data / "oxidav.db").exists()
        assert (data / "blobs").is_dir()
    finally:
        assert server.stop() == 0


def test_admin_password_from_environment(tmp_path: Path) -> None:
    server = start_server_process(
        ["--data-dir", str(tmp_path), "--port", "0"], env={"OXIDAV_ADMIN_PASSWORD": "envpw"}
    )
    try:
        assert propfind(int(server.base_url.rsplit(":", 1)[1]), "admin", "envpw") == 207
    finally:
        server.process.send_signal(signal.SIGINT)
        assert server.process.wait(timeout=20) == 0


def test_user_commands_then_serve(tmp_path: Path) -> None:
    data = str(tmp_path)
    assert (
        oxidav("user", "add", "alice", "--password", "secret", "--data-dir", data).returncode == 0
    )
    created = oxidav("app-password", "create", "alice", "--label", "phone", "--data-dir", data)
    assert created.returncode == 0
    token = created.stdout.strip()
    assert (
        oxidav(
            "user", "add", "bob", "--password-stdin", "--data-dir", data, stdin="pw\n"
        ).returncode
        == 0
    )
    listing = oxidav("user", "list", "--data-dir", data)
    assert re.search(r"^alice\t.*app-passwords=1$", listing.stdout, re.M)
    assert re.search(r"^bob\t", listing.stdout, re.M)
    duplicate = oxidav("user", "add", "alice", "--password", "x", "--data-dir", data)
    assert duplicate.returncode == 2 and "already exists" in duplicate.stderr

    server = start_server_process(["--data-dir", data, "--port", "0"])
    try:
        port = int(server.base_url.rsplit(":", 1)[1])
        assert not any("created user" in line for line in server.first_lines)
        assert propfind(port, "alice", "secret") == 207
        assert propfind(port, "alice", token) == 207
        assert propfind(port, "bob", "pw") == 207
        assert propfind(port, "alice", "nope") == 401
    finally:
        assert server.stop() == 0
    assert oxidav("user", "passwd", "bob", "--password", "pw2", "--data-dir", data).returncode == 0
    assert oxidav("user", "delete", "bob", "--data-dir", data).returncode == 0
    assert "bob" not in oxidav("user", "list", "--data-dir", data).stdout


def test_invalid_setting_stops_startup_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "oxidav.toml").write_text("threads = -1\n")
    result = oxidav("serve", "--data-dir", str(tmp_path), "--port", "0")
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0
    assert "'threads'" in result.stderr


def test_serve_refuses_a_newer_schema(tmp_path: Path) -> None:
    assert oxidav("db", "upgrade", "--data-dir", str(tmp_path)).returncode == 0
    db = Database.from_url(f"sqlite:///{tmp_path / 'oxidav.db'}")
    with db.engine.begin() as conn:
        conn.execute(
            text(
                "UPDATE alembic_version SET version_num = '9999_future' "
                "WHERE version_num = (SELECT MIN(version_num) FROM alembic_version)"
            )
        )
    db.dispose()
    result = oxidav("serve", "--data-dir", str(tmp_path), "--port", "0")
    assert result.returncode == 2
    assert "9999_future" in result.stderr


def test_serve_logs_one_line_per_request(tmp_path: Path) -> None:
    log_file = tmp_path / "err.log"
    with log_file.open("w") as err:
        process = subprocess.Popen(
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
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            env={**__import__("os").environ, "OXIDAV_ADMIN_PASSWORD": "pw"},
        )
        assert process.stdout is not None
        port = int(re.search(r":(\d+)/", process.stdout.readline()).group(1))  # type: ignore[union-attr]
        assert propfind(port, "admin", "pw") == 207
        process.terminate()
        assert process.wait(timeout=20) == 0
    lines = [line for line in log_file.read_text().splitlines() if "oxidav.access" in line]
    assert len(lines) == 1
    assert re.search(r"PROPFIND /remote.php/dav/ 207 \d+\.\dms user=admin", lines[0])
