"""Older revisions of oxidav for BEFORE/AFTER gates: the ``oxidav`` package of a git revision
exported into a folder (read-only git use: nothing in the checkout changes), and the options
every gate takes to name its two sides."""

from __future__ import annotations

import argparse
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


def add_side_options(parser: argparse.ArgumentParser, before: str = "HEAD") -> None:
    """``--before REV`` (default ``before``), ``--before-src DIR`` and ``--after-src DIR``."""
    parser.add_argument("--before", default=before, help="git revision of BEFORE")
    parser.add_argument("--before-src", type=Path, help="folder with BEFORE's oxidav package")
    parser.add_argument("--after-src", type=Path, help="folder with AFTER's oxidav package")


def before_source(args: argparse.Namespace, tmp: Path) -> Path:
    """The folder holding BEFORE's ``oxidav``: ``--before-src``, else ``--before`` exported
    under ``tmp``."""
    if args.before_src is not None:
        found: Path = args.before_src.resolve()
        return found
    return export_revision(args.before, tmp / "before-src")
