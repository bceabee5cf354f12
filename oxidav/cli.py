"""The ``oxidav`` command line (docs/architecture.md#command-line).

Each command is a small handler ``(args, settings) -> exit code``. Rooms with commands of their
own (blobs, tree, authz, locks, uploads, backup, config) contribute them through a
``register(subparsers)`` function in their ``cli`` module; ``ROOM_COMMANDS`` lists those modules.
``oxidav serve`` runs through here, and its worker processes inherit what this process
imported: a ``cli`` module defines its commands' options, and its handlers import the work
itself (a backup, a push, an fsck) when they run.
"""

from __future__ import annotations

import argparse
import getpass
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from oxidav import settings_report
from oxidav.authz import cli as authz_cli
from oxidav.authz import locks_cli
from oxidav.authz.authn import accounts
from oxidav.backup import cli as backup_cli
from oxidav.blobs import cli as blobs_cli
from oxidav.bootstrap import prepare_storage
from oxidav.db import Database
from oxidav.db.migrate import MigrationFailedError, SchemaTooNewError
from oxidav.nextcloud import cli as nextcloud_cli
from oxidav.presence import MaintenanceRunningError
from oxidav.push import cli as push_cli
from oxidav.settings import (
    Settings,
    SettingsError,
    load_settings_with_sources,
    unknown_env_warnings,
)
from oxidav.settings_report import settings_help
from oxidav.startup import (
    PROCESS_UMASK,
    StartupError,
    check_data_dir,
    database_error,
    is_default_data_dir,
)
from oxidav.tree import cli as tree_cli
from oxidav.version import __version__


