"""``oxidav push`` against a real server over HTTP, SQLite and PostgreSQL (issue 28): a tree
with Unicode and space names, empty files, nested folders and a 50 MiB file arrives byte for
byte; an unchanged re-push sends nothing; a one-byte edit in the big file sends at most two
chunks (counted by the server); bob's ``need`` for a chunk only alice holds says "missing".
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import blake3
import pytest

from oxidav.push import PushOptions, push_tree
from tests.support.live import LiveServer, in_process_server, make_settings

DAV = "/remote.php/dav/files/alice"
PUSH = "/remote.php/dav/push/v1"
NAMES = ("été", "日本語 notes", "a  b", "naïve café", "plain")
_CHUNKS_LINE = re.compile(r"push chunks from user '(\w+)': (\d+) received")


@pytest.fixture
def server(tmp_path: Path, db_url: str) -> Iterator[LiveServer]:
    with in_process_server(make_settings(tmp_path / "data", db_url)) as live:
        yield live


def make_tree(root: Path, big: int = 50 << 20) -> None:
    rng = random.Random(28)
    for depth, name in enumerate(NAMES):
        folder = root.joinpath(*NAMES[: depth + 1])
        folder.mkdir(parents=True, exist_ok=True)
        for i in range(6):
            size = rng.choice((0, 1, 700, 5000, 70_000, 300_000, 1_500_000))
            (folder / f"{name} {i}.bin").write_bytes(rng.randbytes(size))
    (root / "empty folder").mkdir()
    (root / "big file.bin").write_bytes(rng.randbytes(big))


def local_files(root: Path) -> dict[str, bytes]:
    return {
        "/" + p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


def assert_server_has(server: LiveServer, root: Path) -> None:
    for rel, data in local_files(root).items():
        got = server.request("GET", DAV + quote(rel))
        assert got.status == 200 and got.body == data, (rel, got.status, len(got.body))
    folder = server.request("PROPFIND", DAV + quote("/empty folder/"), headers={"Depth": "0"})
    assert folder.status == 207


def chunks_received(caplog: pytest.LogCaptureFixture, user: str = "alice") -> int:
    total = 0
    for record in caplog.records:
        match = _CHUNKS_LINE.search(record.getMessage())
        if match and match.group(1) == user:
            total += int(match.group(2))
    return total


def test_push_a_tree_then_nothing_then_a_one_byte_edit(
    server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oxidav.nextcloud")
    local = tmp_path / "local"
    make_tree(local)
    options = PushOptions(state_dir=tmp_path / "state")
    report = push_tree(local, server.base_url, "alice", "secret", options)
    assert report.ok, report.attention
    assert report.files_committed == len(local_files(local))
    assert report.folders_created == len(NAMES) + 1
    assert_server_has(server, local)

    caplog.clear()
    again = push_tree(local, server.base_url, "alice", "secret", options)
    assert again.ok and again.files_committed == 0 and again.files_unchanged == report.files_seen
    assert chunks_received(caplog) == 0

    big = local / "big file.bin"
    data = bytearray(big.read_bytes())
    data[len(data) // 2] ^= 0xFF
    big.write_bytes(bytes(data))
    caplog.clear()
    edited = push_tree(local, server.base_url, "alice", "secret", options)
    assert edited.ok and edited.files_committed == 1, edited
    assert 1 <= chunks_received(caplog) <= 2
    got = server.request("GET", DAV + quote("/big file.bin"))
    assert got.body == bytes(data)


def test_need_reveals_nothing_of_another_users_content(server: LiveServer, tmp_path: Path) -> None:
    local = tmp_path / "alice"
    local.mkdir()
    secret = random.Random(5).randbytes(600_000)
    (local / "mine.bin").write_bytes(secret)
    report = push_tree(local, server.base_url, "alice", "secret", PushOptions(state_dir=tmp_path))
    assert report.ok and report.chunks_uploaded >= 1
    hashes = [blake3.blake3(secret[:1]).hexdigest()]
    # alice's chunks: the ones her push uploaded (the file is bigger than the inline limit).
    from oxidav.push.scan import ChunkParams, LocalFile, hash_file

    stat = (local / "mine.bin").stat()
    hashed = hash_file(
        LocalFile("/mine.bin", local / "mine.bin", stat.st_size, stat.st_mtime_ns),
        ChunkParams(256 << 10, 1 << 20, 4 << 20),
        256 << 10,
    )
    hashes = [ref.hash for ref in hashed.chunks]
    for user, expected in (("alice", []), ("bob", hashes)):
        answer = server.request(
            "POST",
            f"{PUSH}/need",
            json.dumps({"chunks": hashes}),
            user=user,
            headers={"Content-Type": "application/json"},
        )
        assert answer.status == 200
        assert json.loads(answer.body)["need"] == expected, user
    # bob cannot commit a file from alice's chunks either: they are not his.
    commit = {"files": [{"path": "/x.bin", "size": len(secret), "chunks": hashes}]}
    answer = server.request("POST", f"{PUSH}/commit", json.dumps(commit), user="bob")
    result = json.loads(answer.body)["files"]["/x.bin"]
    assert result["status"] == 409 and sorted(result["missing"]) == sorted(set(hashes))
    assert server.request("GET", "/remote.php/dav/files/bob/x.bin", user="bob").status == 404
