"""A request sent straight to a WSGI app in this process, without HTTP: the in-process benches'
(``_put_cpu_worker``, ``gc_threshold``), as alice.

No import of ``oxidav`` or of the test support: ``_put_cpu_worker`` imports this before it
imports the ``oxidav`` package it measures.
"""

from __future__ import annotations

import base64
import io
import sys
from collections.abc import Callable, Mapping
from typing import Any

AUTH = "Basic " + base64.b64encode(b"alice:secret").decode()

App = Callable[..., Any]


def wsgi_request(
    app: App, method: str, path: str, body: bytes = b"", environ: Mapping[str, str] = {}
) -> tuple[str, bytes]:
    """``(status line, body)`` of ``method path`` with ``body`` as alice; ``environ``: more
    keys (``HTTP_DEPTH``, ``CONTENT_TYPE`` …). The answer is read whole and closed."""
    full = {
        "REQUEST_METHOD": method,
        "SCRIPT_NAME": "",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": AUTH,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.url_scheme": "http",
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
        **environ,
    }
    status: list[str] = []

    def start_response(line: str, headers: list[tuple[str, str]], exc_info: Any = None) -> None:
        status.append(line)

    answer = app(full, start_response)
    try:
        body_out = b"".join(answer)
    finally:
        getattr(answer, "close", lambda: None)()
    return status[0], body_out
