"""examples/embed.py runs: the files provider in a plain WsgiDAV config next to another app."""

from __future__ import annotations

import base64
import http.client
import re
import subprocess
import sys
from pathlib import Path

from tests.support.files import propfind_props

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embed.py"
AUTH = {"Authorization": "Basic " + base64.b64encode(b"demo:demo").decode()}


def _request(port: int, method: str, path: str, body: bytes | None = None, **headers: str):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    conn.request(method, path, body=body, headers={**AUTH, **headers})
    response = conn.getresponse()
    result = response.status, dict(response.getheaders()), response.read()
    conn.close()
    return result


def test_embed_example_serves_dav_next_to_another_app(tmp_path: Path) -> None:
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--data-dir", str(tmp_path), "--port", "0"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        port = int(match.group(1))
        status, _, body = _request(port, "GET", "/")
        assert status == 200 and body.startswith(b"Hello from the host application")
        status, headers, _ = _request(port, "OPTIONS", "/dav/")
        assert status == 200 and headers["DAV"] == "1, 2, 3"
        assert _request(port, "MKCOL", "/dav/docs")[0] == 201
        assert _request(port, "PUT", "/dav/docs/n%C3%A9.txt", b"embedded")[0] == 201
        assert _request(port, "GET", "/dav/docs/n%C3%A9.txt")[2] == b"embedded"
        status, _, body = _request(port, "PROPFIND", "/dav/docs/", Depth="1")
        assert status == 207 and "/dav/docs/n%C3%A9.txt" in propfind_props(body)
        status, headers, _ = _request(
            port,
            "LOCK",
            "/dav/docs/n%C3%A9.txt",
            b'<?xml version="1.0"?><D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/>'
            b"</D:lockscope><D:locktype><D:write/></D:locktype></D:lockinfo>",
        )
        assert status == 200 and headers["Lock-Token"].startswith("<opaquelocktoken:")
        assert _request(port, "PUT", "/dav/docs/n%C3%A9.txt", b"no token")[0] == 423
        assert _request(port, "GET", "/dav/", Authorization="Basic eDp5")[0] == 401
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_embedders_import_paths_still_work() -> None:
    """The names embedders import keep working after the providers got subpackages."""
    from oxidav.providers import files, files_locks
    from oxidav.providers.files import locks, provider

    assert files.FilesProvider is provider.FilesProvider
    assert files.DbLockStorage is locks.DbLockStorage is files_locks.DbLockStorage
