"""Error answers over HTTP: a 5xx tells the status and the request id, nothing else; the log has
the traceback under the same id; every answer carries ``X-Request-ID``."""

from __future__ import annotations

import logging
import os

import pytest

from tests.support.live import LiveServer

FILE = "/remote.php/dav/files/alice/big.bin"


def _lose_the_blobs(live_server: LiveServer) -> None:
    assert live_server.services is not None
    store = live_server.services.blobs.store
    keys = list(store.iter_keys())
    assert keys
    for key in keys:
        store.delete(key)


def test_a_failed_get_answers_only_the_request_id(
    live_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR, logger="oxidav.errors")
    assert live_server.request("PUT", FILE, os.urandom(200_000)).status == 201
    _lose_the_blobs(live_server)

    got = live_server.request("GET", FILE)

    assert got.status == 500
    request_id = got.headers["x-request-id"]
    assert got.body == f"500 Internal Server Error\nrequest id: {request_id}\n".encode()
    assert got.headers["content-type"].startswith("text/plain")
    logged = [r for r in caplog.records if request_id in r.getMessage()]
    assert logged and logged[0].exc_info is not None
    assert "BlobNotFoundError" in caplog.text
    # The server goes on answering.
    assert live_server.request("PUT", FILE, b"again").status == 204


def test_a_sane_incoming_request_id_is_kept_and_others_replaced(live_server: LiveServer) -> None:
    kept = live_server.request("GET", FILE, headers={"X-Request-ID": "proxy-1234abcd"})
    assert kept.status == 404 and kept.headers["x-request-id"] == "proxy-1234abcd"
    replaced = live_server.request("GET", FILE, headers={"X-Request-ID": "x\ty"})
    assert replaced.headers["x-request-id"] not in ("x\ty", "")


def test_a_4xx_has_its_reason_and_no_footer(live_server: LiveServer) -> None:
    got = live_server.request("GET", FILE)
    assert got.status == 404 and got.headers["content-type"].startswith("text/plain")
    assert got.body.startswith(b"404 Not Found") and b"WsgiDAV" not in got.body
