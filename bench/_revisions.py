"""Older revisions of oxidav for BEFORE/AFTER gates: the ``oxidav`` package of a git revision
exported into a folder (read-only git use: nothing in the checkout changes), and the options
every gate takes to name its two sides."""

from __future__ import annotations

import argparse
import io
import subprocess
import tarfile
from collections.abc import Iterator, Sequence
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


def side_sources(args: argparse.Namespace, tmp: Path) -> dict[str, Path]:
    """The folders holding the ``oxidav`` of ``BEFORE`` (``before_source``) and ``AFTER``
    (``--after-src``, else this checkout)."""
    return {
        "BEFORE": before_source(args, tmp),
        "AFTER": args.after_src.resolve() if args.after_src else REPO,
    }


def add_gate_options(parser: argparse.ArgumentParser, figures: Sequence[str] | None = None) -> None:
    """A gate's ``--rounds`` (default 3), ``--decide FIGURE`` (repeatable; one of ``figures``
    when given) and the side options (``add_side_options``)."""
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--decide", action="append", choices=figures, help="a figure that decides (repeatable)"
    )
    add_side_options(parser)


def alternating(rounds: int) -> Iterator[tuple[int, str]]:
    """(round, side) of ``rounds`` rounds, each side once a round in ``round_order``."""
    for round_number in range(rounds):
        for side in round_order(round_number):
            yield round_number, side


def round_order(round_number: int) -> tuple[str, str]:
    """Which side runs first in a round: BEFORE in even rounds, AFTER in odd ones, so a drift
    of the machine's speed within a round falls on both sides alike."""
    return ("BEFORE", "AFTER") if round_number % 2 == 0 else ("AFTER", "BEFORE")
