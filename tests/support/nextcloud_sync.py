"""Helpers of the real-client tests: generated trees, running ``nextcloudcmd``, both sides as
``{path: bytes}``, and the access-log lines of a run (TESTING.md,
docs/nextcloud-protocol.md#running-nextcloudcmd).
"""

from __future__ import annotations

import logging
import random
import re
import subprocess
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from oxidav.blobs import BlobChain
from oxidav.db import Database
from oxidav.tree import list_subtree
from tests.support.nextcloud import user_id

MB = 1024 * 1024
#: Names the client keeps in LOCALDIR for itself (journal, its WAL and the sync log).
_CLIENT_FILES = re.compile(r"^(\.sync_.*\.db.*|\._sync_.*\.db.*|\.owncloudsync\.log.*)$")
#: ``METHOD PATH STATUS ...`` as written by ``oxidav.access_log``.
_ACCESS = re.compile(r"^(\S+) (.+) (\d{3}) [\d.]+ms user=")


@dataclass(frozen=True)
class TreeShape:
    """How many files of each size class a generated tree has."""

    small: int  # under 1 MB: bulk upload (A.8)
    medium: int  # 1 to 10 MB: plain PUT
    large: int  # over 10 MB: chunked upload v2
    folders: int = 6


_NAMES = ("rapport", "été", "日本語", "naïve café", "Ωmega", "straße", "plain")


def make_tree(root: Path, shape: TreeShape, seed: int = 7) -> None:
    """A deterministic tree: nested folders, Unicode names, the size classes of ``shape``."""
    rng = random.Random(seed)
    folders = [root]
    for i in range(shape.folders):
        parent = rng.choice(folders)
        folder = parent / f"{_NAMES[i % len(_NAMES)]} {i}"
        folder.mkdir(parents=True, exist_ok=True)
        folders.append(folder)
    root.mkdir(parents=True, exist_ok=True)

    def write(index: int, size: int, kind: str) -> None:
        folder = folders[index % len(folders)]
        name = f"{kind} {index} {_NAMES[index % len(_NAMES)]}.bin"
        (folder / name).write_bytes(rng.randbytes(size))

    # No empty files: nextcloudcmd 3.7.3 aborts a bulk POST holding one (client-side
    # "UnknownNetworkError", fixed in the client by nextcloud/desktop#5871, 3.9); empty files are
    # covered by downloads and by plain PUT in the tests.
    for i in range(shape.small):
        write(i, rng.choice((1, 17, 300, 4096, 70_000, 900_000)), "small")
    for i in range(shape.medium):
        write(i, rng.randrange(1_100_000, 10 * 1_000_000), "medium")
    for i in range(shape.large):
        write(i, rng.randrange(11 * MB, 13 * MB), "large")


def local_files(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` but the client's own, by NFC relative path."""
    return {
        unicodedata.normalize("NFC", str(p.relative_to(root))): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and not _CLIENT_FILES.match(p.name)
    }


def server_files(db: Database, chain: BlobChain, user: str) -> dict[str, bytes]:
    """Every live file of ``user``'s tree, read back through the blob chain."""
    uid = user_id(db, user)
    with db.read() as session:
        nodes = [n for n in list_subtree(session, uid, "") if not n.is_folder]
    files: dict[str, bytes] = {}
    for node in nodes:
        if node.manifest_hash is None:
            files[node.path.lstrip("/")] = b""
            continue
        with chain.open(node.manifest_hash) as reader:
            files[node.path.lstrip("/")] = reader.read()
    return files


def nextcloudcmd(local: Path, base_url: str, user: str = "alice", password: str = "secret") -> str:
    """One ``nextcloudcmd`` run; asserts exit 0 and returns its output."""
    done = subprocess.run(
        ["nextcloudcmd", "--non-interactive", "-u", user, "-p", password, str(local), base_url],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    return output


def requests_of(records: list[logging.LogRecord]) -> Counter[tuple[str, str]]:
    """``(METHOD, kind)`` counts of access-log records; kind is the URL family."""
    counts: Counter[tuple[str, str]] = Counter()
    for record in records:
        if record.name != "oxidav.access":
            continue
        match = _ACCESS.match(record.getMessage())
        if match is None:
            continue
        method, path = match.group(1), match.group(2)
        if path.startswith("/remote.php/dav/uploads/"):
            kind = "uploads"
        elif path.startswith("/remote.php/dav/bulk"):
            kind = "bulk"
        elif path.startswith("/remote.php/dav/files/"):
            kind = "files"
        else:
            kind = "other"
        counts[(method, kind)] += 1
    return counts


def transfers(counts: Counter[tuple[str, str]]) -> int:
    """How many requests of a run moved or changed content."""
    changing = {"PUT", "POST", "GET", "MOVE", "DELETE", "MKCOL", "COPY"}
    return sum(n for (method, kind), n in counts.items() if method in changing and kind != "other")
