"""Running oxidav under cheroot: prepare the data dir, listen, stop cleanly on SIGINT/SIGTERM."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType
from typing import TextIO

from cheroot import wsgi

from oxidav.app import make_app
from oxidav.bootstrap import prepare
from oxidav.http_connection import BufferGateway, DirectSocketConnection
from oxidav.http_front import FrontServer
from oxidav.observability.metrics import Metrics
from oxidav.services import Services
from oxidav.settings import Settings
from oxidav.sweeper import Sweeper

log = logging.getLogger("oxidav.server")


def build_server(settings: Settings, services: Services) -> wsgi.Server:
    metrics = Metrics()
    server = FrontServer(
        (settings.host, settings.port),
        make_app(settings, services, metrics),
        numthreads=settings.threads,
        server_name="oxidav",
        timeout=60,
        request_queue_size=64,
        request_head_timeout=settings.request_head_timeout,
        max_request_head_bytes=settings.max_request_head_bytes,
    )
    server.ConnectionClass = DirectSocketConnection
    server.gateway = BufferGateway
    metrics.watch_server(server)
    return server


def serve(settings: Settings, out: TextIO = sys.stdout) -> int:
    """Serve until SIGINT or SIGTERM; return the process exit code."""
    services = Services.open(settings)
    admin_password = prepare(settings, services.db)
    server = build_server(settings, services)
    server.prepare()  # binds, so port 0 resolves to the real port
    host, port = server.bind_addr[:2]
    print(f"oxidav listening on http://{host}:{port}/remote.php/dav/", file=out, flush=True)
    if admin_password is not None:
        print(f"created user 'admin' with password: {admin_password}", file=out, flush=True)

    stop = threading.Event()

    def _on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s, stopping", signal.Signals(signum).name)
        stop.set()

    signal.signal(signal.SIGINT, _on_signal)
    signal.signal(signal.SIGTERM, _on_signal)
    worker = threading.Thread(target=server.serve, name="cheroot", daemon=True)
    worker.start()
    sweeper = Sweeper(services)
    sweeper.start()
    stop.wait()
    server.stop()
    worker.join(timeout=10)
    sweeper.stop()
    services.close()
    log.info("stopped")
    return 0
