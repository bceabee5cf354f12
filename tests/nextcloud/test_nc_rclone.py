"""rclone with ``vendor = nextcloud`` against oxidav: ``X-OC-Mtime`` for modification times,
``oc:checksums`` for ``rclone check``, and chunked upload v2 for the big file when the rclone
has it (v1.63+; Debian 12 ships 1.60.1, which PUTs whole files) (TESTING.md)."""

from __future__ import annotations

import logging
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.support.live import LiveServer
from tests.support.nextcloud_sync import MB, local_files, requests_of
from tests.support.rclone import rclone_runner

pytestmark = pytest.mark.skipif(shutil.which("rclone") is None, reason="rclone is not installed")


def _tree(root: Path) -> None:
    """Nested folders, Unicode and space names, an empty file, one file over rclone's 10 MiB
    Nextcloud chunk size."""
    for i in range(3):
        folder = root / f"dir {i}" / "sub ü" / f"deep-{i}"
        folder.mkdir(parents=True)
        for j in range(8):
            (folder / f"file {j} é.txt").write_bytes(f"{i}-{j}\n".encode() * (j + 1))
        (folder / "empty").write_bytes(b"")
    (root / "日本語 名前.txt").write_text("unicode\n")
    (root / "big.bin").write_bytes(os.urandom(21 * MB + 17))
    os.utime(root / "日本語 名前.txt", (1_600_000_000, 1_600_000_000))


def _version(text: str) -> tuple[int, int]:
    match = re.search(r"rclone v(\d+)\.(\d+)", text)
    assert match is not None, text
    return int(match.group(1)), int(match.group(2))


def test_rclone_nextcloud_round_trip(
    live_server: LiveServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oxidav.access")
    rclone = rclone_runner(live_server, tmp_path, vendor="nextcloud")

    local = tmp_path / "local"
    _tree(local)
    rclone("sync", str(local), "ox:tree")
    counts = requests_of(caplog.records)
    if _version(rclone("version")) >= (1, 63):
        # rclone's Nextcloud chunked upload (v1.63+): 21 MiB in 10 MiB chunks.
        assert counts[("MKCOL", "uploads")] >= 1 and counts[("MOVE", "uploads")] >= 1, counts
        assert counts[("PUT", "uploads")] >= 3, counts
    else:
        assert counts[("PUT", "files")] >= 29, counts
    # ``check`` compares sizes and the SHA1/MD5 hashes served in oc:checksums.
    output = rclone("check", str(local), "ox:tree")
    assert "0 differences found" in output, output
    listing = rclone("lsjson", "--hash", "ox:tree/big.bin")
    assert '"SHA-1"' in listing or '"sha1"' in listing, listing
    # Modification times survive (X-OC-Mtime): rclone lists the local mtime.
    stamp = rclone("lsl", "ox:tree/日本語 名前.txt")
    assert "2020-09-13 12:26:40" in stamp, stamp

    (local / "dir 0" / "sub ü" / "deep-0" / "file 1 é.txt").write_text("edited\n")
    (local / "dir 1" / "sub ü" / "deep-1" / "file 2 é.txt").unlink()
    (local / "dir 2").rename(local / "dir two")
    rclone("sync", str(local), "ox:tree")
    assert "0 differences found" in rclone("check", str(local), "ox:tree")
    down = tmp_path / "down"
    rclone("copy", "ox:tree", str(down))
    assert local_files(down) == local_files(local)
