"""``oxidav trash purge --older-than AGE``: drop trashed files and folders for good.

AGE is a number with an optional unit: ``s`` (default), ``m``, ``h``, ``d`` or ``w``
(``30d`` = thirty days). Purging drops the rows and the content references; the blob GC frees
chunks nobody references any more.
"""

from __future__ import annotations

import argparse
import re
from datetime import timedelta

from oxidav.db import utcnow
from oxidav.settings import Settings

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


def parse_age(text: str) -> timedelta:
    """``"30d"`` -> 30 days; raises ``argparse.ArgumentTypeError`` on nonsense."""
    match = _AGE.match(text)
    if match is None:
        raise argparse.ArgumentTypeError(f"invalid age {text!r}: use e.g. 3600, 90m, 12h, 30d")
    return timedelta(seconds=float(match.group(1)) * _UNITS[match.group(2) or "s"])


def _purge(args: argparse.Namespace, settings: Settings) -> int:
    from oxidav.services import command_services
    from oxidav.tree.trash import purge_trashed_before

    with command_services(settings) as services:
        count = purge_trashed_before(services.db, services.blobs, utcnow() - args.older_than)
    print(f"purged {count} trashed item(s)")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    trash = subparsers.add_parser("trash", help="the files trash")
    commands = trash.add_subparsers(dest="trash_command", required=True)
    purge = commands.add_parser("purge", help="delete trashed items for good")
    purge.add_argument(
        "--older-than",
        type=parse_age,
        required=True,
        metavar="AGE",
        help="trashed longer ago than AGE (e.g. 30d, 12h, 3600)",
    )
    purge.set_defaults(handler=_purge)
