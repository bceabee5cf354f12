"""``oxidav serve``: one serving process, or a supervisor and N pre-forked ones on one socket.

``serve`` checks what can be checked before anything starts (the TLS files, the port), then
serves from this process (``workers = 1``, ``oxidav.server.run_server``) or supervises
``workers`` processes (``supervise``).

The supervisor prepares the data once (migrations, the first admin), checks the blob store,
binds the listening socket and prints the listening line, then forks the workers. It holds no
database connection, thread or blob store client when it forks: each worker opens its own
``Services`` after the fork and serves the inherited socket (``run_server``); worker 0 also
runs the sweeper. Every worker is a full server: what must agree across them lives in the
database (locks, the login throttle, sessions, the caches' generations), as it does across
hosts on PostgreSQL; on SQLite their writers queue on one file lock (``oxidav.db.engine``).
The workers also share their connection counts (``oxidav.connection_shares``), so new
connections spread evenly over them.

Signals: the supervisor waits in ``sigwaitinfo`` (no polling). A worker that dies is reaped
and replaced by a new one in its slot, logged; if workers die ``CRASH_LIMIT`` times within
``CRASH_WINDOW_SECONDS`` the supervisor gives up, stops the others and exits 1 (a worker that
dies at start-up would otherwise be forked forever). The first SIGINT or SIGTERM is passed on
to every worker as SIGTERM (each finishes what it serves, ``shutdown_timeout``) and the
supervisor exits 0 once all are gone; a second one kills them at once (exit 128 + the
signal's number). Workers ignore SIGINT: a terminal's Ctrl-C reaches the whole process group,
and the supervisor decides. A supervisor killed outright (SIGKILL) takes its workers with it
(``PR_SET_PDEATHSIG``), so no orphan keeps the port.

The Prometheus metrics of all workers are summed at scrape time from files in a directory
the supervisor owns (prometheus_client's multiprocess mode, ``oxidav.observability.shared``).
"""

from __future__ import annotations

import ctypes
import gc
import logging
import os
import signal
import socket
import sys
import time
from collections import deque
from contextlib import suppress
from typing import TextIO

from cheroot.ssl import Adapter

from oxidav.bootstrap import prepare
from oxidav.connection_shares import ConnectionShares, WorkerShare
from oxidav.db import Database
from oxidav.db.engine import POOL_CONNECTIONS_MAX
from oxidav.http_front import FrontServer
from oxidav.observability.shared import forget_worker
from oxidav.presence import register_server
from oxidav.process_memory import limit_malloc_arenas, raise_gc_threshold
from oxidav.server import LISTEN_BACKLOG, STOP_GRACE_SECONDS, run_server
from oxidav.services import Services
from oxidav.settings import Settings
from oxidav.startup import (
    StartupError,
    blob_store_error,
    check_listen,
    listen_addresses,
    listen_error,
    wide_warning,
)
from oxidav.tls import tls_adapter

log = logging.getLogger("oxidav.workers")

#: The supervisor gives up once workers have died this many times within the window.
CRASH_LIMIT = 5
CRASH_WINDOW_SECONDS = 30.0
#: Linux prctl option: the signal a process gets when its parent dies.
PR_SET_PDEATHSIG = 1
_WATCHED = {signal.SIGINT, signal.SIGTERM, signal.SIGCHLD}


def open_listening_socket(settings: Settings) -> socket.socket:
    """The socket every worker accepts from, bound and listening (as cheroot binds its own:
    the first address of ``host`` that binds, SO_REUSEADDR unless port 0, TCP_NODELAY)."""
    address = (settings.host, settings.port)
    infos = listen_addresses(settings)
    failure = OSError(f"no address of {settings.host} could be bound")
    for family, kind, proto, _name, _address in infos:
        try:
            sock = FrontServer.prepare_socket(address, family, kind, proto, True, None)
            assert isinstance(sock, socket.socket)
        except OSError as exc:
            failure = exc
            continue
        try:
            sock.bind(address)
            sock.listen(LISTEN_BACKLOG)
        except OSError as exc:
            sock.close()
            failure = exc
            continue
        return sock
    raise listen_error(settings, failure)