class CommandModule(Protocol):
    """A room's ``cli`` module."""

    def register(self, subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
        """Add the room's commands."""
        ...


#: The rooms' commands: each module's ``register(subparsers)`` adds its own.
ROOM_COMMANDS: tuple[CommandModule, ...] = (
    blobs_cli,
    tree_cli,
    authz_cli,
    locks_cli,
    nextcloud_cli,
    backup_cli,
    settings_report,
    push_cli,
)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data-dir", type=Path, help="data folder (default ./oxidav-data)")
    parser.add_argument("--config", type=Path, help="config file (default DATA_DIR/oxidav.toml)")


def _open_db(settings: Settings) -> Database:
    db = Database.from_url(settings.resolved_database_url, settings.sqlite_synchronous)
    prepare_storage(settings, db)
    return db


def _read_password(args: argparse.Namespace, prompt: str) -> str:
    if getattr(args, "password", None):
        return str(args.password)
    if getattr(args, "password_stdin", False) or not sys.stdin.isatty():
        return sys.stdin.readline().rstrip("\r\n")
    first = getpass.getpass(prompt)
    if getpass.getpass("again: ") != first:
        raise accounts.AccountError("the passwords do not match")
    return first


def cmd_serve(args: argparse.Namespace, settings: Settings) -> int:
    from oxidav.observability.logs import configure_logging
    from oxidav.observability.shared import share_metrics

    if settings.resolved_workers > 1:
        share_metrics()  # before prometheus_client is imported
    from oxidav.workers import serve

    os.umask(PROCESS_UMASK)  # whatever the server creates is its user's alone
    configure_logging(settings.log_level, settings.log_format)
    for warning in getattr(args, "setting_warnings", ()):
        logging.getLogger("oxidav.settings").warning("%s", warning)
    return serve(settings)


def cmd_db_upgrade(args: argparse.Namespace, settings: Settings) -> int:
    _open_db(settings).dispose()
    print("database is at the newest schema")
    return 0


def cmd_user_add(args: argparse.Namespace, settings: Settings) -> int:
    db = _open_db(settings)
    password = _read_password(args, f"password for {args.name}: ")
    accounts.create_user(
        db,
        args.name,
        password,
        email=args.email,
        display_name=args.display_name or "",
        quota_bytes=args.quota,
    )
    print(f"created user {args.name!r}")
    return 0


def cmd_user_list(args: argparse.Namespace, settings: Settings) -> int:
    for user in accounts.list_users(_open_db(settings)):
        quota = "unlimited" if user.quota_bytes is None else str(user.quota_bytes)
        print(
            f"{user.username}\t{user.display_name}\t{user.email or '-'}\t"
            f"quota={quota}\tapp-passwords={user.app_passwords}"
        )
    return 0


def cmd_user_passwd(args: argparse.Namespace, settings: Settings) -> int:
    db = _open_db(settings)
    accounts.set_password(db, args.name, _read_password(args, f"new password for {args.name}: "))
    print(f"password of {args.name!r} changed")
    return 0


def cmd_user_delete(args: argparse.Namespace, settings: Settings) -> int:
    from oxidav.services import command_services
    from oxidav.user_removal import remove_user

    with command_services(settings) as services:
        remove_user(services.db, services.blobs, args.name)
    print(f"deleted user {args.name!r}")
    return 0


def cmd_app_password_create(args: argparse.Namespace, settings: Settings) -> int:
    token = accounts.create_app_password(_open_db(settings), args.user, args.label)
    print(token)
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="oxidav", description="WebDAV/CalDAV/CardDAV server")
    parser.add_argument("--version", action="version", version=f"oxidav {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser(
        "serve",
        help="run the server",
        epilog=settings_help(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(serve)
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, help="port (default 8080; 0 picks a free one)")
    serve.add_argument("--threads", type=int, help="worker threads per process (default 32)")
    serve.add_argument(
        "--workers", type=int, help="worker processes (default 0: one per CPU; 1: no supervisor)"
    )
    _init_option(serve)
    serve.set_defaults(handler=cmd_serve)

    db = sub.add_parser("db", help="database schema").add_subparsers(dest="db_cmd", required=True)
    upgrade = db.add_parser("upgrade", help="migrate the database to the newest schema")
    _common(upgrade)
    _init_option(upgrade)
    upgrade.set_defaults(handler=cmd_db_upgrade)

    user = sub.add_parser("user", help="manage users").add_subparsers(
        dest="user_cmd", required=True
    )
    add = user.add_parser("add", help="create a user")
    _common(add)
    add.add_argument("name")
    _password_options(add)
    add.add_argument("--email")
    add.add_argument("--display-name")
    add.add_argument("--quota", type=int, help="quota in bytes (default: the global default)")
    _init_option(add)
    add.set_defaults(handler=cmd_user_add)
    listing = user.add_parser("list", help="list users")
    _common(listing)
    listing.set_defaults(handler=cmd_user_list)
    passwd = user.add_parser("passwd", help="change a user's password")
    _common(passwd)
    passwd.add_argument("name")
    _password_options(passwd)
    passwd.set_defaults(handler=cmd_user_passwd)
    delete = user.add_parser("delete", help="delete a user and all their data")
    _common(delete)
    delete.add_argument("name")
    delete.set_defaults(handler=cmd_user_delete)

    app_pw = sub.add_parser("app-password", help="app passwords for clients")
    app_sub = app_pw.add_subparsers(dest="app_cmd", required=True)
    create = app_sub.add_parser("create", help="create an app password (printed once)")
    _common(create)
    create.add_argument("user")
    create.add_argument("--label", default="")
    create.set_defaults(handler=cmd_app_password_create)

    for module in ROOM_COMMANDS:
        before = set(sub.choices)
        module.register(sub)
        for name in set(sub.choices) - before:
            _add_common_recursively(sub.choices[name])
    return parser


def _add_common_recursively(parser: argparse.ArgumentParser) -> None:
    subactions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subactions:
        if not any(a.dest == "data_dir" for a in parser._actions):
            _common(parser)
        return
    for action in subactions:
        for child in action.choices.values():
            _add_common_recursively(child)


def _init_option(parser: argparse.ArgumentParser) -> None:
    """``--init`` for the commands that may start an installation: without it they create
    only the default data dir (./oxidav-data) when it is missing, not one named by
    --data-dir, OXIDAV_DATA_DIR or the config file (a misspelt path is refused)."""
    parser.add_argument(
        "--init", action="store_true", help="create a new installation if the data dir is missing"
    )
    parser.set_defaults(creates=True)


def _password_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument("--password", help="the password (visible in the process list!)")
    group.add_argument("--password-stdin", action="store_true", help="read it from stdin")


def _flags(args: argparse.Namespace) -> dict[str, Any]:
    names = ("data_dir", "host", "port", "threads", "workers")
    return {name: getattr(args, name) for name in names if getattr(args, name, None) is not None}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "client_command", False):  # a client: no installation, no settings
        client: int = args.handler(args)
        return client
    try:
        args.setting_warnings = unknown_env_warnings()
        if args.handler is not cmd_serve:  # serve logs them, in its log format
            for warning in args.setting_warnings:
                print(f"oxidav: warning: {warning}", file=sys.stderr)
        settings, args.setting_sources = load_settings_with_sources(
            _flags(args), config_file=args.config
        )
        try:
            _check_installation(args, settings)
            code: int = args.handler(args, settings)
        except (ArgumentError, NoSuchModuleError) as exc:  # database_url not a usable URL
            raise database_error(settings, exc) from None
        return code
    except (
        SettingsError,
        SchemaTooNewError,
        MigrationFailedError,
        accounts.AccountError,
        MaintenanceRunningError,
        StartupError,
    ) as exc:
        print(f"oxidav: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Ctrl-C before the server took over the signal, or in a command
        print("oxidav: interrupted", file=sys.stderr)
        return 130


def _check_installation(args: argparse.Namespace, settings: Settings) -> None:
    """Refuse a data dir that does not exist, unless the command may create an installation
    and was asked to (``--init``) or it is the default one. The other commands refuse it only
    when it would hold the database (no ``database_url``)."""
    if not getattr(args, "creates", False):
        if settings.database_url:
            return  # the database is elsewhere: the data dir holds at most blobs and config
        check_data_dir(settings, create=False, hint="`oxidav serve --init` creates one")
        return
    create = bool(getattr(args, "init", False)) or is_default_data_dir(settings)
    check_data_dir(settings, create=create)


if __name__ == "__main__":
    sys.exit(main())
