"""Authentication over real HTTP: 401/207, app passwords, throttling with 429, bad headers."""

from __future__ import annotations

import base64

from oxidav.authz.authn import accounts
from tests.support.live import LiveServer

PROPFIND_ROOT = ("PROPFIND", "/remote.php/dav/")
DEPTH0 = {"Depth": "0"}


def test_anonymous_gets_401_with_basic_challenge(live_server: LiveServer) -> None:
    response = live_server.request(*PROPFIND_ROOT, headers=DEPTH0, user=None)
    assert response.status == 401
    assert response.headers["www-authenticate"].startswith("Basic realm=")


def test_password_and_app_password_reach_the_dav_root(live_server: LiveServer) -> None:
    assert live_server.services is not None
    token = accounts.create_app_password(live_server.services.db, "alice", "test")
    for password in ("secret", token):
        response = live_server.request(*PROPFIND_ROOT, headers=DEPTH0, password=password)
        assert response.status == 207
        assert "/remote.php/dav/principals/users/alice/" in response.text


def test_wrong_password_is_401(live_server: LiveServer) -> None:
    response = live_server.request(*PROPFIND_ROOT, headers=DEPTH0, password="nope")
    assert response.status == 401


def test_twenty_failures_get_429_with_retry_after(live_server: LiveServer) -> None:
    statuses = [
        live_server.request(*PROPFIND_ROOT, headers=DEPTH0, password="nope").status
        for _ in range(20)
    ]
    assert statuses[0] == 401
    assert statuses[-1] == 429
    response = live_server.request(
        *PROPFIND_ROOT, headers=DEPTH0
    )  # right password, still throttled
    assert response.status == 429
    assert int(response.headers["retry-after"]) > 0
    # another user from the same address is not locked out
    assert live_server.request(*PROPFIND_ROOT, headers=DEPTH0, user="bob").status == 207


def test_login_works_again_after_the_window(live_server: LiveServer) -> None:
    assert live_server.services is not None
    throttle = live_server.services.authenticator.throttle
    now = [5000.0]
    throttle._clock = lambda: now[0]
    for _ in range(20):
        live_server.request(*PROPFIND_ROOT, headers=DEPTH0, password="nope")
    assert live_server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 429
    now[0] += live_server.settings.auth_failure_window + 1
    assert live_server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207


def test_malformed_authorization_is_400_not_500(live_server: LiveServer) -> None:
    for value in ("Basic !!!notbase64", "Basic " + base64.b64encode(b"nocolon").decode()):
        response = live_server.request(
            *PROPFIND_ROOT, headers={**DEPTH0, "Authorization": value}, user=None
        )
        assert response.status == 400


def test_non_ascii_credentials(live_server: LiveServer) -> None:
    assert live_server.services is not None
    accounts.create_user(live_server.services.db, "zoe", "pässwörd")
    live_server.users["zoe"] = "pässwörd"
    assert live_server.request(*PROPFIND_ROOT, headers=DEPTH0, user="zoe").status == 207


def test_well_known_redirects_to_dav_root(live_server: LiveServer) -> None:
    for path in ("/.well-known/caldav", "/.well-known/carddav"):
        response = live_server.request("GET", path, user=None)
        assert response.status == 301
        assert response.headers["location"] == "/remote.php/dav/"


def test_other_users_paths_answer_404(live_server: LiveServer) -> None:
    response = live_server.request("PROPFIND", "/remote.php/dav/files/bob/", headers=DEPTH0)
    assert response.status == 404
    response = live_server.request(
        "MOVE",
        "/remote.php/dav/files/alice/x",
        headers={"Destination": f"{live_server.base_url}/remote.php/dav/files/bob/x"},
    )
    assert response.status == 404
