"""Reverse-proxy headers over real HTTP (``oxidav.origin``): believed only from
``trusted_proxies``, for the login throttle's client address, the access log and generated
URLs; generated URLs never take an untrusted ``Host`` at its word.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest

from tests.support.live import LiveServer, in_process_server, make_settings

PROPFIND = ("PROPFIND", "/remote.php/dav/")
DEPTH0 = {"Depth": "0"}

Serve = Callable[..., AbstractContextManager[LiveServer]]


@pytest.fixture
def serve(tmp_path: Path) -> Serve:
    def _serve(**overrides: Any) -> AbstractContextManager[LiveServer]:
        settings = make_settings(
            tmp_path / "data", f"sqlite:///{tmp_path / 'oxidav.db'}", **overrides
        )
        return in_process_server(settings)

    return _serve


def _fail(server: LiveServer, name: str, headers: dict[str, str]) -> int:
    """A wrong password for a fresh user name, with ``headers``."""
    return server.request(
        *PROPFIND, headers={**DEPTH0, **headers}, user=name, password="wrong"
    ).status


def _addresses(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage().split(" addr=", 1)[1].split(" ", 1)[0]
        for r in caplog.records
        if r.name == "oxidav.access"
    ]


def test_forwarded_for_from_an_untrusted_peer_is_ignored(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oxidav.access")
    with serve(auth_max_failures_per_address=3) as server:
        statuses = [
            _fail(
                server,
                f"u{i}",
                {"X-Forwarded-For": f"203.0.113.{i}", "Forwarded": f"for=198.51.100.{i}"},
            )
            for i in range(5)
        ]
        # Every request counts against 127.0.0.1 whatever it claims: the budget runs out.
        assert statuses == [401, 401, 401, 429, 429]
    assert set(_addresses(caplog)) == {"127.0.0.1"}


def test_forwarded_for_from_a_trusted_proxy_names_the_client(
    serve: Serve, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="oxidav.access")
    with serve(auth_max_failures_per_address=3, trusted_proxies=("127.0.0.0/8",)) as server:
        # A client behind the proxy that prepends an address of its choosing is still itself:
        # the right-most address not of a trusted proxy counts.
        spoofing = {"X-Forwarded-For": "192.0.2.77, 203.0.113.5, 127.0.0.2"}
        assert [_fail(server, f"a{i}", spoofing) for i in range(4)] == [401, 401, 401, 429]
        # Another client through the same proxy has its own budget.
        assert _fail(server, "b", {"X-Forwarded-For": "198.51.100.8"}) == 401
        # RFC 7239 Forwarded (it wins over X-Forwarded-For), IPv6 in brackets with a port.
        forwarded = {
            "Forwarded": 'for="[2001:db8::1]:4711";proto=https',
            "X-Forwarded-For": "203.0.113.5",
        }
        assert _fail(server, "c", forwarded) == 401
    addresses = _addresses(caplog)
    assert addresses[:4] == ["203.0.113.5"] * 4
    assert addresses[4:] == ["198.51.100.8", "2001:db8::1"]


def _login_flow(server: LiveServer, headers: dict[str, str]) -> dict[str, Any]:
    response = server.request("POST", "/index.php/login/v2", user=None, headers=headers)
    assert response.status == 200
    data: dict[str, Any] = json.loads(response.body)
    return data


def test_generated_urls_ignore_an_untrusted_host(serve: Serve) -> None:
    with serve() as server:
        own = _login_flow(server, {})
        assert own["poll"]["endpoint"] == f"{server.base_url}/index.php/login/v2/poll"
        evil = _login_flow(server, {"Host": "evil.example", "X-Forwarded-Host": "evil.example"})
        assert evil["poll"]["endpoint"] == f"{server.base_url}/index.php/login/v2/poll"
        assert evil["login"].startswith(f"{server.base_url}/index.php/login/v2/flow/")
        # Forwarded headers from an untrusted peer change nothing either.
        proto = _login_flow(server, {"X-Forwarded-Proto": "https"})
        assert proto["poll"]["endpoint"].startswith("http://127.0.0.1:")


def test_generated_urls_through_a_trusted_proxy(serve: Serve) -> None:
    with serve(trusted_proxies=("127.0.0.1",), trusted_hosts=("cloud.example.org",)) as server:
        through = _login_flow(
            server,
            {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "cloud.example.org"},
        )
        assert through["poll"]["endpoint"] == "https://cloud.example.org/index.php/login/v2/poll"
        forwarded = _login_flow(
            server, {"Forwarded": "for=192.0.2.1;proto=https;host=cloud.example.org:8443"}
        )
        assert forwarded["login"].startswith(
            "https://cloud.example.org:8443/index.php/login/v2/flow/"
        )
        # A host the operator did not list gets the first trusted host, even via the proxy.
        evil = _login_flow(
            server, {"X-Forwarded-Proto": "https", "X-Forwarded-Host": "evil.example"}
        )
        assert evil["poll"]["endpoint"] == "https://cloud.example.org/index.php/login/v2/poll"


def test_public_url_decides_every_generated_url(serve: Serve) -> None:
    with serve(public_url="https://dav.example.net") as server:
        flow = _login_flow(server, {"Host": "evil.example"})
        assert flow["poll"]["endpoint"] == "https://dav.example.net/index.php/login/v2/poll"
        server.request("PUT", "/remote.php/dav/files/alice/a.txt", body=b"alpha")
        response = server.request(
            "POST",
            "/ocs/v2.php/apps/files_sharing/api/v1/shares?format=json",
            body="path=/a.txt&shareType=3",
            headers={
                "OCS-APIRequest": "true",
                "Content-Type": "application/x-www-form-urlencoded",
                "Host": "evil.example",
            },
        )
        assert response.status == 200, response.text
        share = json.loads(response.body)["ocs"]["data"]
        assert share["url"] == f"https://dav.example.net/s/{share['token']}"


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("trusted_proxies", "10.0.0.0/33"),
        ("trusted_proxies", "proxy.example"),
        ("public_url", "ftp://x"),
        ("public_url", "https://x/cloud"),
        ("trusted_hosts", "a b"),
    ],
)
def test_bad_proxy_settings_are_one_line_and_exit_2(tmp_path: Path, key: str, value: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "oxidav.cli", "serve", "--data-dir", str(tmp_path), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        env={"OXIDAV_" + key.upper(): value, "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and repr(key) in done.stderr, done.stderr
