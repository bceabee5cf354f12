"""``oxidav push LOCAL_DIR URL``: the command-line face of ``push_tree`` (a thin layer).

The password comes from ``--password-stdin`` or ``OXIDAV_PUSH_PASSWORD`` (an app password
is best), the user from ``--user`` or ``OXIDAV_PUSH_USER``. A terminal gets a progress bar
(files, bytes, rate, ETA); otherwise one summary line. Exit codes: 0 all pushed, 1 some files
need attention (listed), 2 the push could not run or stopped.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oxidav.push.engine import PushReport


def main(argv: list[str]) -> int:
    """``oxidav push ARGS`` on its own (``oxidav.entry``): the server is not imported."""
    parser = argparse.ArgumentParser(prog="oxidav")
    register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(["push", *argv])
    code: int = args.handler(args)
    return code


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    push = subparsers.add_parser(
        "push",
        help="push a local folder to an oxidav server fast (resumable; docs/push-protocol.md)",
    )
    push.add_argument("local", type=Path, help="the local folder")
    push.add_argument("url", help="the server's base URL, e.g. https://cloud.example.org")
    push.add_argument("--user", default=os.environ.get("OXIDAV_PUSH_USER"), help="user name")
    push.add_argument(
        "--password-stdin", action="store_true", help="read the (app) password from stdin"
    )
    push.add_argument("--concurrency", type=int, default=4, help="batches in flight (4)")
    push.add_argument(
        "--delete", action="store_true", help="also remove what an earlier push sent and is gone"
    )
    push.add_argument("--dry-run", action="store_true", help="say what would be sent, send nothing")
    push.add_argument("--batch-files", type=int, default=1000, help="files per commit (1000)")
    push.add_argument("--state-dir", type=Path, help="where the outbox lives")
    push.add_argument("--ca-cert", help="CA certificate file to verify the server's with")
    push.set_defaults(handler=cmd_push, client_command=True)


def _password(args: argparse.Namespace) -> str | None:
    if args.password_stdin:
        return sys.stdin.readline().rstrip("\r\n")
    return os.environ.get("OXIDAV_PUSH_PASSWORD")


Hook = Callable[[int, int], None]


@contextmanager
def _progress(enabled: bool) -> Iterator[tuple[Hook, Hook] | None]:
    """A progress bar's two hooks: (files, bytes) planned, and (files, bytes) done."""
    if not enabled:
        yield None
        return
    from rich.progress import (
        BarColumn,
        DownloadColumn,
        Progress,
        TimeRemainingColumn,
        TransferSpeedColumn,
    )

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        DownloadColumn(),
        TransferSpeedColumn(),
        TimeRemainingColumn(),
        transient=True,
    ) as bar:
        task = bar.add_task("push", total=None)
        planned_files = [0]

        def plan(files: int, total_bytes: int) -> None:
            planned_files[0] = files
            bar.update(task, total=max(1, total_bytes), description=f"push: 0/{files} files")

        def update(files: int, done_bytes: int) -> None:
            text = f"push: {files}/{planned_files[0]} files"
            bar.update(task, completed=done_bytes, description=text)

        yield plan, update


def _summary(report: PushReport) -> str:
    mib = report.bytes_committed / (1 << 20)
    return (
        f"push: {report.files_committed} files ({mib:.1f} MiB) committed, "
        f"{report.files_unchanged} unchanged, {report.folders_created} folders, "
        f"{report.chunks_uploaded} chunks uploaded, {report.chunks_deduplicated} already there, "
        f"{report.deleted} deleted, {report.retries} retries in {report.seconds:.1f} s"
    )


def cmd_push(args: argparse.Namespace) -> int:
    from oxidav.push.engine import PushAborted, PushOptions, push_tree
    from oxidav.push.http import PushHTTPError

    if not args.user:
        print("oxidav push: no user (--user or OXIDAV_PUSH_USER)", file=sys.stderr)
        return 2
    password = _password(args)
    if password is None:
        print(
            "oxidav push: no password (--password-stdin or OXIDAV_PUSH_PASSWORD)", file=sys.stderr
        )
        return 2
    if args.concurrency < 1 or args.batch_files < 1:
        print("oxidav push: --concurrency and --batch-files must be at least 1", file=sys.stderr)
        return 2
    options = PushOptions(
        concurrency=args.concurrency,
        batch_files=args.batch_files,
        delete=args.delete,
        dry_run=args.dry_run,
        state_dir=args.state_dir,
        ca_file=args.ca_cert,
    )
    with _progress(sys.stderr.isatty() and not args.dry_run) as hooks:
        if hooks is not None:
            options.planned, options.progress = hooks
        try:
            report = push_tree(args.local, args.url, args.user, password, options)
        except (PushAborted, PushHTTPError, ValueError) as exc:
            print(f"oxidav push: {exc}", file=sys.stderr)
            return 2
    if args.dry_run:
        planned = report.planned
        print(
            f"push (dry run): would create {planned.get('folders', 0)} folders, send "
            f"{planned.get('files', 0)} files ({planned.get('bytes', 0)} bytes), delete "
            f"{planned.get('deletions', 0)}; {report.files_unchanged} unchanged"
        )
        return 0
    print(_summary(report))
    for path, reason in report.attention:
        print(f"  needs attention: {path}: {reason}", file=sys.stderr)
    return 0 if report.ok else 1
