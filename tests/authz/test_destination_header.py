"""A Destination header that is no URL at all is a 400 with its reason (found by tests/fuzz;
it used to answer 500 from the authorization middleware)."""

from __future__ import annotations

import pytest

from tests.support.live import LiveServer

FILES = "/remote.php/dav/files/alice"


@pytest.mark.parametrize("destination", ["http://[::1", "http://[/x", "//[::1/x"])
@pytest.mark.parametrize("method", ["MOVE", "COPY"])
def test_a_malformed_destination_is_400(
    live_server: LiveServer, method: str, destination: str
) -> None:
    assert live_server.request("PUT", f"{FILES}/a.txt", b"alpha").status == 201
    resp = live_server.request(method, f"{FILES}/a.txt", headers={"Destination": destination})
    assert resp.status == 400, (resp.status, resp.text)
    assert b"Destination" in resp.body
    assert live_server.request("GET", f"{FILES}/a.txt").body == b"alpha"
