"""HTTPS served by oxidav itself (``tls_cert`` / ``tls_key``), over real TLS connections.

A real ``oxidav serve`` process with a self-signed certificate: rclone (verifying with the
certificate as CA) makes a round trip and python-caldav creates and finds an event. In-process
servers check what the front does with TLS: keep-alive, chunked bodies, the lingering close
after an early 401, a half-sent handshake that neither blocks other clients nor outlives
``request_head_timeout``, plain HTTP on the TLS port. A missing or wrong certificate is one
line naming the setting and exit code 2.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import os
import select
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import caldav
import pytest

from tests.support.live import LiveServer, in_process_server, make_settings, start_server_process
from tests.support.rclone import rclone_env
from tests.support.tls import CertFiles, self_signed

AUTH = "Basic " + base64.b64encode(b"alice:secret").decode()


@pytest.fixture(scope="module")
def cert(tmp_path_factory: pytest.TempPathFactory) -> CertFiles:
    return self_signed(tmp_path_factory.mktemp("tls"))


def _client_context(cert: CertFiles) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(cert.cert))


@pytest.fixture
def tls_server(tmp_path: Path, cert: CertFiles) -> Iterator[LiveServer]:
    settings = make_settings(
        tmp_path / "data",
        f"sqlite:///{tmp_path / 'oxidav.db'}",
        tls_cert=str(cert.cert),
        tls_key=str(cert.key),
        request_head_timeout=1.0,
    )
    with in_process_server(settings) as server:
        yield server


def _https(server: LiveServer, cert: CertFiles) -> http.client.HTTPSConnection:
    return http.client.HTTPSConnection(
        "localhost", server.port, context=_client_context(cert), timeout=30
    )


def test_keep_alive_and_chunked_bodies_over_tls(tls_server: LiveServer, cert: CertFiles) -> None:
    conn = _https(tls_server, cert)
    try:
        path = "/remote.php/dav/files/alice/tls.bin"
        body = os.urandom(300_000)
        conn.request("PUT", path, body=body, headers={"Authorization": AUTH})
        response = conn.getresponse()
        response.read()
        assert response.status in (201, 204)
        sock = conn.sock
        assert isinstance(sock, ssl.SSLSocket)

        def pieces() -> Iterator[bytes]:
            for start in range(0, len(body), 70_000):
                yield body[start : start + 70_000]

        conn.request(
            "PUT",
            path + ".chunked",
            body=pieces(),
            headers={"Authorization": AUTH},
            encode_chunked=True,
        )
        response = conn.getresponse()
        response.read()
        assert response.status in (201, 204)
        for name in ("tls.bin", "tls.bin.chunked"):
            conn.request(
                "GET", f"/remote.php/dav/files/alice/{name}", headers={"Authorization": AUTH}
            )
            response = conn.getresponse()
            assert response.status == 200
            assert response.read() == body
        assert conn.sock is sock  # one TLS connection for all four requests
    finally:
        conn.close()


def test_early_401_with_a_large_body_is_read_not_reset(
    tls_server: LiveServer, cert: CertFiles
) -> None:
    raw = socket.create_connection(("127.0.0.1", tls_server.port), timeout=30)
    sock = _client_context(cert).wrap_socket(raw, server_hostname="localhost")
    body = 8 << 20
    sock.sendall(
        b"PUT /remote.php/dav/files/alice/big HTTP/1.1\r\nHost: localhost\r\n"
        + f"Content-Length: {body}\r\n\r\n".encode()
        + b"x" * (1 << 20)
    )
    answer = b""
    sent = 1 << 20
    sock.setblocking(False)
    deadline = time.monotonic() + 30
    while b"\r\n\r\n" not in answer and time.monotonic() < deadline:
        readable, writable, _ = select.select([sock], [sock] if sent < body else [], [], 1)
        if readable or sock.pending():
            with contextlib.suppress(ssl.SSLWantReadError):
                answer += sock.recv(65536)
        if writable:
            with contextlib.suppress(ssl.SSLWantWriteError, BrokenPipeError):
                sent += sock.send(b"x" * 65536)
    sock.close()
    assert answer.startswith(b"HTTP/1.1 401 "), answer[:200]


def test_a_stalled_handshake_blocks_nobody_and_is_closed(
    tls_server: LiveServer, cert: CertFiles
) -> None:
    stalled = socket.create_connection(("127.0.0.1", tls_server.port), timeout=30)
    stalled.sendall(b"\x16\x03\x01")  # the first bytes of a ClientHello, then nothing
    started = time.monotonic()
    conn = _https(tls_server, cert)
    conn.request("PROPFIND", "/remote.php/dav/", headers={"Authorization": AUTH, "Depth": "0"})
    assert conn.getresponse().status == 207
    conn.close()
    assert time.monotonic() - started < 1.0  # not behind the stalled handshake
    stalled.settimeout(30)
    assert stalled.recv(100) == b""  # closed at request_head_timeout (1 s)
    stalled.close()


def test_plain_http_on_the_tls_port_is_told(tls_server: LiveServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", tls_server.port, timeout=30)
    conn.request("GET", "/status.php")
    response = conn.getresponse()
    assert response.status == 400
    assert b"HTTPS" in response.read()
    conn.close()


def _oxidav(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "oxidav.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


def test_rclone_and_python_caldav_over_https(tmp_path: Path, cert: CertFiles) -> None:
    data = tmp_path / "data"
    assert (
        _oxidav(
            "user", "add", "alice", "--password", "secret", "--init", "--data-dir", str(data)
        ).returncode
        == 0
    )
    server = start_server_process(
        ["--data-dir", str(data), "--port", "0"],
        env={"OXIDAV_TLS_CERT": str(cert.cert), "OXIDAV_TLS_KEY": str(cert.key)},
    )
    try:
        assert server.base_url.startswith("https://")
        url = server.base_url.replace("127.0.0.1", "localhost")
        source = tmp_path / "source"
        (source / "sub").mkdir(parents=True)
        for i in range(5):
            (source / f"f{i}.txt").write_text(f"file {i}\n" * (i * 1000 + 1))
        (source / "sub" / "big.bin").write_bytes(os.urandom(3 << 20))
        env = rclone_env(tmp_path, f"{url}/remote.php/dav/files/alice/", ca_cert=cert.cert)

        def rclone(*args: str) -> None:
            done = subprocess.run(
                ["rclone", *args], env=env, capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, (args, done.stderr[-3000:])

        rclone("copy", str(source), "ox:tree")
        rclone("check", str(source), "ox:tree")
        back = tmp_path / "back"
        rclone("copy", "ox:tree", str(back))
        assert sorted(p.relative_to(back) for p in back.rglob("*")) == sorted(
            p.relative_to(source) for p in source.rglob("*")
        )
        assert (back / "sub" / "big.bin").read_bytes() == (source / "sub" / "big.bin").read_bytes()

        with caldav.DAVClient(
            url + "/", username="alice", password="secret", ssl_verify_cert=str(cert.cert)
        ) as client:
            principal = client.principal()
            calendar = principal.make_calendar(name="Over TLS", cal_id="tls")
            calendar.save_event(
                "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\n"
                "UID:tls-1\r\nDTSTAMP:20260301T100000Z\r\nDTSTART:20260301T100000Z\r\n"
                "DTEND:20260301T110000Z\r\nSUMMARY:secure\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
            )
            assert "SUMMARY:secure" in calendar.event_by_uid("tls-1").data
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize(
    ("env", "named"),
    [
        (
            {"OXIDAV_TLS_CERT": "/nonexistent/cert.pem", "OXIDAV_TLS_KEY": "/nonexistent/k"},
            "tls_cert",
        ),
        ({"OXIDAV_TLS_CERT": "{cert}"}, "tls_key"),
        ({"OXIDAV_TLS_CERT": "{key}", "OXIDAV_TLS_KEY": "{key}"}, "tls_cert"),
        ({"OXIDAV_TLS_CERT": "{cert}", "OXIDAV_TLS_KEY": "{cert}"}, "tls_key"),
    ],
)
def test_a_bad_certificate_setting_is_one_line_and_exit_2(
    tmp_path: Path, cert: CertFiles, env: dict[str, str], named: str
) -> None:
    env = {k: v.format(cert=cert.cert, key=cert.key) for k, v in env.items()}
    done = _oxidav("serve", "--init", "--data-dir", str(tmp_path / "data"), "--port", "0", env=env)
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert repr(named) in lines[0]
    assert not (tmp_path / "data" / "oxidav.db").exists()  # stopped before touching anything


def test_a_slow_head_over_tls_is_answered_408(tls_server: LiveServer, cert: CertFiles) -> None:
    raw = socket.create_connection(("127.0.0.1", tls_server.port), timeout=30)
    sock = _client_context(cert).wrap_socket(raw, server_hostname="localhost")
    sock.sendall(b"PROPFIND /remote.php/dav/ HTTP/1.1\r\nHost: localhost\r\n")  # no end
    answer = b""
    while chunk := sock.recv(4096):
        answer += chunk
    sock.close()
    assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
