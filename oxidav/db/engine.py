"""Engines and sessions for SQLite (embedded default) and PostgreSQL (several processes).

``Database`` is the one handle the rest of oxidav holds: ``read()`` for a plain session and
``write()`` for a session whose transaction takes the write lock up front. On SQLite that is
``BEGIN IMMEDIATE`` — two writers that both start with a deferred ``BEGIN`` and later upgrade to
a write lock would otherwise fail with "database is locked" instead of waiting their turn. On
PostgreSQL both are ordinary transactions; row locks do the rest.

SQLite admits one writer at a time; the writers of one process first queue on a process-wide
mutex, then the processes' writers on an ``flock`` of ``oxidav.db-writers.lock`` (each woken
the moment the previous writer commits) rather than sleep in SQLite's busy handler.

On SQLite a commit is written to the WAL and survives a crash or kill of the process; whether
it is also synced to the disk before the commit returns is ``sqlite_synchronous``
(``SQLITE_SYNCHRONOUS``): ``normal`` (the default, SQLite's advice for WAL) syncs the WAL at
checkpoints only, so a power loss or kernel crash may roll back the last commits before it
(the database stays consistent, a file's content and its node row commit together); ``full``
syncs the WAL at every commit. PostgreSQL's own ``synchronous_commit`` decides the same there.
SQLite checkpoints the WAL in the commit that takes it past
``SQLITE_WAL_AUTOCHECKPOINT_PAGES`` (a WAL of up to 32 MiB).

On SQLite each thread also keeps one connection for single reads and one for ``write_core``
transactions (``_PerThread``), detached from the pool.

``core(session)`` is the session's connection for pre-built Core statements: the hot paths
(tree reads and writes, lock checks) build their statements once at import and execute them
with parameters, skipping per-call statement construction and the ORM execution layer.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any, Generic, TypeVar

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.orm import Session, sessionmaker
from sqlalchemy.pool import NullPool

from oxidav.backends import is_missing, missing_backend
from oxidav.settings import SQLITE_SYNCHRONOUS

SQLITE_BUSY_TIMEOUT_MS = 30_000
#: WAL pages after which a commit checkpoints (SQLite's default: 1000; module docstring).
SQLITE_WAL_AUTOCHECKPOINT_PAGES = 8000
_IMMEDIATE = "oxidav_begin_immediate"
#: The PostgreSQL driver oxidav uses (``psycopg2-binary``, the ``postgres`` extra; without it a
#: PostgreSQL URL is a ``MissingBackendError``). A URL that names no driver gets
#: it: SQLAlchemy 2.1 made ``postgresql://`` mean psycopg 3, which oxidav does not install.
POSTGRES_DRIVER = "postgresql+psycopg2"
#: A pooled PostgreSQL connection idle at least this long (seconds) is pinged before it is lent.
PING_AFTER_IDLE_SECONDS = 0.5
_IDLE_SINCE = "oxidav_idle_since"


def _configure_sqlite(engine: Engine, synchronous: str) -> None:
    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # pysqlite's own transaction handling is switched off (isolation_level=None) so that the
        # "begin" hook below decides how each transaction starts.
        dbapi_conn.isolation_level = None
        cursor = dbapi_conn.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA wal_autocheckpoint={SQLITE_WAL_AUTOCHECKPOINT_PAGES}")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        immediate = conn.get_execution_options().get(_IMMEDIATE, False)
        statement = "BEGIN IMMEDIATE" if immediate else "BEGIN"
        # Straight to the driver: a statement through SQLAlchemy costs more than the BEGIN, and
        # every request opens several transactions. Errors keep SQLAlchemy's wrapping.
        try:
            conn.connection.dbapi_connection.execute(statement)
        except sqlite3.Error as exc:
            raise OperationalError(statement, None, exc) from exc


def database_url(url: str | URL) -> URL:
    """``url`` parsed, with oxidav's PostgreSQL driver when it names none: ``postgresql://``
    and ``postgres://`` (the spelling of many hosting providers) mean ``postgresql+psycopg2://``.
    A URL that names a driver keeps it."""
    parsed = make_url(url)
    if parsed.drivername in ("postgresql", "postgres"):
        return parsed.set(drivername=POSTGRES_DRIVER)
    return parsed


#: Connections a PostgreSQL pool keeps; as many again may be opened beyond them under load.
POOL_SIZE = 10
#: The most PostgreSQL connections one process opens (``POOL_SIZE`` plus the overflow).
POOL_CONNECTIONS_MAX = 2 * POOL_SIZE


def make_engine(
    url: str | URL,
    *,
    pool_size: int = POOL_SIZE,
    sqlite_synchronous: str = SQLITE_SYNCHRONOUS[0],
) -> Engine:
    """Create an engine for ``url`` with oxidav's connection settings.

    SQLite gets WAL (synced as ``sqlite_synchronous`` says), foreign keys, a busy timeout and
    explicit transaction control; a memory database is refused because every connection would
    see a different, empty database.
    PostgreSQL gets a bounded pool whose connections are pinged before they are lent when they
    have sat idle (``_ping_when_idle``), so a restarted database server is survived.
    """
    parsed = database_url(url)
    if sqlite_synchronous not in SQLITE_SYNCHRONOUS:
        raise ValueError(f"sqlite_synchronous must be one of {', '.join(SQLITE_SYNCHRONOUS)}")
    if parsed.get_backend_name() == "sqlite":
        if parsed.database in (None, "", ":memory:"):
            raise ValueError("oxidav needs a file-backed SQLite database, not :memory:")
        engine = create_engine(
            parsed,
            connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000},
            poolclass=NullPool if parsed.query.get("nullpool") else None,
        )
        _configure_sqlite(engine, sqlite_synchronous)
        return engine
    try:
        engine = create_engine(parsed, pool_size=pool_size, max_overflow=pool_size)
    except ModuleNotFoundError as exc:
        if not is_missing(exc, "postgres"):
            raise
        raise missing_backend("database_url", "PostgreSQL", "postgres") from None
    _ping_when_idle(engine)
    return engine


def _ping_when_idle(engine: Engine) -> None:
    """Ping a pooled connection at checkout only if it has been idle ``PING_AFTER_IDLE_SECONDS``
    or longer (HikariCP's rule). SQLAlchemy's ``pool_pre_ping`` pings at every checkout: a
    round trip before every request's first statement, on a connection that was answering a
    moment ago. A failed ping is a ``DisconnectionError``: the pool drops that connection and
    lends a fresh one (a restarted server is noticed on the first checkout after the restart).
    A connection that breaks within the window fails its statement instead, and is replaced
    (through a ``Connection``, SQLAlchemy then also recycles the others the pool held)."""
    dialect = engine.dialect

    @event.listens_for(engine, "connect")
    def _on_connect(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkin")
    def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
        record.info[_IDLE_SINCE] = time.monotonic()

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
        since = record.info.get(_IDLE_SINCE)
        if since is not None and time.monotonic() - since < PING_AFTER_IDLE_SECONDS:
            return
        try:
            dialect.do_ping(dbapi_connection)
        except dialect.loaded_dbapi.Error as exc:
            if dialect.is_disconnect(exc, dbapi_connection, None):
                raise DisconnectionError(str(exc)) from exc
            raise


class _WriterQueue:
    """The queue of SQLite writers. Within a process a re-entrant mutex (a nested write in one
    thread meets SQLite's own lock, as without the queue), bounded by the busy timeout: a
    writer that waited that long goes on and lets SQLite's busy handler decide, so a stuck
    writer still fails with "database is locked" instead of hanging. Across processes (the
    workers of ``oxidav serve``, a CLI command beside them) the outermost writer of a process
    then takes an exclusive ``flock`` on ``lock_path``: the kernel wakes the next process's
    writer the moment the lock is let go, where SQLite's busy handler would sleep and retry.
    The lock is held only inside a write transaction, and the kernel drops it when its holder
    dies."""

    def __init__(self, lock_path: str | None = None) -> None:
        self._lock = threading.RLock()
        self._held = threading.local()
        self._lock_path = lock_path
        self._fd: int | None = None
        self._fd_pid = 0

    def _file(self) -> int | None:
        """This process's descriptor of the lock file (a forked child opens its own: a
        descriptor shared with the parent would share its lock)."""
        if self._lock_path is None:
            return None
        if self._fd is None or self._fd_pid != os.getpid():
            try:
                self._fd = os.open(self._lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
            except OSError:  # a read-only data dir: SQLite's busy handler alone arbitrates
                self._lock_path = None
                return None
            self._fd_pid = os.getpid()
        return self._fd

    def __enter__(self) -> None:
        stack: list[tuple[bool, int | None]] | None = getattr(self._held, "stack", None)
        if stack is None:
            stack = self._held.stack = []
        acquired = self._lock.acquire(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000)
        locked_fd = None
        if acquired and not stack:
            fd = self._file()
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
                locked_fd = fd
        stack.append((acquired, locked_fd))

    def __exit__(self, *exc: object) -> None:
        acquired, locked_fd = self._held.stack.pop()
        if locked_fd is not None:
            fcntl.flock(locked_fd, fcntl.LOCK_UN)
        if acquired:
            self._lock.release()

    def close(self) -> None:
        if self._fd is not None and self._fd_pid == os.getpid():
            os.close(self._fd)
        self._fd = None


_Held = TypeVar("_Held")
#: Page cache of each thread's read connection (SQLite's default is 2000 KiB).
READER_CACHE_KIB = 256


class _PerThread(Generic[_Held]):
    """One object per thread, kept open across requests (SQLite connections, made by
    ``open_one``): a checkout from the pool and its return cost more than the short statements
    they serve. The objects of threads that have ended are closed when the next one is opened;
    ``close`` closes them all, and a thread that asks again gets a new one."""

    def __init__(self, open_one: Callable[[], _Held], close_one: Callable[[_Held], None]) -> None:
        self._open_one = open_one
        self._close_one = close_one
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: list[tuple[weakref.ref[threading.Thread], _Held]] = []
        self._generation = 0

    def get(self) -> _Held:
        """This thread's object (opened on first use, and again after ``close``)."""
        held: tuple[int, _Held] | None = getattr(self._local, "held", None)
        if held is not None and held[0] == self._generation:
            return held[1]
        made = self._open_one()
        with self._lock:
            live = []
            for owner, other in self._open:
                thread = owner()
                if thread is None or not thread.is_alive():
                    self._close_one(other)
                else:
                    live.append((owner, other))
            live.append((weakref.ref(threading.current_thread()), made))
            self._open = live
            self._local.held = (self._generation, made)
        return made

    def discard(self) -> None:
        """Close this thread's object (it is broken); the next ``get`` opens a new one."""
        held: tuple[int, _Held] | None = getattr(self._local, "held", None)
        self._local.held = None
        if held is None:
            return
        with self._lock:
            self._open = [(owner, other) for owner, other in self._open if other is not held[1]]
        self._close_one(held[1])

    def close(self) -> None:
        with self._lock:
            self._generation += 1
            for _owner, made in self._open:
                self._close_one(made)
            self._open = []


def _open_reader(engine: Engine) -> Any:
    """A SQLite driver connection for single statements outside any transaction
    (``PreparedRead``): taken from the engine and detached from its pool, so the engine's
    ``connect`` hook configured it; it reads in autocommit (the driver's transaction handling
    is off), so each statement sees what is committed when it starts and holds no snapshot
    afterwards. A read touches a few index pages and the OS caches the file: a thread per
    request slot keeps one, each with a small page cache (``READER_CACHE_KIB``)."""
    fairy = engine.raw_connection()
    fairy.detach()
    connection: Any = fairy.dbapi_connection
    connection.execute(f"PRAGMA cache_size=-{READER_CACHE_KIB}")
    return connection


def _open_writer(write_bind: Engine) -> Connection:
    """A ``Connection`` for SQLite write transactions (``BEGIN IMMEDIATE`` through the
    engine's ``begin`` hook), detached from the pool: every thread of the server keeps one, and
    the pool is smaller than the thread count."""
    connection = write_bind.connect()
    connection.connection.detach()
    return connection


#: A write transaction's handle: an ORM ``Session`` (``Database.write``) or a Core
#: ``Connection`` (``Database.write_core``). Code that runs Core statements through ``core``
#: takes either.
Transaction = Session | Connection


def core(session: Transaction) -> Connection:
    """The connection of ``session``'s transaction, for pre-built Core statements (pending ORM
    changes are flushed first, as an ORM query would); a ``Connection`` (``Database.
    write_core``) is its own."""
    if isinstance(session, Connection):
        return session
    if session.new or session.dirty or session.deleted:
        session.flush()
    return session.connection()


def _writer_lock_path(engine: Engine) -> str | None:
    """The file SQLite writers of every process lock (``_WriterQueue``): beside the database
    file, which itself is not locked with ``flock`` (closing any descriptor of it would drop
    SQLite's own locks); None for an in-memory database."""
    database = engine.url.database
    if not database or database == ":memory:" or database.startswith("file:"):
        return None
    return database + "-writers.lock"


class Database:
    """The engine plus two session factories: one for reads, one for writes."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.is_sqlite = engine.dialect.name == "sqlite"
        write_bind = engine.execution_options(**{_IMMEDIATE: True}) if self.is_sqlite else engine
        self._write_bind = write_bind
        self._read = sessionmaker(bind=engine, expire_on_commit=False)
        self._write = sessionmaker(bind=write_bind, expire_on_commit=False)
        self._queue = _WriterQueue(_writer_lock_path(engine)) if self.is_sqlite else None
        self._writer: AbstractContextManager[Any] = self._queue or nullcontext()
        self._readers: _PerThread[Any] | None = None
        self._writers: _PerThread[Connection] | None = None
        if self.is_sqlite:
            self._readers = _PerThread(lambda: _open_reader(engine), lambda c: c.close())
            self._writers = _PerThread(lambda: _open_writer(write_bind), lambda c: c.close())

    @classmethod
    def from_url(cls, url: str | URL, sqlite_synchronous: str = SQLITE_SYNCHRONOUS[0]) -> Database:
        return cls(make_engine(url, sqlite_synchronous=sqlite_synchronous))

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A session for reading; rolled back and closed on exit."""
        with self._read() as session:
            try:
                yield session
            finally:
                session.rollback()

    @contextmanager
    def write(self) -> Iterator[Session]:
        """A session whose transaction commits on a clean exit and rolls back on an exception."""
        with self._writer, self._write() as session, session.begin():
            yield session

    @contextmanager
    def write_core(self) -> Iterator[Connection]:
        """``write()`` for Core statements only: the same write transaction (queued, ``BEGIN
        IMMEDIATE`` on SQLite), on a plain ``Connection`` — no ORM session to build and tear
        down (a small PUT's chunk claim is one statement). On SQLite each thread keeps its
        ``Connection`` (``_PerThread``): making one and the pool's checkout and return cost
        ~20 µs, as much as a small transaction's own work. A nested write in the same thread
        gets a fresh one, and one left broken by a failed rollback is replaced."""
        writers = self._writers
        with self._writer:
            kept = writers.get() if writers is not None else None
            if writers is None or kept is None or kept.in_transaction():  # PG, or nested
                with self._write_bind.begin() as connection:
                    yield connection
                return
            try:
                with kept.begin():
                    yield kept
            except BaseException:
                if kept.invalidated or kept.in_transaction():
                    writers.discard()
                raise

    @contextmanager
    def single_read(self) -> Iterator[Any]:
        """A driver connection for one statement outside any transaction (``oxidav.db.
        prepared.PreparedRead``): on SQLite this thread's own (``_ThreadReaders``), on
        PostgreSQL one from the pool (pinged if it sat idle; a connection found broken is
        invalidated), switched to autocommit while it is lent: the statement is its own
        transaction, so the driver sends no ``BEGIN`` before it and the pool's reset-on-return
        no ``ROLLBACK`` after it: the statement is the only round trip to the server."""
        if self._readers is not None:
            yield self._readers.get()
            return
        raw = self.engine.raw_connection()
        driver: Any = raw.driver_connection
        switched = getattr(driver, "autocommit", None) is False
        try:
            if switched:
                driver.autocommit = True
            yield raw
        except DBAPIError as exc:
            cause = exc.orig
            dialect = self.engine.dialect
            if isinstance(cause, dialect.loaded_dbapi.Error) and dialect.is_disconnect(
                cause, None, None
            ):
                raw.invalidate(cause)
            raise
        finally:
            try:
                if switched and raw.is_valid and not driver.closed:
                    driver.autocommit = False
            finally:
                raw.close()

    def dispose(self) -> None:
        for kept in (self._readers, self._writers):
            if kept is not None:
                kept.close()
        if self._queue is not None:
            self._queue.close()
        self.engine.dispose()
