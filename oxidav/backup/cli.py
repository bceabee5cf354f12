"""``oxidav backup DEST`` and ``oxidav restore SRC`` (the package doc says what they do)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from oxidav.backup.manifest import BackupError
from oxidav.backup.restore import restore_backup
from oxidav.backup.snapshot import create_backup
from oxidav.progress import Interrupted, Meter, StopFlag
from oxidav.settings import Settings


def cmd_backup(args: argparse.Namespace, settings: Settings) -> int:
    meter = Meter("backup")
    try:
        with StopFlag() as stop:
            report = create_backup(settings, Path(args.dest), meter, stop)
    except BackupError as exc:
        meter.close()
        print(f"oxidav: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        meter.close()
        print(
            f"oxidav: backup interrupted ({exc}); {args.dest} is unfinished — run the same "
            "command again",
            file=sys.stderr,
        )
        return exc.exit_code
    meter.close()
    print(report)
    return 0


def cmd_restore(args: argparse.Namespace, settings: Settings) -> int:
    meter = Meter("restore")
    try:
        with StopFlag() as stop:
            report = restore_backup(settings, Path(args.source), meter, stop)
    except BackupError as exc:
        meter.close()
        print(f"oxidav: {exc}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        meter.close()
        print(
            f"oxidav: restore interrupted ({exc}) before the database was restored; run the "
            "same command again",
            file=sys.stderr,
        )
        return exc.exit_code
    meter.close()
    print(report)
    return 0


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
