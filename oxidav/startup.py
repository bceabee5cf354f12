"""What a command checks before it touches an installation, and how a mistake is told.

A start-up mistake (the data dir missing or not creatable, the database or the blob store not
reachable, the port taken) is a ``StartupError``: ``oxidav.cli`` prints its message as one line
and exits 2. Each message names the problem and the setting that decides it.

An installation is private to the server's user: the data dir and the blob folders 0700, the
database and blob files 0600. ``make_private`` narrows what a new installation created (after
the process umask 077 of ``oxidav.cli``, and whatever umask an embedding process has);
``wide_paths`` finds what an existing one leaves open, for the warning ``oxidav serve`` prints
(it changes nothing an operator set).
"""

from __future__ import annotations

import errno
import os
import re
import socket
import stat
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError

from oxidav.settings import Settings

#: Modes of what an installation holds (the umask can only narrow them further).
PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600
#: The process umask of every oxidav command: whatever it creates is its user's alone.
PROCESS_UMASK = 0o077


class StartupError(Exception):
    """A mistake that stops a command before it starts; the message is one line."""


def _reason(exc: BaseException) -> str:
    """The short reason of an ``OSError`` (``permission denied``), else the first line of the
    exception's text."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return os.strerror(exc.errno).lower()
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def is_default_data_dir(settings: Settings) -> bool:
    """The data dir is the default ``./oxidav-data`` (of the current folder)."""
    return settings.data_dir == Path(Settings.data_dir).absolute()


def check_data_dir(
    settings: Settings, create: bool, hint: str = "pass --init to create a new installation there"
) -> bool:
    """Make sure the data dir exists: a missing one is created (0700) only when ``create``
    (else ``StartupError`` with ``hint``); True when it was created here."""
    path = settings.data_dir
    if path.is_dir():
        return False
    if path.exists():
        raise StartupError(f"the data dir {path} is not a folder; set --data-dir / OXIDAV_DATA_DIR")
    if not create:
        raise StartupError(
            f"the data dir {path} does not exist; check --data-dir / OXIDAV_DATA_DIR, or {hint}"
        )
    try:
        path.mkdir(mode=PRIVATE_DIR, parents=True)
        path.chmod(PRIVATE_DIR)
    except OSError as exc:
        raise StartupError(
            f"cannot create the data dir {path} ({_reason(exc)}); set --data-dir / OXIDAV_DATA_DIR"
        ) from exc
    return True


def sqlite_path(settings: Settings) -> Path | None:
    """The SQLite database file, or None for another database (or an in-memory one)."""
    try:
        url = make_url(settings.resolved_database_url)
    except ArgumentError:
        return None
    if url.get_backend_name() != "sqlite" or not url.database or url.database == ":memory:":
        return None
    return Path(url.database).absolute()


def _shown_url(settings: Settings) -> str:
    try:
        return make_url(settings.resolved_database_url).render_as_string(hide_password=True)
    except ArgumentError:
        return repr(settings.resolved_database_url)


def database_error(settings: Settings, exc: BaseException) -> StartupError:
    """The one line for a database that cannot be opened or reached."""
    where = "set database_url / OXIDAV_DATABASE_URL"
    if isinstance(exc, (ArgumentError, NoSuchModuleError)):
        return StartupError(f"database_url is not a usable database URL ({_reason(exc)}); {where}")
    reason = _reason(exc.orig if isinstance(exc, DBAPIError) and exc.orig else exc)
    path = sqlite_path(settings)
    if path is not None:
        return StartupError(
            f"cannot open the SQLite database {path} ({reason}); check that folder's "
            f"permissions, or {where}"
        )
    return StartupError(f"cannot reach the database {_shown_url(settings)} ({reason}); {where}")


def blob_store_error(settings: Settings, exc: BaseException) -> StartupError:
    """The one line for a blob store that cannot be opened or reached."""
    return StartupError(
        f"the blob store {settings.resolved_blob_store} is not usable ({_reason(exc)}); "
        "set blob_store / OXIDAV_BLOB_STORE"
    )


def listen_error(settings: Settings, exc: OSError) -> StartupError:
    """The one line for a socket that cannot be bound (cheroot keeps only the text of the
    ``OSError`` of each address it tried: the last ``[Errno N]`` in it is the reason)."""
    address = f"{settings.host}:{settings.port}"
    code = exc.errno
    if code is None:
        found = re.findall(r"\[Errno (\d+)\]", str(exc))
        code = int(found[-1]) if found else None
    reason = os.strerror(code).lower() if code is not None else _reason(exc)
    if code in (errno.EADDRINUSE, errno.EACCES):
        where = "set --port / OXIDAV_PORT"
    else:
        where = "set --host / OXIDAV_HOST"
    return StartupError(f"cannot listen on {address} ({reason}); {where}")


def listen_addresses(
    settings: Settings,
) -> Sequence[tuple[socket.AddressFamily, socket.SocketKind, int, str, Any]]:
    """``getaddrinfo`` of the listening address, or the one line for a host that resolves to
    nothing."""
    try:
        return socket.getaddrinfo(
            settings.host, settings.port, socket.AF_UNSPEC, socket.SOCK_STREAM, 0, socket.AI_PASSIVE
        )
    except socket.gaierror as exc:
        raise StartupError(
            f"cannot listen on {settings.host}:{settings.port} ({exc.strerror}); "
            "set --host / OXIDAV_HOST"
        ) from None


def check_listen(settings: Settings) -> None:
    """Bind the listening address once and let it go, so a port in use or an address not of
    this machine is told before anything else starts (port 0 always binds)."""
    if settings.port == 0:
        return
    family, kind, proto, _name, address = listen_addresses(settings)[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(address)
        except OSError as exc:
            raise listen_error(settings, exc) from None


def _installation_paths(settings: Settings) -> list[Path]:
    """The data dir and what a new installation puts in it: the SQLite file and its -wal and
    -shm files, the local blob root, the config file."""
    paths = [settings.data_dir]
    database = sqlite_path(settings)
    if database is not None:
        paths += [database, Path(f"{database}-wal"), Path(f"{database}-shm")]
    if not settings.blob_store:
        paths.append(settings.data_dir / "blobs")
    paths.append(settings.data_dir / "oxidav.toml")
    return [path for path in paths if path.exists()]


def make_private(settings: Settings) -> None:
    """Narrow a new installation's folders to 0700 and files to 0600 (blob files are created
    0600 by the local store)."""
    for path in _installation_paths(settings):
        mode = PRIVATE_DIR if path.is_dir() else PRIVATE_FILE
        if stat.S_IMODE(path.stat().st_mode) & ~mode:
            path.chmod(stat.S_IMODE(path.stat().st_mode) & mode)


def wide_paths(settings: Settings) -> list[tuple[Path, int]]:
    """The installation's paths (and their modes) that other users may read or enter."""
    wide = []
    for path in _installation_paths(settings):
        mode = stat.S_IMODE(path.stat().st_mode)
        if mode & 0o077:
            wide.append((path, mode))
    return wide


def wide_warning(settings: Settings) -> str | None:
    """One line about an installation other users can read, or None."""
    wide = wide_paths(settings)
    if not wide:
        return None
    shown = ", ".join(f"{path} ({mode:04o})" for path, mode in wide)
    fix = " ".join(sorted({str(_fix_root(settings, path)) for path, _ in wide}))
    return (
        f"other users can read this installation: {shown}; "
        f"to keep it private run: chmod -R go-rwx {fix}"
    )


def _fix_root(settings: Settings, path: Path) -> Path:
    return settings.data_dir if path.is_relative_to(settings.data_dir) else path


__all__ = [
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "PROCESS_UMASK",
    "StartupError",
    "blob_store_error",
    "check_data_dir",
    "check_listen",
    "database_error",
    "is_default_data_dir",
    "listen_error",
    "make_private",
    "sqlite_path",
    "wide_paths",
    "wide_warning",
]
