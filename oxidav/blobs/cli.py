"""``oxidav blobs fsck [--deep] | gc [--grace SECONDS] | migrate --to URL``
(docs/architecture.md#command-line).

Maintenance commands talk to the store *without* the local cache, so that fsck sees what is
really stored and gc / migrate do not churn the cache. Each shows its progress
(``oxidav.progress.Meter``) and stops cleanly on SIGINT / SIGTERM, with one line saying what to
do and the exit code 128 + signal. Refusals (servers running where they must not) are one line
and exit code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from oxidav.blobs.gc import DEFAULT_GRACE_SECONDS, LIVE_MIN_GRACE, collect_garbage
from oxidav.blobs.store import BlobStore, BlobStoreError
from oxidav.blobs.urls import store_from_settings
from oxidav.db import Database
from oxidav.db.migrate import check_not_newer, upgrade
from oxidav.presence import ServersRunningError, exclusive
from oxidav.progress import Interrupted, metered
from oxidav.settings import CONFIG_FILE_NAME, Settings


def _open(settings: Settings, url: str | None = None) -> tuple[Database, BlobStore]:
    db = Database.from_url(settings.resolved_database_url, settings.sqlite_synchronous)
    check_not_newer(db.engine)
    upgrade(db.engine)
    return db, store_from_settings(settings.replace(blob_cache=""), url)


def _interrupted(command: str, exc: Interrupted, what: str) -> int:
    print(f"oxidav: {command} stopped by {exc}; {what}", file=sys.stderr)
    return exc.exit_code


def _refused(exc: ServersRunningError) -> int:
    print(f"oxidav: {exc}", file=sys.stderr)
    return 2


def cmd_fsck(args: argparse.Namespace, settings: Settings) -> int:
    from oxidav.blobs.fsck import check

    db, store = _open(settings)
    try:
        with metered("fsck") as (meter, stop):
            report = check(db, store, deep=args.deep, meter=meter, stop=stop)
    except Interrupted as exc:
        return _interrupted("blobs fsck", exc, "nothing was changed; run it again to check")
    finally:
        store.close()
        db.dispose()
    for line in report.lines():
        print(line)
    return 0 if report.clean else 1


def cmd_gc(args: argparse.Namespace, settings: Settings) -> int:
    db, store = _open(settings)
    try:
        with metered("gc") as (meter, stop), contextlib.ExitStack() as guard:
            if args.grace < LIVE_MIN_GRACE:
                guard.enter_context(
                    exclusive(
                        db,
                        f"oxidav blobs gc --grace {args.grace:g}",
                        f"a --grace below {LIVE_MIN_GRACE:g} s is only safe with no server "
                        f"running: stop them, or use --grace {LIVE_MIN_GRACE:g} or more",
                    )
                )
            report = collect_garbage(db, store, args.grace, meter=meter, stop=stop)
    except ServersRunningError as exc:
        return _refused(exc)
    except Interrupted as exc:
        return _interrupted("blobs gc", exc, "what was collected stays collected; run it again")
    finally:
        store.close()
        db.dispose()
    print(report)
    return 0


def cmd_migrate(args: argparse.Namespace, settings: Settings) -> int:
    from oxidav.blobs.migrate import migrate, switch_blob_store_setting

    current = settings.resolved_blob_store
    if args.to == current:
        print(f"oxidav: the blob store already is {current}", file=sys.stderr)
        return 2
    db, source = _open(settings)
    try:
        target = store_from_settings(settings.replace(blob_cache=""), args.to)
    except (ValueError, BlobStoreError, OSError) as exc:
        source.close()
        db.dispose()
        print(f"oxidav: the target store {args.to} is not usable: {exc}", file=sys.stderr)
        return 2
    config = args.config or settings.data_dir / CONFIG_FILE_NAME
    try:
        target.health_check()
        with metered("migrate") as (meter, stop):
            report = migrate(
                db,
                source,
                target,
                args.to,
                settings.data_dir,
                on_complete=lambda: switch_blob_store_setting(config, args.to),
                meter=meter,
                stop=stop,
            )
    except (BlobStoreError, OSError) as exc:
        print(
            f"oxidav: blobs migrate stopped, a store failed: {exc}; "
            "run the same command again when it works (it resumes)",
            file=sys.stderr,
        )
        return 2
    except ServersRunningError as exc:
        return _refused(exc)
    except Interrupted as exc:
        return _interrupted("blobs migrate", exc, "run the same command again to resume")
    finally:
        target.close()
        source.close()
        db.dispose()
    print(report)
    if report.failed:
        for key in report.failed[:20]:
            print(f"failed: {key}", file=sys.stderr)
        print("oxidav: some chunks were not copied; the setting is unchanged", file=sys.stderr)
        return 1
    print(f"blob_store = {args.to} written to {config}; start oxidav to use it")
    if os.environ.get("OXIDAV_BLOB_STORE"):
        print("warning: OXIDAV_BLOB_STORE is set and overrides the config file", file=sys.stderr)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    blobs = subparsers.add_parser("blobs", help="blob store maintenance")
    commands = blobs.add_subparsers(dest="blobs_command", required=True)
    fsck = commands.add_parser("fsck", help="report missing, orphaned and corrupt chunks")
    fsck.add_argument("--deep", action="store_true", help="re-read and re-hash every chunk")
    fsck.set_defaults(handler=cmd_fsck)
    gc = commands.add_parser("gc", help="remove content unreferenced for the grace period")
    gc.add_argument(
        "--grace",
        type=float,
        default=DEFAULT_GRACE_SECONDS,
        metavar="SECONDS",
        help=f"how long garbage must stay unreferenced (default {DEFAULT_GRACE_SECONDS:g})",
    )
    gc.set_defaults(handler=cmd_gc)
    mig = commands.add_parser("migrate", help="copy every chunk to another store, then use it")
    mig.add_argument("--to", required=True, metavar="URL", help="file:///path or s3://bucket/…")
    mig.set_defaults(handler=cmd_migrate)


__all__ = ["register"]
