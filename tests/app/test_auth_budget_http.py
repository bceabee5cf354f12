"""Password hashing as a weapon, over real HTTP: what a flood of logins may cost.

Every argon2 run the server makes is counted by ``Argon2Meter``, which wraps argon2's own
``PasswordHasher.verify`` and ``.hash`` (the real functions still run): how many ran, and the
most at once. Fresh user names from one address are refused with 429 once the address's budget
is used, before any hashing; hashing never runs more than ``auth_hash_concurrency`` at once; a
user whose credential is cached is served whatever the hashing queue or the budget say.
"""

from __future__ import annotations

import base64
import json
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import pytest
from argon2 import PasswordHasher

from oxidav.authz.grants.targets import user_id
from oxidav.authz.links import store as links
from oxidav.tree import resolve
from tests.support.live import LiveServer, Response, in_process_server, make_settings

PROPFIND_ROOT = ("PROPFIND", "/remote.php/dav/")
DEPTH0 = {"Depth": "0"}
OCS_USER = "/ocs/v2.php/cloud/user?format=json"


class Argon2Meter:
    """Counts argon2 runs (verify and hash) and the most running at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.runs = 0
        self.running = 0
        self.peak = 0

    def reset(self) -> None:
        """Forget what ran so far (creating the test users hashes their passwords)."""
        with self._lock:
            self.runs = self.peak = 0

    def wrap(self, function: Callable[..., Any]) -> Callable[..., Any]:
        def counted(*args: Any, **kwargs: Any) -> Any:
            with self._lock:
                self.runs += 1
                self.running += 1
                self.peak = max(self.peak, self.running)
            try:
                return function(*args, **kwargs)
            finally:
                with self._lock:
                    self.running -= 1

        return counted


@pytest.fixture
def argon2_meter(monkeypatch: pytest.MonkeyPatch) -> Argon2Meter:
    meter = Argon2Meter()
    monkeypatch.setattr(PasswordHasher, "verify", meter.wrap(PasswordHasher.verify))
    monkeypatch.setattr(PasswordHasher, "hash", meter.wrap(PasswordHasher.hash))
    return meter


@pytest.fixture
def serve(db_url: str, tmp_path: Path) -> Iterator[Callable[..., LiveServer]]:
    """Start a server with settings overrides (users alice and bob, password "secret")."""
    stack: list[Any] = []

    def start(**overrides: object) -> LiveServer:
        settings = make_settings(tmp_path / f"data{len(stack)}", db_url, **overrides)
        manager = in_process_server(settings)
        stack.append(manager)
        return manager.__enter__()

    yield start
    for manager in reversed(stack):
        manager.__exit__(None, None, None)


def concurrently(count: int, request: Callable[[int], Response]) -> list[Response]:
    """``request(i)`` for i in range(count), all at once from as many threads."""
    start = threading.Barrier(count)

    def one(i: int) -> Response:
        start.wait(timeout=30)
        return request(i)

    with ThreadPoolExecutor(max_workers=count) as pool:
        return list(pool.map(one, range(count)))


def fresh_name(server: LiveServer, i: int) -> Response:
    """A login with a user name that does not exist."""
    server.users[f"ghost{i}"] = "guess"
    return server.request(*PROPFIND_ROOT, headers=DEPTH0, user=f"ghost{i}")


def test_fresh_user_names_from_one_address_get_429_after_the_budget(
    serve: Callable[..., LiveServer], argon2_meter: Argon2Meter
) -> None:
    server = serve(auth_max_failures_per_address=4, auth_hash_wait_seconds=60)
    argon2_meter.reset()
    responses = concurrently(16, lambda i: fresh_name(server, i))
    statuses = sorted(r.status for r in responses)
    assert statuses == [401] * 4 + [429] * 12
    for refused in (r for r in responses if r.status == 429):
        assert int(refused.headers["retry-after"]) >= 1
    # Only the budget's worth of argon2 ran (an unknown name costs one run, like a known one).
    assert argon2_meter.runs == 4
    # The address stays refused for any name, before any hashing.
    assert fresh_name(server, 99).status == 429
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0, user="bob").status == 429
    assert argon2_meter.runs == 4


def test_concurrent_hashing_never_exceeds_the_cap(
    serve: Callable[..., LiveServer], argon2_meter: Argon2Meter
) -> None:
    server = serve(
        auth_hash_concurrency=2, auth_max_failures_per_address=1000, auth_hash_wait_seconds=60
    )
    argon2_meter.reset()
    responses = concurrently(12, lambda i: fresh_name(server, i))
    # Four may wait per slot; the rest are told the server is busy, having hashed nothing.
    assert {r.status for r in responses} <= {401, 429}
    busy = [r for r in responses if r.status == 429]
    assert all(int(r.headers["retry-after"]) >= 1 for r in busy)
    assert argon2_meter.runs == len(responses) - len(busy)
    assert argon2_meter.peak <= 2
    assert server.services is not None
    assert server.services.authenticator.hashing.peak_running <= 2


def test_no_free_hashing_slot_is_429_and_costs_no_budget(
    serve: Callable[..., LiveServer], argon2_meter: Argon2Meter
) -> None:
    server = serve(
        auth_hash_concurrency=1, auth_hash_wait_seconds=0.2, auth_max_failures_per_address=1
    )
    argon2_meter.reset()
    assert server.services is not None
    with server.services.authenticator.hashing.slot():
        response = server.request(*PROPFIND_ROOT, headers=DEPTH0, user="bob")
        assert response.status == 429
        assert int(response.headers["retry-after"]) >= 1
        ocs = server.request("GET", OCS_USER, headers={"OCS-APIRequest": "true"}, user="bob")
        assert ocs.status == 429 and "retry-after" in ocs.headers
    assert argon2_meter.runs == 0
    # The refusals used none of the address's budget of one failure.
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0, user="bob").status == 207


def test_cached_user_is_served_while_hashing_is_full_and_the_address_refused(
    serve: Callable[..., LiveServer], argon2_meter: Argon2Meter
) -> None:
    server = serve(
        auth_hash_concurrency=2, auth_max_failures_per_address=3, auth_hash_wait_seconds=60
    )
    argon2_meter.reset()
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207  # alice logs in
    assert server.services is not None
    hashing = server.services.authenticator.hashing
    attack = [fresh_name(server, i).status for i in range(6)]
    assert attack == [401] * 3 + [429] * 3
    runs = argon2_meter.runs
    with hashing.slot(), hashing.slot():  # every hashing slot taken
        assert hashing.running == 2
        for _ in range(5):
            assert server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207
        ocs = server.request("GET", OCS_USER, headers={"OCS-APIRequest": "true"})
        assert ocs.status == 200
        assert fresh_name(server, 50).status == 429
    assert argon2_meter.runs == runs


def test_per_user_throttle_still_works_under_a_large_address_budget(
    serve: Callable[..., LiveServer], argon2_meter: Argon2Meter
) -> None:
    server = serve(auth_max_failures=3, auth_max_failures_per_address=100)
    argon2_meter.reset()
    statuses = [
        server.request(*PROPFIND_ROOT, headers=DEPTH0, password="nope").status for _ in range(5)
    ]
    assert statuses == [401, 401, 401, 429, 429]
    assert argon2_meter.runs == 3
    right = server.request(*PROPFIND_ROOT, headers=DEPTH0)  # the right password, still throttled
    assert right.status == 429 and int(right.headers["retry-after"]) > 0
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0, user="bob").status == 207


def _basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}


def test_link_passwords_share_the_address_budget_and_the_cap(
    serve: Callable[..., LiveServer], argon2_meter: Argon2Meter
) -> None:
    server = serve(auth_max_failures=10, auth_max_failures_per_address=3)
    argon2_meter.reset()
    assert server.request("MKCOL", "/remote.php/dav/files/alice/P").status == 201
    assert server.services is not None
    with server.services.db.write() as session:
        node = resolve(session, user_id(session, "alice"), "/P")
        assert node is not None
        token = links.create_link(session, node, password="right").token
    runs = argon2_meter.runs
    page = f"/s/{token}"
    statuses = [
        server.request("GET", page, user=None, headers=_basic("x", f"w{i}")).status
        for i in range(4)
    ]
    assert statuses == [401, 401, 401, 429]
    assert argon2_meter.runs == runs + 3
    # The same address is over budget for user logins too.
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0, user="bob").status == 429


def test_importing_the_app_hashes_nothing() -> None:
    probe = (
        "import argon2\n"
        "calls = []\n"
        "for name in ('hash', 'verify'):\n"
        "    real = getattr(argon2.PasswordHasher, name)\n"
        "    def counted(*a, _real=real, **k):\n"
        "        calls.append(1)\n"
        "        return _real(*a, **k)\n"
        "    setattr(argon2.PasswordHasher, name, counted)\n"
        "import oxidav.app, oxidav.cli\n"
        "import oxidav.authz.authn.passwords, oxidav.authz.authn.authenticator\n"
        "print(len(calls))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.strip() == "0"


def test_login_flow_form_is_refused_like_basic_auth(
    serve: Callable[..., LiveServer], argon2_meter: Argon2Meter
) -> None:
    server = serve(
        auth_max_failures_per_address=2, auth_hash_concurrency=1, auth_hash_wait_seconds=0.2
    )
    argon2_meter.reset()
    started = server.request("POST", "/index.php/login/v2", user=None)
    login_path = urlsplit(json.loads(started.body)["login"]).path
    page = server.request("GET", login_path, user=None)
    match = re.search(r"name='csrf' value='([^']+)'", page.text)
    assert match is not None
    form = {"Content-Type": "application/x-www-form-urlencoded"}

    def submit(user: str) -> Response:
        fields = urlencode({"user": user, "password": "guess", "csrf": match.group(1)})
        return server.request("POST", login_path, body=fields, headers=form, user=None)

    assert server.services is not None
    with server.services.authenticator.hashing.slot():
        busy = submit("ghost0")
    assert busy.status == 429 and int(busy.headers["retry-after"]) >= 1
    assert [submit(f"ghost{i}").status for i in range(1, 4)] == [401, 401, 429]
    refused = submit("alice")
    assert refused.status == 429 and int(refused.headers["retry-after"]) > 0
    assert argon2_meter.runs == 2
