"""``oxidav push`` when things go wrong (issue 28): the client killed with SIGKILL mid-push and
run again (the trees end equal and the server committed each file exactly once); the server
stopped mid-push and started again (the client retries and finishes); a small in-flight budget
(429: the client backs off and finishes); bad input, each refused with a 4xx and a reason and
nothing committed. Real server over HTTP, SQLite and PostgreSQL.
"""

from __future__ import annotations

import json
import logging
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import blake3
import pytest

from oxidav.push import PushOptions, push_tree
from tests.support.cli import run_oxidav
from tests.support.live import (
    LiveServer,
    in_process_server,
    make_settings,
    stable_port,
    start_server_process,
)

DAV = "/remote.php/dav/files/alice"
PUSH = "/remote.php/dav/push/v1"


def small_tree(root: Path, files: int, seed: int = 7) -> dict[str, bytes]:
    rng = random.Random(seed)
    for i in range(files):
        folder = root / f"dossier {i % 13}" / f"sous-été {i % 3}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"f {i}.txt").write_bytes(rng.randbytes(rng.choice((0, 10, 3000, 40_000))))
    return {
        "/" + p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()
    }


def assert_server_has(server: LiveServer, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        got = server.request("GET", DAV + quote(rel))
        assert got.status == 200 and got.body == data, (rel, got.status)


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Iterator[LiveServer]:
    with in_process_server(make_settings(tmp_path / "data", db_url)) as live:
        yield live


def _commits(caplog: pytest.LogCaptureFixture) -> Counter[str]:
    return Counter(
        str(r.args[0]) for r in caplog.records if r.name == "oxidav.push.commits" and r.args
    )


def test_a_killed_push_resumes_and_commits_each_file_once(
    server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="oxidav.push.commits")
    local = tmp_path / "local"
    files = small_tree(local, 1500)
    command = [
        sys.executable, "-m", "oxidav.cli", "push", str(local), server.base_url,
        "--user", "alice", "--state-dir", str(tmp_path / "state"),
        "--batch-files", "25", "--concurrency", "2",
    ]  # fmt: skip
    env = {**os.environ, "OXIDAV_PUSH_PASSWORD": "secret"}
    client = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while sum(_commits(caplog).values()) < 300 and client.poll() is None:
        assert time.monotonic() < deadline, "the push made no progress"
        time.sleep(0.01)
    client.send_signal(signal.SIGKILL)
    client.wait()
    before = sum(_commits(caplog).values())
    assert 0 < before < len(files), "the client was not killed mid-push"

    done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_server_has(server, files)
    commits = _commits(caplog)
    assert set(commits) == set(files) and set(commits.values()) == {1}, commits.most_common(3)


def test_the_client_rides_out_a_server_restart(tmp_path: Path, db_url: str) -> None:
    env = {"OXIDAV_DATA_DIR": str(tmp_path / "data"), "OXIDAV_DATABASE_URL": db_url}
    made = run_oxidav({**os.environ, **env}, "user", "add", "alice", "--password", "secret",
                      "--init")  # fmt: skip
    assert made.returncode == 0, made.stderr
    port = stable_port()
    local = tmp_path / "local"
    files = small_tree(local, 800, seed=8)
    server = start_server_process(["--port", str(port)], env=env)
    halfway = threading.Event()

    def progress(done_files: int, _bytes: int) -> None:
        if done_files >= 200:
            halfway.set()

    options = PushOptions(
        state_dir=tmp_path / "state", batch_files=20, concurrency=2, progress=progress
    )
    result: dict[str, object] = {}

    def run() -> None:
        try:
            result["report"] = push_tree(local, server.base_url, "alice", "secret", options)
        except Exception as exc:  # reported by the assertion below
            result["error"] = exc

    pusher = threading.Thread(target=run)
    pusher.start()
    try:
        assert halfway.wait(120)
        assert server.stop() == 0
        server = start_server_process(["--port", str(port)], env=env, init=False)
        pusher.join(300)
    finally:
        live = LiveServer(server.base_url, make_settings(tmp_path / "data", db_url))
        try:
            assert "error" not in result, result
            report = result["report"]
            assert getattr(report, "ok", False) and getattr(report, "retries", 0) > 0, report
            assert_server_has(live, files)
        finally:
            assert server.stop() == 0


def test_a_small_in_flight_budget_answers_429_and_the_client_backs_off(
    tmp_path: Path, db_url: str
) -> None:
    settings = make_settings(tmp_path / "data", db_url, push_inflight_bytes=1)
    local = tmp_path / "local"
    files = small_tree(local, 400, seed=9)
    with in_process_server(settings) as server:
        options = PushOptions(state_dir=tmp_path / "state", batch_files=10, concurrency=4)
        report = push_tree(local, server.base_url, "alice", "secret", options)
        assert report.ok, report.attention
        assert report.retries > 0  # some requests were answered 429 and sent again
        assert_server_has(server, files)


def _post(server: LiveServer, action: str, body: bytes | str) -> tuple[int, dict[str, object]]:
    answer = server.request("POST", f"{PUSH}/{action}", body)
    return answer.status, json.loads(answer.body) if answer.body else {}


def _frame(data: bytes, digest: bytes | None = None) -> bytes:
    digest = digest if digest is not None else blake3.blake3(data).digest()
    return digest + len(data).to_bytes(4, "big") + data


def test_bad_input_is_refused_with_a_reason_and_commits_nothing(server: LiveServer) -> None:
    good, other = b"g" * 300_000, b"o" * 300_000
    # A batch cut inside a chunk: 400, and not even its whole chunks are staged.
    status, body = _post(server, "chunks", _frame(good) + _frame(other)[:-10])
    assert status == 400 and "ends inside" in str(body["error"])
    status, body = _post(server, "need", json.dumps({"chunks": [blake3.blake3(good).hexdigest()]}))
    assert status == 200 and body["need"] == [blake3.blake3(good).hexdigest()]
    # A chunk whose bytes do not match its hash is refused alone.
    wrong = blake3.blake3(b"something else").digest()
    status, body = _post(server, "chunks", _frame(good) + _frame(other, wrong))
    assert status == 200
    assert body["stored"] == [blake3.blake3(good).hexdigest()]
    assert list(body["refused"]) == [wrong.hex()]
    # A commit naming unknown chunks, a path with "..", a bad size: each fails alone.
    unknown = blake3.blake3(b"never sent").hexdigest()
    commit = {
        "files": [
            {"path": "/a.bin", "size": 10, "chunks": [unknown]},
            {"path": "/x/../../etc/passwd", "size": 1, "data": "eA=="},
            {"path": "/b.bin", "size": 5, "data": "eA=="},
            {"path": "/c.bin", "size": len(good), "chunks": [blake3.blake3(good).hexdigest()]},
        ]
    }
    status, body = _post(server, "commit", json.dumps(commit))
    assert status == 400 and "b.bin" in str(body["error"])  # the size does not match the data
    commit["files"] = [f for f in commit["files"] if f["path"] != "/b.bin"]
    status, body = _post(server, "commit", json.dumps(commit))
    assert status == 200
    files = body["files"]
    assert isinstance(files, dict)
    assert files["/a.bin"]["status"] == 409 and files["/a.bin"]["missing"] == [unknown]
    assert files["/x/../../etc/passwd"]["status"] == 400
    assert "etag" in files["/c.bin"]
    for path in ("/a.bin", "/etc/passwd", "/x"):
        assert server.request("GET", DAV + path).status == 404, path
    assert server.request("GET", DAV + "/c.bin").body == good
    # Not JSON, and a body without a length.
    assert _post(server, "commit", b"{nope")[0] == 400
    assert server.request("GET", f"{PUSH}/need").status == 405


def test_a_locked_file_or_folder_is_not_overwritten(server: LiveServer) -> None:
    lockinfo = (
        '<?xml version="1.0"?><d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/>'
        "</d:lockscope><d:locktype><d:write/></d:locktype></d:lockinfo>"
    )
    assert server.request("MKCOL", DAV + quote("/dossier été")).status == 201
    for path, depth in (("/dossier été", "infinity"), ("/verrouillé.txt", "0")):
        if depth == "0":
            assert server.request("PUT", DAV + quote(path), b"old").status == 201
        locked = server.request("LOCK", DAV + quote(path), lockinfo, {"Depth": depth})
        assert locked.status == 200, locked.text
    commit = {
        "files": [
            {"path": "/dossier été/x.txt", "size": 1, "data": "eA=="},
            {"path": "/verrouillé.txt", "size": 1, "data": "eA=="},
            {"path": "/libre.txt", "size": 1, "data": "eA=="},
        ]
    }
    status, body = _post(server, "commit", json.dumps(commit))
    assert status == 200
    files = body["files"]
    assert isinstance(files, dict)
    assert files["/dossier été/x.txt"]["status"] == 423
    assert files["/verrouillé.txt"]["status"] == 423
    assert "etag" in files["/libre.txt"]
    assert server.request("GET", DAV + quote("/verrouillé.txt")).body == b"old"
