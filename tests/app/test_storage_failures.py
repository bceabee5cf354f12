"""Storage failures over real HTTP: a full blob filesystem and a full SQLite filesystem answer
507 and keep the previous version, reads go on, writes work again once there is room; a
dropped PostgreSQL connection answers 503 with Retry-After and the next request succeeds.

The full filesystems are real tmpfs mounts (root only; skipped with the reason otherwise).
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg2
import pytest
from sqlalchemy import create_engine, text

from oxidav.db import engine as db_engine
from oxidav.storage_failures import storage_failure
from tests.support.live import LiveServer, in_process_server, make_settings

FILES = "/remote.php/dav/files/alice/"
SMALL_CHUNKS = {"blob_chunk_min": 4096, "blob_chunk_avg": 16384, "blob_chunk_max": 65536}


@contextmanager
def tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)], capture_output=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def grow(path: Path, size: str) -> None:
    subprocess.run(["mount", "-o", f"remount,size={size}", str(path)], check=True)


def fsck_deep(server: LiveServer) -> subprocess.CompletedProcess[str]:
    settings = server.settings
    env = {
        "OXIDAV_DATA_DIR": str(settings.data_dir),
        "OXIDAV_DATABASE_URL": settings.resolved_database_url,
        "OXIDAV_BLOB_STORE": settings.resolved_blob_store,
        "PATH": "/usr/bin:/bin",
    }
    return subprocess.run(
        [sys.executable, "-m", "oxidav.cli", "blobs", "fsck", "--deep"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def bulk_body(files: dict[str, bytes], boundary: str = "b0undary") -> bytes:
    import hashlib

    out = b""
    for path, body in files.items():
        out += (
            (
                f"--{boundary}\r\nX-File-Path: {path}\r\n"
                f"X-File-MD5: {hashlib.md5(body).hexdigest()}\r\n"
                f"X-File-Mtime: 1700000000\r\nContent-Length: {len(body)}\r\n\r\n"
            ).encode()
            + body
            + b"\r\n"
        )
    return out + f"--{boundary}--\r\n".encode()


def test_a_full_blob_filesystem_answers_507_and_keeps_the_old_version(
    db_url: str, tmp_path: Path
) -> None:
    rng = random.Random(507)
    old = rng.randbytes(100_000)
    with tmpfs(tmp_path / "blobfs", "1m") as blobs:
        settings = make_settings(
            tmp_path / "d", db_url, blob_store=blobs.as_uri(), blob_inline_max=0, **SMALL_CHUNKS
        )
        with in_process_server(settings) as server:
            assert server.request("PUT", FILES + "f.bin", old).status == 201
            big = rng.randbytes(3 << 20)

            bulk = server.request(
                "POST",
                "/remote.php/dav/bulk",
                bulk_body({"/bulk-small.txt": b"fits", "/bulk-big.bin": big}),
                headers={"Content-Type": "multipart/related; boundary=b0undary"},
            )
            assert bulk.status == 200, bulk.body
            answers = json.loads(bulk.body)
            assert answers["/bulk-big.bin"]["error"] is True
            assert "507" in answers["/bulk-big.bin"]["message"]
            assert answers["/bulk-small.txt"]["error"] is False
            assert server.request("GET", FILES + "bulk-big.bin").status == 404

            replaced = server.request("PUT", FILES + "f.bin", big)
            assert replaced.status == 507, replaced.body
            assert b"Errno" not in replaced.body and b"No space" not in replaced.body
            assert server.request("GET", FILES + "f.bin").body == old

            created = server.request("PUT", FILES + "new.bin", big)
            assert created.status == 507
            assert server.request("GET", FILES + "new.bin").status == 404
            listing = server.request("PROPFIND", FILES, headers={"Depth": "1"})
            assert listing.status == 207 and b"new.bin" not in listing.body

            grow(blobs, "16m")  # an operator frees space: writes work again
            assert server.request("PUT", FILES + "f.bin", big).status == 204
            assert server.request("GET", FILES + "f.bin").body == big
        fsck = fsck_deep(server)
        assert fsck.returncode == 0, fsck.stdout + fsck.stderr
        assert fsck.stdout.strip().endswith("clean")


def test_a_full_database_filesystem_answers_507_and_reads_go_on(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "datafs", "2m") as data:
        settings = make_settings(data, "", blob_store=(tmp_path / "blobs").as_uri())
        with in_process_server(settings) as server:
            statuses: list[int] = []
            for i in range(600):  # 8 KiB contents live in their database rows
                body = random.Random(i).randbytes(8192)
                status = server.request("PUT", FILES + f"n{i}.bin", body).status
                statuses.append(status)
                if status == 507:
                    break
            assert statuses[-1] == 507, statuses[-5:]
            assert set(statuses[:-1]) == {201}
            full_at = len(statuses) - 1
            assert server.request("GET", FILES + f"n{full_at}.bin").status == 404
            assert server.request("GET", FILES + "n0.bin").body == random.Random(0).randbytes(8192)
            grow(data, "32m")
            body = random.Random(full_at).randbytes(8192)
            assert server.request("PUT", FILES + f"n{full_at}.bin", body).status == 201
            assert server.request("GET", FILES + f"n{full_at}.bin").body == body


@pytest.fixture
def pg_url(db_url: str) -> str:
    if not db_url.startswith("postgresql"):
        pytest.skip("a PostgreSQL connection is the subject")
    return db_url


def test_a_dropped_postgresql_connection_is_503_then_the_next_request_succeeds(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pooled connections are used without the idle ping, so the dropped one is found in use.
    monkeypatch.setattr(db_engine, "PING_AFTER_IDLE_SECONDS", 3600.0)
    settings = make_settings(tmp_path / "d", pg_url, threads=2)
    name = pg_url.rsplit("/", 1)[1]
    admin = create_engine(pg_url.rsplit("/", 1)[0] + "/postgres", isolation_level="AUTOCOMMIT")
    with in_process_server(settings) as server:
        assert server.request("PUT", FILES + "a.txt", b"hello").status == 201
        for _ in range(3):
            assert server.request("GET", FILES + "a.txt").status == 200
        with admin.connect() as conn:
            killed = conn.execute(
                text(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                    "WHERE datname = :name AND pid <> pg_backend_pid()"
                ),
                {"name": name},
            ).scalar_one()
        assert killed >= 1
        answers = [server.request("PROPFIND", FILES, headers={"Depth": "1"}) for _ in range(6)]
        failed = [a for a in answers if a.status != 207]
        assert failed, "a dropped connection went unnoticed"
        assert {a.status for a in failed} == {503}
        assert all(a.headers.get("retry-after") for a in failed)
        assert all(b"request id" in a.body and b"psycopg2" not in a.body for a in failed)
        assert answers[-1].status == 207  # the pool replaced the dead connections
        assert server.request("PUT", FILES + "b.txt", b"again").status == 201
    admin.dispose()


def test_an_unreachable_postgresql_is_a_503_failure() -> None:
    with pytest.raises(psycopg2.OperationalError) as caught:
        psycopg2.connect(f"postgresql://postgres@127.0.0.1:1/{uuid.uuid4().hex}", connect_timeout=2)
    failure = storage_failure(caught.value)
    assert failure is not None and failure.status == 503 and failure.headers


def test_file_limits_and_quotas_are_full_storage() -> None:
    import errno

    for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        try:
            try:
                raise OSError(code, "write failed")
            except OSError as exc:
                raise RuntimeError("ingest failed") from exc
        except RuntimeError as wrapped:
            failure = storage_failure(wrapped)
        assert failure is not None and failure.status == 507 and not failure.headers


def test_other_errors_are_not_storage_failures() -> None:
    assert storage_failure(ValueError("bug")) is None
    assert storage_failure(PermissionError(13, "denied")) is None
