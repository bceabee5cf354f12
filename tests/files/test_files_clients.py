"""Real WebDAV clients against the files provider (both backends): litmus and rclone."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.support.litmus import assert_litmus_passes, needs_litmus
from tests.support.live import LiveServer
from tests.support.rclone import rclone_runner


@needs_litmus
def test_litmus(live_server: LiveServer, tmp_path: Path) -> None:
    url = f"{live_server.base_url}/remote.php/dav/files/alice/"
    assert_litmus_passes(url, tmp_path, "alice", "secret")


def _tree(root: Path, folders: int, per_folder: int, big_bytes: int) -> None:
    """Nested folders, Unicode and space names, empty files, one large file."""
    for i in range(folders):
        folder = root / f"dir {i}" / "sub ü" / f"deep-{i}"
        folder.mkdir(parents=True)
        for j in range(per_folder):
            (folder / f"file {j} é.txt").write_bytes(f"{i}-{j}\n".encode() * (j + 1))
        (folder / "empty").write_bytes(b"")
    (root / "日本語 名前.txt").write_text("unicode\n")
    with (root / "big.bin").open("wb") as big:
        for _ in range(big_bytes // (1 << 20)):
            big.write(os.urandom(1 << 20))
        big.write(os.urandom(big_bytes % (1 << 20)))


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.mark.skipif(shutil.which("rclone") is None, reason="rclone is not installed")
def test_rclone_sync_check_and_copy_back(live_server: LiveServer, tmp_path: Path) -> None:
    """CI size: 52 files in nested folders, empty files, one 3 MiB file."""
    _rclone_round_trip(
        live_server, tmp_path, folders=4, per_folder=12, big_bytes=3 * (1 << 20) + 17
    )


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("rclone") is None, reason="rclone is not installed")
def test_rclone_full_size(live_server: LiveServer, tmp_path: Path) -> None:
    """The issue's size: 510 files in nested folders, empty files, one 200 MiB file."""
    _rclone_round_trip(live_server, tmp_path, folders=10, per_folder=50, big_bytes=200 << 20)


def _rclone_round_trip(
    live_server: LiveServer, tmp_path: Path, *, folders: int, per_folder: int, big_bytes: int
) -> None:
    rclone = rclone_runner(live_server, tmp_path, vendor="other", timeout=1200)

    local = tmp_path / "local"
    _tree(local, folders, per_folder, big_bytes)
    rclone("sync", str(local), "ox:tree")
    rclone("check", str(local), "ox:tree")
    # Edit, delete and rename some files locally, then sync again.
    (local / "dir 0" / "sub ü" / "deep-0" / "file 1 é.txt").write_text("edited\n")
    (local / "dir 1" / "sub ü" / "deep-1" / "file 2 é.txt").unlink()
    (local / "dir 2").rename(local / "dir two")
    rclone("sync", str(local), "ox:tree")
    rclone("check", str(local), "ox:tree")
    down = tmp_path / "down"
    rclone("copy", "ox:tree", str(down))
    assert _files(down) == _files(local)
