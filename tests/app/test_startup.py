"""``oxidav`` start-up as an operator meets it: each mistake is one line naming the problem and
the setting, exit code 2, no traceback; a new installation only where asked (``--init``, or the
default ``./oxidav-data``); and an installation private to its user whatever the umask.

Real processes: ``oxidav serve`` and the other commands run as an operator runs them, with a
permissive umask (022 or 002) inherited from the test.
"""

from __future__ import annotations

import base64
import http.client
import os
import signal
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.live import start_server_process


@contextmanager
def _umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _env(**settings: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OXIDAV_")}
    env.update({f"OXIDAV_{k.upper()}": v for k, v in settings.items()})
    return env


def oxidav(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oxidav.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=cwd,
        env=env if env is not None else _env(),
        stdin=subprocess.DEVNULL,
    )


def _one_line_refusal(result: subprocess.CompletedProcess[str], *words: str) -> str:
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr
    # One line about the mistake, the last (before it, at most the server's log of its start).
    lines = result.stderr.strip().splitlines()
    assert [ln for ln in lines if ln.startswith("oxidav: ")] == lines[-1:], result.stderr
    assert not any(" ERROR " in ln or " CRITICAL " in ln for ln in lines), result.stderr
    line = lines[-1]
    for word in words:
        assert word in line, (word, line)
    return line


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_missing_explicit_data_dir_is_refused_unless_init(tmp_path: Path) -> None:
    misspelt = tmp_path / "oxidva-data"
    result = oxidav("serve", "--data-dir", str(misspelt), "--port", "0")
    _one_line_refusal(result, str(misspelt), "does not exist", "--data-dir", "--init")
    assert not misspelt.exists()
    # The same through the environment, and for a command that never creates one.
    result = oxidav("user", "list", env=_env(data_dir=str(misspelt)))
    _one_line_refusal(result, "OXIDAV_DATA_DIR", "oxidav serve --init")
    assert not misspelt.exists()
    # Asked for: user add --init makes the installation, then serve takes it as it is.
    created = oxidav(
        "user", "add", "alice", "--password", "pw", "--init", "--data-dir", str(misspelt)
    )
    assert created.returncode == 0, created.stderr
    assert (misspelt / "oxidav.db").is_file()


def test_the_first_command_creates_the_default_data_dir(tmp_path: Path) -> None:
    """The README's first command, ``oxidav serve`` with nothing set, on a fresh machine."""
    with _umask(0o022):
        server = start_server_process(["--port", "0"], env=_env(), cwd=tmp_path, init=False)
    try:
        assert server.process.stdout is not None
        assert "created user 'admin'" in server.process.stdout.readline()
    finally:
        assert server.stop() == 0
    data = tmp_path / "oxidav-data"
    assert _mode(data) == 0o700
    assert _mode(data / "oxidav.db") == 0o600


def test_a_data_dir_that_cannot_be_created(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    result = oxidav("serve", "--init", "--data-dir", str(blocker / "data"), "--port", "0")
    _one_line_refusal(result, "cannot create the data dir", "not a directory", "--data-dir")
    result = oxidav("serve", "--data-dir", str(blocker), "--port", "0")
    _one_line_refusal(result, "is not a folder", "OXIDAV_DATA_DIR")


def test_the_port_in_use(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = oxidav("serve", "--data-dir", str(tmp_path), "--port", str(port))
    line = _one_line_refusal(result, "--port / OXIDAV_PORT")
    assert result.stderr.strip() == line  # told before anything else starts
    assert f"cannot listen on 127.0.0.1:{port} (address already in use)" in line


def test_postgresql_unreachable(tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    url = f"postgresql://oxidav:hunter2@127.0.0.1:{port}/oxidav"
    result = oxidav("serve", "--data-dir", str(tmp_path), "--port", "0", env=_env(database_url=url))
    line = _one_line_refusal(result, "cannot reach the database", "OXIDAV_DATABASE_URL")
    assert "hunter2" not in line  # the password is not printed
    result = oxidav("user", "list", "--data-dir", str(tmp_path), env=_env(database_url=url))
    _one_line_refusal(result, "cannot reach the database")
    bad = oxidav("serve", "--data-dir", str(tmp_path), env=_env(database_url="nosuch://x"))
    _one_line_refusal(bad, "database_url")


def test_an_sqlite_file_that_cannot_be_opened(tmp_path: Path) -> None:
    (tmp_path / "oxidav.db").mkdir()  # a folder where the database file should be
    result = oxidav("serve", "--data-dir", str(tmp_path), "--port", "0")
    _one_line_refusal(result, "cannot open the SQLite database", "OXIDAV_DATABASE_URL")


def test_a_blob_store_that_cannot_be_used(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    store = (blocker / "blobs").as_uri()
    result = oxidav("serve", "--data-dir", str(tmp_path), "--port", "0", env=_env(blob_store=store))
    _one_line_refusal(result, "the blob store", "OXIDAV_BLOB_STORE")
    with socket.socket() as closed:  # an S3 endpoint nobody listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    s3 = f"s3://bucket/p?endpoint_url=http://127.0.0.1:{port}&region=us-east-1"
    env = _env(blob_store=s3) | {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s"}
    result = oxidav("serve", "--data-dir", str(tmp_path), "--port", "0", env=env)
    _one_line_refusal(result, "the blob store", "Could not connect", "OXIDAV_BLOB_STORE")


def test_a_bad_config_file(tmp_path: Path) -> None:
    (tmp_path / "oxidav.toml").write_text("port = [unclosed\n")
    _one_line_refusal(oxidav("serve", "--data-dir", str(tmp_path)), "invalid config file")
    missing = tmp_path / "nope.toml"
    result = oxidav("serve", "--data-dir", str(tmp_path), "--config", str(missing))
    _one_line_refusal(result, "does not exist")


def _put(port: int, path: str, body: bytes) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    token = base64.b64encode(b"admin:pw").decode()
    conn.request("PUT", path, body=body, headers={"Authorization": f"Basic {token}"})
    status = conn.getresponse().status
    conn.close()
    return status


@pytest.mark.parametrize("umask", [0o022, 0o002])
def test_a_new_installation_is_private_whatever_the_umask(tmp_path: Path, umask: int) -> None:
    data = tmp_path / "data"
    log = tmp_path / "server.log"
    with _umask(umask):
        server = start_server_process(
            ["--data-dir", str(data), "--port", "0"],
            env=_env(admin_password="pw", blob_inline_max="0"),
            stderr=log,
        )
    try:
        port = int(server.base_url.rsplit(":", 1)[1])
        assert _put(port, "/remote.php/dav/files/admin/secret.txt", b"x" * 100_000) == 201
        db = data / "oxidav.db"
        for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
            assert _mode(path) == 0o600, path
        blob_files = [p for p in (data / "blobs").rglob("*") if p.is_file()]
        assert blob_files
        assert {_mode(p) for p in blob_files} == {0o600}
        folders = [data, data / "blobs", *(p for p in (data / "blobs").rglob("*") if p.is_dir())]
        assert {_mode(p) for p in folders} == {0o700}
    finally:
        server.process.send_signal(signal.SIGTERM)
        assert server.process.wait(timeout=30) == 0
    assert "other users can read" not in log.read_text()


def test_a_command_that_creates_an_installation_makes_it_private(tmp_path: Path) -> None:
    data = tmp_path / "data"
    with _umask(0o022):
        result = oxidav("db", "upgrade", "--init", "--data-dir", str(data))
    assert result.returncode == 0, result.stderr
    assert _mode(data) == 0o700
    assert _mode(data / "oxidav.db") == 0o600
    assert _mode(data / "blobs") == 0o700


def test_a_wider_existing_installation_is_warned_about(tmp_path: Path) -> None:
    data = tmp_path / "data"
    assert oxidav("db", "upgrade", "--init", "--data-dir", str(data)).returncode == 0
    data.chmod(0o755)
    (data / "oxidav.db").chmod(0o644)
    log = tmp_path / "server.log"
    server = start_server_process(["--data-dir", str(data), "--port", "0"], env=_env(), stderr=log)
    assert server.stop() == 0
    warnings = [
        line
        for line in log.read_text().splitlines()
        if "warning" in line.lower() and "other users" in line
    ]
    assert len(warnings) == 1, warnings
    assert f"{data} (0755)" in warnings[0] and f"{data / 'oxidav.db'} (0644)" in warnings[0]
    assert f"chmod -R go-rwx {data}" in warnings[0]
    # It is left as the operator set it: the warning says what to run.
    assert _mode(data) == 0o755
