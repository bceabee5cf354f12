"""``oxidav uploads purge [--older-than AGE]``: drop stale Nextcloud chunked-upload sessions.

A chunking-v2 session (``/remote.php/dav/uploads/<user>/<id>/``) that a client abandoned keeps
references on its chunks' content. This command drops every session idle for longer than AGE
(default 24 h, the Nextcloud rule) together with those references; the blob GC then frees
chunks nobody references any more. Run it from cron.
"""

from __future__ import annotations

import argparse

from oxidav.settings import Settings
from oxidav.tree.cli import parse_age


def _purge(args: argparse.Namespace, settings: Settings) -> int:
    from oxidav.nextcloud.uploads.sessions import purge_stale
    from oxidav.services import command_services

    with command_services(settings) as services:
        count = purge_stale(services.db, services.blobs, older_than=args.older_than)
    print(f"purged {count} stale upload session(s)")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    uploads = subparsers.add_parser("uploads", help="Nextcloud chunked-upload sessions")
    commands = uploads.add_subparsers(dest="uploads_command", required=True)
    purge = commands.add_parser("purge", help="drop sessions idle for longer than AGE")
    purge.add_argument(
        "--older-than",
        type=parse_age,
        default=parse_age("24h"),
        metavar="AGE",
        help="idle longer than AGE (e.g. 24h, 90m, 3600; default 24h)",
    )
    purge.set_defaults(handler=_purge)
