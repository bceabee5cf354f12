"""Older revisions of oxidav for BEFORE/AFTER gates: the ``oxidav`` package of a git revision
exported into a folder (read-only git use: nothing in the checkout changes)."""

from __future__ import annotations

import io
import subprocess
import tarfile
from pathlib import Path

#: The repository the benchmarks live in.
REPO = Path(__file__).resolve().parent.parent


def export_revision(rev: str, dest: Path) -> Path:
    """The ``oxidav`` package of revision ``rev`` under ``dest``."""
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", rev, "oxidav"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(dest, filter="data")
    return dest
