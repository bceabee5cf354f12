"""One serving process under cheroot: listen, serve, stop gracefully on SIGINT/SIGTERM.

``run_server`` is one serving process: its own ``Services``, its cheroot server
(``build_server``) and — in one process only — the sweeper. ``oxidav.workers.serve`` runs it
in this process (``workers = 1``) or in each of the workers it pre-forks.

The first SIGINT or SIGTERM stops accepting connections and closes the idle ones; the requests
under way get ``shutdown_timeout`` seconds to finish (``FrontServer.stop``), then their
connections are cut; the sweeper stops, the services close and the process exits 0. A second
signal ends the process at once (exit 128 + the signal's number), as does a worker that is
still stuck ``STOP_GRACE_SECONDS`` after the cut (exit 1). A start-up mistake (database, blob
store, port) is a one-line ``StartupError``.
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from types import FrameType
from typing import TextIO

from cheroot import wsgi
from cheroot.ssl import Adapter

from oxidav.app import make_app
from oxidav.connection_shares import WorkerShare
from oxidav.http_connection import BufferGateway, DirectSocketConnection
from oxidav.http_front import FrontServer
from oxidav.observability.metrics import Metrics
from oxidav.presence import register_server
from oxidav.services import Services
from oxidav.settings import Settings
from oxidav.startup import blob_store_error, listen_error, wide_warning
from oxidav.sweeper import Sweeper
from oxidav.tls import tls_adapter

log = logging.getLogger("oxidav.server")

#: How long after ``shutdown_timeout`` (and the cut of what was still served) the process waits
#: for its workers before it exits regardless.
STOP_GRACE_SECONDS = 10.0
#: Connections the kernel queues for ``accept`` on the listening socket.
LISTEN_BACKLOG = 64


def build_server(
    settings: Settings,
    services: Services,
    ssl_adapter: Adapter | None = None,
    listening_socket: socket.socket | None = None,
    connection_share: WorkerShare | None = None,
) -> wsgi.Server:
    """The cheroot server of ``settings``; HTTPS with ``ssl_adapter`` (default: the one of
    ``tls_cert`` / ``tls_key``, if set); on ``listening_socket`` when given (a worker of the
    supervisor), else on a socket it binds itself; ``connection_share``: the worker's count among
    its siblings on that socket (``oxidav.connection_shares``)."""
    metrics = Metrics()
    server = FrontServer(
        (settings.host, settings.port),
        make_app(settings, services, metrics),
        numthreads=settings.threads,
        server_name="oxidav",
        timeout=60,
        request_queue_size=LISTEN_BACKLOG,
        request_head_timeout=settings.request_head_timeout,
        max_request_head_bytes=settings.max_request_head_bytes,
        listening_socket=listening_socket,
        connection_share=connection_share,
    )
    server.ConnectionClass = DirectSocketConnection
    server.gateway = BufferGateway
    server.ssl_adapter = ssl_adapter or tls_adapter(settings)
    metrics.watch_server(server)
    return server


def run_server(
    settings: Settings,
    services: Services,
    ssl_adapter: Adapter | None,
    *,
    out: TextIO | None = None,
    admin_password: str | None = None,
    listening_socket: socket.socket | None = None,
    connection_share: WorkerShare | None = None,
    sweep: bool = True,
) -> int:
    """Serve ``services`` from this process until SIGTERM (or SIGINT); ``out``: where the
    listening line goes (a worker of the supervisor prints nothing, the supervisor did)."""
    # Registered before the first request; refused while a blob migration switches stores.
    try:
        presence = register_server(
            services.db,
            settings.resolved_blob_store,
            supervisor=os.getppid() if listening_socket is not None else None,
        )
    except Exception:
        services.close()
        raise
    if out is not None:
        warning = wide_warning(settings)
        if warning is not None:
            log.warning("%s", warning)
    try:
        services.blobs.store.health_check()
    except Exception as exc:  # any failure of the store's probe is a start-up mistake
        presence.stop()
        services.close()
        raise blob_store_error(settings, exc) from None
    server = build_server(settings, services, ssl_adapter, listening_socket, connection_share)
    server.shutdown_timeout = settings.shutdown_timeout
    try:
        server.prepare()  # binds, so port 0 resolves to the real port
    except OSError as exc:
        presence.stop()
        services.close()
        raise listen_error(settings, exc) from None
    host, port = server.bind_addr[:2]
    scheme = "https" if server.ssl_adapter is not None else "http"

    stop = threading.Event()

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if stop.is_set():
            os.write(2, f"oxidav: {name} again, exiting at once\n".encode())
            os._exit(128 + signum)
        log.info(
            "received %s: accepting nothing new; requests under way have %gs to finish",
            name,
            settings.shutdown_timeout,
        )
        stop.set()

    signal.signal(signal.SIGTERM, _on_signal)
    if listening_socket is None:
        signal.signal(signal.SIGINT, _on_signal)
    if out is not None:
        print(f"oxidav listening on {scheme}://{host}:{port}/remote.php/dav/", file=out, flush=True)
        if admin_password is not None:
            print(f"created user 'admin' with password: {admin_password}", file=out, flush=True)
    if connection_share is not None:
        connection_share.serve()
    worker = threading.Thread(target=server.serve, name="cheroot", daemon=True)
    worker.start()
    sweeper = Sweeper(services) if sweep else None
    if sweeper is not None:
        sweeper.start()
    stop.wait()
    if connection_share is not None:
        connection_share.leave()
    stopper = threading.Thread(target=server.stop, name="oxidav-stop", daemon=True)
    stopper.start()
    stopper.join(settings.shutdown_timeout + STOP_GRACE_SECONDS)
    if stopper.is_alive():
        log.error("requests still running after the shutdown timeout was cut; exiting")
        logging.shutdown()
        os._exit(1)
    worker.join(timeout=10)
    if sweeper is not None:
        sweeper.stop()
    presence.stop()
    services.close()
    log.info("stopped")
    return 0
