"""``blobs migrate`` and ``blobs gc`` beside a real ``oxidav serve`` process, over real HTTP.

Migrate: files are uploaded before, during and after the (refused) finishing pass while the
server runs; after the server is stopped the same command finishes, the server starts on the
new store, every acknowledged file answers its exact bytes and ``fsck --deep`` is clean — on
SQLite and PostgreSQL, local → local and local → S3 (moto). Interrupted runs (SIGINT, SIGKILL)
resume. Gc and fsck --deep run while the server uploads content identical to the garbage gc
collects.
"""

from __future__ import annotations

import http.client
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import update

from oxidav.blobs import BlobChain
from oxidav.blobs.migrate import STATE_FILE
from oxidav.db import Database, utcnow
from oxidav.db.models.blobs import BlobChunk, BlobManifest
from oxidav.settings import load_settings
from tests.support.blobs import pieces
from tests.support.cli import run_oxidav
from tests.support.live import ServerProcess, start_server_process

AUTH = {"Authorization": "Basic YWxpY2U6c2VjcmV0"}  # alice:secret
#: Small chunks and no inline content: every file is several chunks in the store.
CHUNKS = {
    "OXIDAV_BLOB_CHUNK_MIN": "4096",
    "OXIDAV_BLOB_CHUNK_AVG": "16384",
    "OXIDAV_BLOB_CHUNK_MAX": "65536",
    "OXIDAV_BLOB_INLINE_MAX": "0",
}


def oxidav(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_oxidav(env, *args, timeout=300)


def request(
    server: ServerProcess, method: str, path: str, body: bytes | None = None
) -> tuple[int, bytes]:
    port = int(server.base_url.rsplit(":", 1)[1])
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=AUTH)
        response = conn.getresponse()
        return response.status, response.read()
    finally:
        conn.close()


def content(seed: int, size: int | None = None) -> bytes:
    rng = random.Random(seed)
    return rng.randbytes(size if size is not None else rng.randrange(10_000, 80_000))


@dataclass
class Uploader:
    """PUTs files on a thread until stopped; remembers what each acknowledged PUT wrote."""

    server: ServerProcess
    prefix: str
    bodies: list[bytes] | None = None  # upload these (in turn) instead of fresh content
    acknowledged: dict[str, bytes] = field(default_factory=dict)
    failures: list[tuple[str, int]] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def put(self, n: int) -> None:
        name = f"/remote.php/dav/files/alice/{self.prefix}-{n % 7}-{n}.bin"
        if n % 3 == 2:  # overwrite an earlier file now and then
            name = f"/remote.php/dav/files/alice/{self.prefix}-overwritten.bin"
        body = self.bodies[n % len(self.bodies)] if self.bodies else content(hash(name) + n)
        status, _ = request(self.server, "PUT", name, body)
        if status in (201, 204):
            self.acknowledged[name] = body
        else:
            self.failures.append((name, status))

    def _run(self) -> None:
        n = 0
        while not self._stop.wait(0.02):  # a steady trickle, not a flood
            self.put(n)
            n += 1

    def __enter__(self) -> Uploader:
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        assert self._thread is not None
        self._thread.join(60)

    def wait_for(self, count: int) -> None:
        deadline = time.monotonic() + 60
        while len(self.acknowledged) < count:
            assert time.monotonic() < deadline, "the uploads did not get going"
            time.sleep(0.02)


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    data = tmp_path / "d"
    result = {
        **os.environ,
        **CHUNKS,
        "OXIDAV_DATABASE_URL": db_url,
        "OXIDAV_DATA_DIR": str(data),
        "OXIDAV_SWEEP_INTERVAL_SECONDS": "0",
    }
    result.pop("OXIDAV_BLOB_STORE", None)
    added = oxidav(result, "user", "add", "alice", "--password", "secret", "--init")
    assert added.returncode == 0, added.stderr
    return result


@pytest.fixture
def serving(env: dict[str, str]) -> Iterator[list[ServerProcess]]:
    """Started servers, stopped at the end whatever happens."""
    servers: list[ServerProcess] = []
    yield servers
    for server in servers:
        if server.process.poll() is None:
            server.stop()


def start(env: dict[str, str], servers: list[ServerProcess]) -> ServerProcess:
    server = start_server_process(["--port", "0"], env=env)
    servers.append(server)
    return server


def assert_all_readable(server: ServerProcess, files: dict[str, bytes]) -> None:
    for name, body in files.items():
        status, got = request(server, "GET", name)
        assert status == 200, (name, status)
        assert got == body, name