def connections_warning(db: Database, workers: int) -> str | None:
    """One line when ``workers`` processes may open more PostgreSQL connections than the
    server accepts (``max_connections``): under load some requests would then fail."""
    if db.is_sqlite:
        return None
    with db.engine.connect() as connection:
        limit = int(connection.exec_driver_sql("SHOW max_connections").scalar_one())
    most = workers * POOL_CONNECTIONS_MAX
    if most <= limit:
        return None
    return (
        f"{workers} workers may open up to {most} PostgreSQL connections "
        f"({POOL_CONNECTIONS_MAX} each) and the server allows {limit} (max_connections): "
        "set workers (OXIDAV_WORKERS) lower or raise max_connections"
    )


def _prepare_data(settings: Settings, workers: int) -> str | None:
    """Migrations, the first admin and the blob store's probe, once, before any fork; the
    new admin's password or None. Everything opened here is closed again."""
    services = Services.open(settings)
    try:
        admin_password = prepare(settings, services.db)
        warning = connections_warning(services.db, workers)
        if warning is not None:
            log.warning("%s", warning)
        # Refused here, once, with the one line, if a blob migration holds the data.
        register_server(services.db, settings.resolved_blob_store).stop()
        try:
            services.blobs.store.health_check()
        except Exception as exc:  # any failure of the store's probe is a start-up mistake
            raise blob_store_error(settings, exc) from None
    finally:
        services.close()
    return admin_password


