"""``oxidav backup`` while a real server keeps writing, and ``oxidav restore`` into a new
installation: every file, calendar object and card acknowledged before the backup began comes
back exactly, ``blobs fsck --deep`` is clean — on SQLite and PostgreSQL (pg_dump / pg_restore).
"""

from __future__ import annotations

import http.client
import os
import random
import shutil
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text

from oxidav.backup.manifest import MANIFEST_FILE
from tests.support.cli import run_oxidav
from tests.support.live import ServerProcess, start_server_process

AUTH = {"Authorization": "Basic YWxpY2U6c2VjcmV0"}  # alice:secret
#: Small chunks: larger files are several stored chunks; small ones stay in their rows.
CHUNKS = {
    "OXIDAV_BLOB_CHUNK_MIN": "4096",
    "OXIDAV_BLOB_CHUNK_AVG": "16384",
    "OXIDAV_BLOB_CHUNK_MAX": "65536",
}
FILES = "/remote.php/dav/files/alice/"
CALENDAR = "/remote.php/dav/calendars/alice/personal/"
BOOK = "/remote.php/dav/addressbooks/users/alice/contacts/"
PG_ADMIN = os.environ.get(
    "OXIDAV_TEST_PG", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)


def oxidav(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_oxidav(env, *args, timeout=300)


def request(
    server: ServerProcess,
    method: str,
    path: str,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, bytes]:
    port = int(server.base_url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers={**AUTH, **(headers or {})})
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def installation(db_url: str, data: Path) -> dict[str, str]:
    env = {
        **os.environ,
        **CHUNKS,
        "OXIDAV_DATABASE_URL": db_url,
        "OXIDAV_DATA_DIR": str(data),
        "OXIDAV_SWEEP_INTERVAL_SECONDS": "0",
    }
    env.pop("OXIDAV_BLOB_STORE", None)
    return env


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    result = installation(db_url, tmp_path / "d")
    added = oxidav(result, "user", "add", "alice", "--password", "secret", "--init")
    assert added.returncode == 0, added.stderr
    return result


@pytest.fixture
def target(db_url: str, tmp_path: Path) -> Iterator[dict[str, str]]:
    """A new installation to restore into: a new data dir, and on PostgreSQL a new database."""
    if not db_url.startswith("postgresql"):
        yield installation("", tmp_path / "restored")
        return
    if shutil.which("pg_dump") is None or shutil.which("pg_restore") is None:
        pytest.skip("pg_dump / pg_restore are not installed")
    name = f"oxidav_restore_{uuid.uuid4().hex[:12]}"
    admin = create_engine(PG_ADMIN, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield installation(PG_ADMIN.rsplit("/", 1)[0] + "/" + name, tmp_path / "restored")
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def event(uid: str) -> bytes:
    return (
        "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\n"
        f"UID:{uid}\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20260105T100000Z\r\n"
        f"DURATION:PT1H\r\nSUMMARY:Event {uid}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
    ).encode()


def card(uid: str) -> bytes:
    return (
        f"BEGIN:VCARD\r\nVERSION:3.0\r\nUID:{uid}\r\nFN:Person {uid}\r\n"
        f"EMAIL:{uid}@example.org\r\nEND:VCARD\r\n"
    ).encode()


def seed(server: ServerProcess) -> dict[str, bytes]:
    """Files (inline and multi-chunk, nested, Unicode names), events and cards; returns each
    path with the bytes the server answers for it."""
    rng = random.Random(26)
    assert request(server, "MKCOL", FILES + "Ordner%20%C3%A4")[0] == 201
    paths = [FILES + f"small-{i}.txt" for i in range(5)]
    paths += [FILES + f"Ordner%20%C3%A4/gro%C3%9F-{i}.bin" for i in range(4)]
    for i, path in enumerate(paths):
        body = rng.randbytes(100 + i if "small" in path else 150_000 + 9_000 * i)
        assert request(server, "PUT", path, body)[0] == 201
    assert request(server, "PUT", FILES + "empty", b"")[0] == 201
    paths.append(FILES + "empty")
    assert (
        request(server, "PROPFIND", "/remote.php/dav/calendars/alice/", None, {"Depth": "1"})[0]
        == 207
    )
    assert (
        request(
            server, "PROPFIND", "/remote.php/dav/addressbooks/users/alice/", None, {"Depth": "1"}
        )[0]
        == 207
    )
    for i in range(5):
        headers = {"Content-Type": "text/calendar"}
        assert request(server, "PUT", CALENDAR + f"e{i}.ics", event(f"e{i}"), headers)[0] == 201
        paths.append(CALENDAR + f"e{i}.ics")
        headers = {"Content-Type": "text/vcard"}
        assert request(server, "PUT", BOOK + f"c{i}.vcf", card(f"c{i}"), headers)[0] == 201
        paths.append(BOOK + f"c{i}.vcf")
    answers = {}
    for path in paths:
        status, body = request(server, "GET", path)
        assert status == 200, path
        answers[path] = body
    return answers


class Writer:
    """Keeps PUTting new files on a thread while a backup runs."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server
        self.stop = threading.Event()
        self.acknowledged: dict[str, bytes] = {}
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        while not self.stop.is_set():
            body = random.Random(n).randbytes(70_000)
            path = FILES + f"during-{n}.bin"
            if request(self.server, "PUT", path, body)[0] == 201:
                self.acknowledged[path] = body
            n += 1

    def __enter__(self) -> Writer:
        self.thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=60)


def test_backup_while_writing_then_restore_into_a_new_installation(
    env: dict[str, str], target: dict[str, str], tmp_path: Path
) -> None:
    server = start_server_process(["--port", "0"], env=env)
    try:
        before = seed(server)
        with Writer(server) as writer:
            while len(writer.acknowledged) < 3:  # the writer is under way
                threading.Event().wait(0.05)
            made = oxidav(env, "backup", str(tmp_path / "bk"))
        assert made.returncode == 0, made.stderr
        assert "backup written to" in made.stdout
        assert "Traceback" not in made.stderr
        during = dict(writer.acknowledged)
    finally:
        server.stop()

    restored = oxidav(target, "restore", str(tmp_path / "bk"))
    assert restored.returncode == 0, restored.stderr
    assert "restored the backup" in restored.stdout

    again = start_server_process(["--port", "0"], env=target)
    try:
        for path, body in before.items():
            status, got = request(again, "GET", path)
            assert (status, got) == (200, body), path
        for path, body in during.items():  # in the backup whole, or not at all
            status, got = request(again, "GET", path)
            assert (status == 404) or (status, got) == (200, body), (path, status)
        assert request(again, "PUT", FILES + "after.bin", b"x" * 90_000)[0] == 201
    finally:
        again.stop()
    fsck = oxidav(target, "blobs", "fsck", "--deep")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert fsck.stdout.strip().endswith("clean")


def test_restore_refuses_a_used_target_and_an_unfinished_backup(
    env: dict[str, str], target: dict[str, str], tmp_path: Path
) -> None:
    backup = tmp_path / "bk"
    assert oxidav(env, "backup", str(backup)).returncode == 0
    modes = {p.stat().st_mode & 0o777 for p in [backup, *backup.rglob("*")]}
    assert modes <= {0o700, 0o600}, modes  # private whatever the umask
    again = oxidav(env, "backup", str(backup))
    assert again.returncode == 2 and "already holds a finished backup" in again.stderr

    over_itself = oxidav(env, "restore", str(backup))  # the source installation exists
    assert over_itself.returncode == 2
    assert over_itself.stderr.count("\n") == 1 and "restore into a new" in over_itself.stderr

    (backup / MANIFEST_FILE).unlink()
    unfinished = oxidav(target, "restore", str(backup))
    assert unfinished.returncode == 2 and "not a finished oxidav backup" in unfinished.stderr
    assert not (tmp_path / "restored" / "oxidav.db").exists()


def test_a_corrupt_chunk_in_the_backup_is_refused(
    env: dict[str, str], target: dict[str, str], tmp_path: Path
) -> None:
    server = start_server_process(["--port", "0"], env=env)
    try:
        assert request(server, "PUT", FILES + "big.bin", random.randbytes(200_000))[0] == 201
    finally:
        server.stop()
    backup = tmp_path / "bk"
    assert oxidav(env, "backup", str(backup)).returncode == 0
    victim = next(p for p in (backup / "blobs").rglob("*") if p.is_file())
    victim.write_bytes(b"\0" + victim.read_bytes()[1:])
    refused = oxidav(target, "restore", str(backup))
    assert refused.returncode == 2 and "does not match its name" in refused.stderr
    assert not (tmp_path / "restored" / "oxidav.db").exists()
    if target["OXIDAV_DATABASE_URL"]:  # PostgreSQL: the target database is still empty
        engine = create_engine(target["OXIDAV_DATABASE_URL"])
        with engine.connect() as conn:
            tables = conn.execute(
                text("SELECT count(*) FROM pg_tables WHERE schemaname = 'public'")
            )
            assert tables.scalar_one() == 0
        engine.dispose()