def assert_fsck_clean(env: dict[str, str]) -> None:
    fsck = oxidav(env, "blobs", "fsck", "--deep")
    assert fsck.returncode == 0, fsck.stdout + fsck.stderr
    assert fsck.stdout.strip().endswith("clean")
    assert "Traceback" not in fsck.stderr


@pytest.fixture(params=["local", "s3"])
def target_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "local":
        return (tmp_path / "moved").as_uri()
    endpoint = request.getfixturevalue("moto_endpoint")
    bucket = request.getfixturevalue("s3_bucket")
    return f"s3://{bucket}/moved?endpoint_url={endpoint}&region=us-east-1"


def test_migrate_beside_a_running_server(
    env: dict[str, str], serving: list[ServerProcess], target_url: str
) -> None:
    env = {**env, **{k: v for k, v in os.environ.items() if k.startswith("AWS_")}}
    data_dir = Path(env["OXIDAV_DATA_DIR"])
    server = start(env, serving)
    before = {f"/remote.php/dav/files/alice/before-{i}.bin": content(i) for i in range(8)}
    for name, body in before.items():
        assert request(server, "PUT", name, body)[0] == 201
    with Uploader(server, "during") as during:
        during.wait_for(3)
        refused = oxidav(env, "blobs", "migrate", "--to", target_url)
        during.wait_for(len(during.acknowledged) + 3)  # files written after the copy
    # The copy ran; the switch was refused in one line, and nothing was switched.
    assert refused.returncode == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    last = refused.stderr.strip().splitlines()[-1]
    assert "stop them and run the same command again" in last
    assert "1 server process(es) running" in last
    assert (data_dir / STATE_FILE).exists()
    assert load_settings({"data_dir": data_dir}, env={}).blob_store == ""
    assert not during.failures
    # More writes after the refusal and before the restart: the window of the issue.
    after = {f"/remote.php/dav/files/alice/after-{i}.bin": content(100 + i) for i in range(5)}
    for name, body in after.items():
        assert request(server, "PUT", name, body)[0] == 201
    assert server.stop() == 0

    finished = oxidav(env, "blobs", "migrate", "--to", target_url)
    assert finished.returncode == 0, finished.stderr
    assert "resumed after" in finished.stdout
    assert load_settings({"data_dir": data_dir}, env={}).blob_store == target_url
    assert not (data_dir / STATE_FILE).exists()

    moved = start(env, serving)
    assert_all_readable(moved, {**before, **during.acknowledged, **after})
    assert request(moved, "PUT", "/remote.php/dav/files/alice/new.bin", content(7))[0] == 201
    assert_all_readable(moved, {"/remote.php/dav/files/alice/new.bin": content(7)})
    assert moved.stop() == 0
    assert_fsck_clean(env)


