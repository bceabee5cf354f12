"""Running oxidav under cheroot: prepare the data dir, listen, stop cleanly on SIGINT/SIGTERM."""

from __future__ import annotations

import logging
import signal
import sys
import threading
from types import FrameType
from typing import TextIO

from cheroot import wsgi
from cheroot.ssl import Adapter

from oxidav.app import make_app
from oxidav.bootstrap import prepare
from oxidav.http_connection import BufferGateway, DirectSocketConnection
from oxidav.http_front import FrontServer
from oxidav.response_guard import current_request_id
from oxidav.services import Services
from oxidav.settings import Settings
from oxidav.sweeper import Sweeper
from oxidav.tls import tls_adapter

log = logging.getLogger("oxidav.server")


class _RequestIdFilter(logging.Filter):
    """Gives every record the id of the request its thread serves ("-" outside one)."""

    def filter(self, record: logging.LogRecord) -> bool:
        record.request_id = current_request_id.get()
        return True


def configure_logging(level: str) -> None:
    """One stream for oxidav's, cheroot's and WsgiDAV's loggers, each line with the request id
    (``[-]`` outside a request)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(request_id)s]: %(message)s")
    )
    handler.addFilter(_RequestIdFilter())
    logging.basicConfig(level=level.upper(), handlers=[handler])
    # WsgiDAV logs every DAVError at INFO/WARNING; our access log already has one line each,
    # and oxidav.errors the failures. Its records go to the handler above (no handler of its own).
    wsgidav_log = logging.getLogger("wsgidav")
    wsgidav_log.setLevel(logging.WARNING)
    wsgidav_log.handlers.clear()
    wsgidav_log.propagate = True


def build_server(
    settings: Settings, services: Services, ssl_adapter: Adapter | None = None
) -> wsgi.Server:
    """The cheroot server of ``settings``; HTTPS with ``ssl_adapter`` (default: the one of
    ``tls_cert`` / ``tls_key``, if set)."""
    server = FrontServer(
        (settings.host, settings.port),
        make_app(settings, services),
        numthreads=settings.threads,
        server_name="oxidav",
        timeout=60,
        request_queue_size=64,
        request_head_timeout=settings.request_head_timeout,
        max_request_head_bytes=settings.max_request_head_bytes,
    )
    server.ConnectionClass = DirectSocketConnection
    server.gateway = BufferGateway
    server.ssl_adapter = ssl_adapter or tls_adapter(settings)
    return server


def serve(settings: Settings, out: TextIO = sys.stdout) -> int:
    """Serve until SIGINT or SIGTERM; return the process exit code."""
    ssl_adapter = tls_adapter(settings)  # a bad certificate stops us before anything is written
    services = Services.open(settings)
    admin_password = prepare(settings, services.db)
    server = build_server(settings, services, ssl_adapter)
    server.prepare()  # binds, so port 0 resolves to the real port
    host, port = server.bind_addr[:2]
    scheme = "https" if ssl_adapter is not None else "http"
    print(f"oxidav listening on {scheme}://{host}:{port}/remote.php/dav/", file=out, flush=True)
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
