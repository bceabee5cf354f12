"""A real nginx (Debian's package) in front of oxidav for tests: a temporary prefix and config,
run in the foreground (``daemon off``, one process) on a free port, TLS with a test
certificate, proxying to one or more oxidav upstreams (round robin, no stickiness).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from tests.support.tls import CertFiles

CONFIG = """\
daemon off;
master_process off;
worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 512; }}
http {{
    access_log {prefix}/access.log;
    client_body_temp_path {prefix}/body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;
    upstream oxidav {{
{servers}
        keepalive 16;
    }}
    server {{
        listen 127.0.0.1:{port} ssl;
        ssl_certificate {cert};
        ssl_certificate_key {key};
        client_max_body_size 0;
{well_known}
        location {location} {{
            proxy_pass http://oxidav;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $http_host;
            proxy_request_buffering off;
            proxy_buffering off;
            proxy_read_timeout 300s;
            proxy_next_upstream error timeout;
        }}
    }}
}}
"""


def nginx_available() -> bool:
    return shutil.which("nginx") is not None or Path("/usr/sbin/nginx").exists()


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def nginx_proxy(
    prefix: Path, upstreams: Sequence[str], cert: CertFiles, base_path: str = ""
) -> Iterator[int]:
    """Run nginx proxying https://127.0.0.1:PORT/ to ``upstreams`` (``host:port``); yields
    PORT once nginx accepts connections. With ``base_path`` (``/cloud``) only that path is
    proxied, as it is (oxidav's own ``base_path``), and the host's ``/.well-known/caldav``
    and ``carddav`` redirect below it, as docs/deployment.md configures nginx."""
    prefix.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    servers = "\n".join(f"        server {upstream} max_fails=0;" for upstream in upstreams)
    config = prefix / "nginx.conf"
    well_known = "".join(
        f"        location = /.well-known/{dav} {{ return 301 {base_path}/remote.php/dav/; }}\n"
        for dav in ("caldav", "carddav")
        if base_path
    )
    config.write_text(
        CONFIG.format(
            prefix=prefix,
            servers=servers,
            port=port,
            cert=cert.cert,
            key=cert.key,
            well_known=well_known,
            location=f"{base_path}/" if base_path else "/",
        )
    )
    binary = shutil.which("nginx") or "/usr/sbin/nginx"
    process = subprocess.Popen(
        [binary, "-p", str(prefix), "-c", str(config), "-e", str(prefix / "error.log")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"nginx exited: {(prefix / 'error.log').read_text()}")
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
