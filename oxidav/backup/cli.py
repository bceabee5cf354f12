"""``oxidav backup DEST`` and ``oxidav restore SRC`` (the package doc says what they do)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from oxidav.progress import Interrupted, Meter, StopFlag, metered
from oxidav.settings import Settings


def _run(title: str, work: Callable[[Meter, StopFlag], object], unfinished: str) -> int:
    """Run one long command with its progress meter: its report on stdout (exit 0), a
    ``BackupError`` as one line (exit 2), an interruption as one line (exit 128 + signal)."""
    from oxidav.backup.manifest import BackupError

    try:
        with metered(title) as (meter, stop):
            report = work(meter, stop)
    except BackupError as exc:
        print(f"oxidav: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"oxidav: {title} interrupted ({exc}); {unfinished}", file=sys.stderr)
        return exc.exit_code
    print(report)
    return 0


def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    from oxidav.backup.snapshot import create_backup

    return _run(
        "backup",
        lambda meter, stop: create_backup(settings, Path(args.dest), meter, stop),
        f"{args.dest} is unfinished — run the same command again",
    )


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    from oxidav.backup.restore import restore_backup

    return _run(
        "restore",
        lambda meter, stop: restore_backup(settings, Path(args.source), meter, stop),
        "run the same command again (the database is restored last)",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    backup = subparsers.add_parser(
        "backup", help="write a consistent backup of the installation (the server may run)"
    )
    backup.add_argument("dest", help="a new or empty folder for the backup")
    backup.set_defaults(handler=cmd_backup)
    restore = subparsers.add_parser(
        "restore", help="restore a backup into a new installation (--data-dir / database_url)"
    )
    restore.add_argument("source", help="the folder `oxidav backup` wrote")
    # A restore makes a new installation: its data dir is created, whatever its name.
    restore.set_defaults(handler=cmd_restore, creates=True, init=True)