def test_server_does_not_start_while_a_switch_runs(env: dict[str, str]) -> None:
    from oxidav.presence import MAINTENANCE, Presence

    db = Database.from_url(env["OXIDAV_DATABASE_URL"])
    holder = Presence(db, MAINTENANCE, "oxidav blobs migrate --to file:///x")
    holder.register()
    try:
        refused = subprocess.run(
            [sys.executable, "-m", "oxidav.cli", "serve", "--port", "0"],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert refused.returncode == 2
        assert refused.stderr.strip().count("\n") == 0
        assert "blobs migrate" in refused.stderr and "needs the server stopped" in refused.stderr
    finally:
        holder.stop()
        db.dispose()


# -- interrupted migrations ------------------------------------------------------------------

#: Runs the command with small pages, each a little slow, so a signal lands mid-copy.
SLOW_MIGRATE = """
import sys, time
from oxidav.blobs import migrate
from oxidav.cli import main
migrate.PAGE = 40
copy_rows = migrate._copy_rows
def slow(*args, **kwargs):
    time.sleep(0.05)
    return copy_rows(*args, **kwargs)
migrate._copy_rows = slow
sys.exit(main(sys.argv[1:]))
"""


def test_migrate_resumes_after_sigint_and_sigkill(env: dict[str, str], tmp_path: Path) -> None:
    interrupted_migration(env, tmp_path, files=30)


@pytest.mark.slow
def test_migrate_resumes_after_sigint_and_sigkill_full_size(
    env: dict[str, str], tmp_path: Path
) -> None:
    interrupted_migration(env, tmp_path, files=1500)


def interrupted_migration(env: dict[str, str], tmp_path: Path, files: int) -> None:
    data_dir = Path(env["OXIDAV_DATA_DIR"])
    settings = load_settings({"data_dir": data_dir}, env=env)
    db = Database.from_url(settings.resolved_database_url)
    chain = BlobChain.from_settings(settings, db)
    contents = [content(1000 + i, 120_000) for i in range(files)]
    stored = [chain.ingest(pieces(c)) for c in contents]
    chain.close()
    target = (tmp_path / "moved").as_uri()
    state = data_dir / STATE_FILE
    cursors: list[str] = []
    for signum in (signal.SIGINT, signal.SIGKILL):
        process = subprocess.Popen(
            [sys.executable, "-c", SLOW_MIGRATE, "blobs", "migrate", "--to", target],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        deadline = time.monotonic() + 60
        while not state.exists() or state.read_text() in ("", *cursors):
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline
            time.sleep(0.01)
        cursors.append(state.read_text())
        process.send_signal(signum)
        _out, err = process.communicate(timeout=60)
        if signum == signal.SIGINT:
            assert process.returncode == 128 + signal.SIGINT, err
            assert "Traceback" not in err
            assert err.strip().splitlines()[-1] == (
                "oxidav: blobs migrate stopped by SIGINT; run the same command again to resume"
            )
        else:
            assert process.returncode == -signal.SIGKILL
        assert load_settings({"data_dir": data_dir}, env={}).blob_store == ""
    finished = oxidav(env, "blobs", "migrate", "--to", target)
    assert finished.returncode == 0, finished.stderr
    assert "resumed after" in finished.stdout
    # Summary lines of each phase (stderr is not a terminal), with counts and a rate.
    assert "migrate: copy " in finished.stderr and "chunks/s" in finished.stderr
    moved = load_settings({"data_dir": data_dir}, env={**env, "OXIDAV_DATA_DIR": str(data_dir)})
    assert moved.blob_store == target
    chain = BlobChain.from_settings(moved, db)
    for body, result in zip(contents, stored, strict=True):
        with chain.open(result.manifest_hash) as reader:
            assert reader.read() == body
    chain.close()
    db.dispose()
    assert_fsck_clean(env)


# -- gc beside a server ----------------------------------------------------------------------


def test_gc_beside_a_server_uploading_the_garbage(
    env: dict[str, str], serving: list[ServerProcess]
) -> None:
    data_dir = Path(env["OXIDAV_DATA_DIR"])
    settings = load_settings({"data_dir": data_dir}, env=env)
    db = Database.from_url(settings.resolved_database_url)
    chain = BlobChain.from_settings(settings, db)
    garbage = [content(2000 + i, 60_000) for i in range(24)]
    for body in garbage:
        chain.ingest(pieces(body))  # never referenced: garbage
    chain.close()
    old = utcnow() - timedelta(hours=2)
    with db.write() as session:  # it has been garbage for two hours
        for table in (BlobManifest.__table__, BlobChunk.__table__):
            session.execute(
                update(table).where(table.c.orphaned_at.is_not(None)).values(orphaned_at=old)
            )
    db.dispose()
    server = start(env, serving)
    # The server uploads the very contents gc is collecting while gc runs.
    with Uploader(server, "revived", bodies=garbage[:12]) as uploads:
        uploads.wait_for(2)
        runs = [oxidav(env, "blobs", "gc") for _ in range(2)]
        assert_fsck_clean(env)  # fsck --deep beside the uploads finds nothing wrong
        uploads.wait_for(len(uploads.acknowledged) + 2)
    for run in runs:
        assert run.returncode == 0, run.stderr
    # It collected garbage (at least the half nobody uploaded again).
    assert "removed 0 manifest(s)" not in runs[0].stdout, runs[0].stdout
    assert not uploads.failures
    assert_all_readable(server, uploads.acknowledged)
    # A short grace is refused beside a running server, in one line.
    refused = oxidav(env, "blobs", "gc", "--grace", "0")
    assert refused.returncode == 2
    assert (
        refused.stderr.strip()
        .splitlines()[-1]
        .startswith("oxidav: a --grace below 60 s is only safe with no server running")
    )
    assert server.stop() == 0
    assert oxidav(env, "blobs", "gc", "--grace", "0").returncode == 0
    assert_fsck_clean(env)
    server = start(env, serving)
    assert_all_readable(server, uploads.acknowledged)