def _die_with(supervisor: int) -> None:
    """Have the kernel kill this worker when the supervisor dies (Linux ``PR_SET_PDEATHSIG``):
    a supervisor killed outright takes its workers along, and their socket with them."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != supervisor:  # it died before the request took effect
        os._exit(1)


def _worker_main(
    settings: Settings,
    sock: socket.socket,
    slot: int,
    ssl_adapter: Adapter | None,
    share: WorkerShare,
    parent: int,
) -> int:
    """The body of a forked worker (never returns into the supervisor's code)."""
    _die_with(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, set())
    services = Services.open(settings)
    return run_server(
        settings,
        services,
        ssl_adapter,
        listening_socket=sock,
        connection_share=share,
        sweep=slot == 0,
    )


def _fork_worker(
    settings: Settings,
    sock: socket.socket,
    slot: int,
    ssl_adapter: Adapter | None,
    share: WorkerShare,
) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    parent = os.getpid()
    pid = os.fork()
    if pid:
        return pid
    code = 1
    try:
        code = _worker_main(settings, sock, slot, ssl_adapter, share, parent)
    except StartupError as exc:
        log.error("worker %d: %s", slot, exc)
    except BaseException:
        log.exception("worker %d failed", slot)
    finally:
        logging.shutdown()
        os._exit(code)


def _exit_code(status: int) -> str:
    if os.WIFSIGNALED(status):
        return f"was killed by {signal.Signals(os.WTERMSIG(status)).name}"
    return f"exited with {os.waitstatus_to_exitcode(status)}"


class _Workers:
    """The slots and the processes now in them."""

    def __init__(
        self, settings: Settings, sock: socket.socket, ssl: Adapter | None, count: int
    ) -> None:
        self.settings = settings
        self.sock = sock
        self.ssl = ssl
        self.slots: dict[int, int] = {}  # pid -> slot
        self.shares = ConnectionShares(count)

    def start(self, slot: int) -> None:
        share = self.shares.worker(slot)
        self.slots[_fork_worker(self.settings, self.sock, slot, self.ssl, share)] = slot

    def reap(self) -> list[tuple[int, int, int]]:
        """(pid, slot, wait status) of every worker that ended since the last call."""
        ended = []
        while self.slots:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            slot = self.slots.pop(pid, None)
            if slot is not None:
                self.shares.vacate(slot)
                forget_worker(pid)
                ended.append((pid, slot, status))
        return ended

    def signal_all(self, signum: int) -> None:
        for pid in self.slots:
            with suppress(ProcessLookupError):
                os.kill(pid, signum)


def supervise(
    settings: Settings, count: int, ssl_adapter: Adapter | None, out: TextIO = sys.stdout
) -> int:
    """Prepare, bind, fork ``count`` workers and keep them running until SIGINT / SIGTERM."""
    admin_password = _prepare_data(settings, count)
    warning = wide_warning(settings)
    if warning is not None:
        log.warning("%s", warning)
    sock = open_listening_socket(settings)
    host, port = sock.getsockname()[:2]
    settings = settings.replace(port=port)
    scheme = "https" if ssl_adapter is not None else "http"
    signal.pthread_sigmask(signal.SIG_BLOCK, _WATCHED)
    signal.signal(signal.SIGCHLD, lambda _signum, _frame: None)  # delivered only by sigwait
    # What the supervisor imported is shared with the workers until written to: kept out of
    # their garbage collector's sweeps, those pages stay shared (copy-on-write).
    gc.collect()
    gc.freeze()
    workers = _Workers(settings, sock, ssl_adapter, count)
    for slot in range(count):
        workers.start(slot)
    print(f"oxidav listening on {scheme}://{host}:{port}/remote.php/dav/", file=out, flush=True)
    if admin_password is not None:
        print(f"created user 'admin' with password: {admin_password}", file=out, flush=True)
    log.info("serving with %d worker processes", count)
    deaths: deque[float] = deque(maxlen=CRASH_LIMIT)
    while True:
        received = signal.sigwaitinfo(_WATCHED)
        if received.si_signo != signal.SIGCHLD:
            return _stop(workers, signal.Signals(received.si_signo), settings)
        for pid, slot, status in workers.reap():
            deaths.append(time.monotonic())
            if len(deaths) == CRASH_LIMIT and deaths[-1] - deaths[0] < CRASH_WINDOW_SECONDS:
                log.error(
                    "workers died %d times within %gs (the last, %d, %s); stopping",
                    CRASH_LIMIT,
                    CRASH_WINDOW_SECONDS,
                    pid,
                    _exit_code(status),
                )
                _stop(workers, signal.SIGTERM, settings)
                return 1
            log.error("worker %d (pid %d) %s; starting another", slot, pid, _exit_code(status))
            workers.start(slot)


def _stop(workers: _Workers, received: signal.Signals, settings: Settings) -> int:
    """Pass SIGTERM on, wait for every worker; a second SIGINT / SIGTERM kills them."""
    log.info(
        "received %s: stopping %d workers; requests under way have %gs to finish",
        received.name,
        len(workers.slots),
        settings.shutdown_timeout,
    )
    workers.sock.close()
    workers.signal_all(signal.SIGTERM)
    deadline = time.monotonic() + settings.shutdown_timeout + 2 * STOP_GRACE_SECONDS
    while workers.slots:
        workers.reap()
        left = deadline - time.monotonic()
        if not workers.slots:
            break
        if left <= 0:
            log.error("workers still running after the shutdown timeout; killing them")
            workers.signal_all(signal.SIGKILL)
            deadline = time.monotonic() + STOP_GRACE_SECONDS
            continue
        again = signal.sigtimedwait(_WATCHED, left)
        if again is not None and again.si_signo != signal.SIGCHLD:
            name = signal.Signals(again.si_signo).name
            os.write(2, f"oxidav: {name} again, exiting at once\n".encode())
            workers.signal_all(signal.SIGKILL)
            workers.reap()
            return 128 + again.si_signo
    log.info("stopped")
    return 0


def serve(settings: Settings, out: TextIO = sys.stdout) -> int:
    """Serve until SIGINT or SIGTERM; return the process exit code."""
    limit_malloc_arenas()  # before any thread starts
    raise_gc_threshold()  # forked workers inherit it
    ssl_adapter = tls_adapter(settings)  # a bad certificate stops us before anything is written
    check_listen(settings)
    workers = settings.resolved_workers
    if workers > 1:
        return supervise(settings, workers, ssl_adapter, out)
    services = Services.open(settings)
    try:
        admin_password = prepare(settings, services.db)
    except Exception:
        services.close()
        raise
    return run_server(settings, services, ssl_adapter, out=out, admin_password=admin_password)
