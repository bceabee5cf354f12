"""/healthz, /readyz and /metrics over real HTTP (SQLite and PostgreSQL)."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from tests.support.live import LiveServer, in_process_server, make_settings

FILES = "/remote.php/dav/files/alice"


def samples(server: LiveServer, headers: dict[str, str] | None = None) -> dict[tuple, float]:
    """The scrape as {(name, (label, value), ...): value}."""
    resp = server.request("GET", "/metrics", user=None, headers=headers)
    assert resp.status == 200, resp
    assert resp.headers["content-type"].startswith("text/plain; version=0.0.4")
    found: dict[tuple, float] = {}
    for family in text_string_to_metric_families(resp.text):
        for sample in family.samples:
            found[(sample.name, *sorted(sample.labels.items()))] = sample.value
    return found


def settled_samples(server: LiveServer, done: Callable[[dict[tuple, float]], bool]) -> dict:
    """A scrape once ``done`` holds for it: a request is counted when its server side ends,
    which may be a moment after its client read the answer."""
    deadline = time.monotonic() + 20
    while True:
        found = samples(server)
        if done(found) or time.monotonic() > deadline:
            return found


def test_healthz_answers_without_credentials(live_server: LiveServer) -> None:
    resp = live_server.request("GET", "/healthz", user=None)
    assert (resp.status, resp.body) == (200, b"ok\n")
    assert resp.headers["x-request-id"]
    assert live_server.request("HEAD", "/healthz", user=None).status == 200
    refused = live_server.request("POST", "/healthz", b"x", user=None)
    assert (refused.status, refused.headers["allow"]) == (405, "GET, HEAD")


def test_readyz_names_the_failing_part(live_server: LiveServer) -> None:
    resp = live_server.request("GET", "/readyz", user=None)
    assert resp.status == 200
    assert json.loads(resp.body) == {
        "status": "ready",
        "checks": {"database": "ok", "blob_store": "ok"},
    }
    blobs = live_server.settings.data_dir / "blobs"
    moved = blobs.with_name("blobs-away")
    blobs.rename(moved)
    try:
        deadline = time.monotonic() + 20
        while True:  # the last answer is reused for up to a second
            resp = live_server.request("GET", "/readyz", user=None)
            if resp.status == 503 or time.monotonic() > deadline:
                break
        assert resp.status == 503
        body = json.loads(resp.body)
        assert body == {
            "status": "not ready",
            "checks": {"database": "ok", "blob_store": "failed"},
        }
        # Nextcloud clients read this as "wait and retry", not as an error.
        status = live_server.request("GET", "/status.php", user=None)
        assert (status.status, json.loads(status.body)["maintenance"]) == (200, True)
    finally:
        moved.rename(blobs)
    deadline = time.monotonic() + 20
    while live_server.request("GET", "/readyz", user=None).status != 200:
        assert time.monotonic() < deadline


def test_metrics_count_requests_bytes_and_blob_ops(live_server: LiveServer) -> None:
    # 300 KiB: past the inline limit, so a blob is written, and past REGION_FROM, so a whole
    # GET maps its chunk
    content = bytes(range(256)) * 1200
    assert live_server.request("PUT", FILES + "/m.bin", content).status == 201
    got = live_server.request("GET", FILES + "/m.bin")
    assert (got.status, len(got.body)) == (200, len(content))
    part = live_server.request("GET", FILES + "/m.bin", headers={"Range": "bytes=10-19"})
    assert (part.status, part.body) == (206, content[10:20])
    assert live_server.request("PROPFIND", FILES + "/", headers={"Depth": "1"}).status == 207
    assert live_server.request("BREW", FILES + "/m.bin").status in (400, 405, 501)
    assert live_server.request("GET", FILES + "/nothing", user="bob").status in (403, 404)
    found = settled_samples(live_server, lambda f: f[("oxidav_http_requests_in_progress",)] == 1)
    assert found[("oxidav_http_requests_total", ("method", "PUT"), ("status", "201"))] == 1
    assert found[("oxidav_http_requests_total", ("method", "GET"), ("status", "200"))] >= 1
    assert found[("oxidav_http_requests_total", ("method", "PROPFIND"), ("status", "207"))] == 1
    assert (
        sum(
            v
            for k, v in found.items()
            if k[:2] == ("oxidav_http_requests_total", ("method", "other"))
        )
        == 1
    )
    assert found[("oxidav_http_request_body_bytes_total", ("method", "PUT"))] == len(content)
    assert found[("oxidav_http_response_body_bytes_total", ("method", "GET"))] >= len(content)
    assert found[("oxidav_http_request_duration_seconds_count", ("method", "PUT"))] == 1
    assert found[("oxidav_blob_store_operations_total", ("op", "put_unsynced"))] >= 1
    # The whole GET maps its one chunk (sent with sendfile); the small range reads its bytes.
    assert found[("oxidav_blob_store_operations_total", ("op", "region"))] >= 1
    assert found[("oxidav_blob_store_operations_total", ("op", "get_range"))] >= 1
    assert found[("oxidav_blob_store_errors_total", ("op", "get_range"))] == 0
    assert found[("oxidav_db_pool_size",)] >= 1
    assert ("oxidav_db_pool_checked_out",) in found
    assert found[("oxidav_http_open_connections",)] >= 1  # the scrape's own
    assert found[("oxidav_http_requests_in_progress",)] == 1  # the scrape itself
    assert found[("oxidav_uploads_in_progress",)] == 0
    assert ("process_resident_memory_bytes",) in found
    # No user name, path or method text beyond the fixed sets in any label.
    labels = {value for key in found for _name, value in key[1:]}
    assert not labels & {"alice", "bob", "BREW", "m.bin"}
    assert not any("/" in value for value in labels)


def test_uploads_and_connections_in_progress(live_server: LiveServer) -> None:
    idle = [http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=30) for _ in range(3)]
    upload = http.client.HTTPConnection("127.0.0.1", live_server.port, timeout=30)
    try:
        for conn in idle:  # kept-alive connections after one request each
            conn.request("GET", "/healthz")
            assert conn.getresponse().read() == b"ok\n"
        upload.putrequest("PUT", FILES + "/slow.bin")
        upload.putheader("Authorization", "Basic YWxpY2U6c2VjcmV0")  # alice:secret
        upload.putheader("Content-Length", "200000")
        upload.endheaders()
        upload.send(b"x" * 100000)  # half the body: the PUT is being served
        deadline = time.monotonic() + 20
        while True:
            found = samples(live_server)
            if found[("oxidav_uploads_in_progress",)] == 1 or time.monotonic() > deadline:
                break
        assert found[("oxidav_uploads_in_progress",)] == 1
        assert found[("oxidav_http_open_connections",)] >= 5  # 3 idle, the upload, the scrape
        assert found[("oxidav_http_worker_threads", ("state", "busy"))] >= 2
        upload.send(b"x" * 100000)
        assert upload.getresponse().status == 201
        found = settled_samples(live_server, lambda f: f[("oxidav_uploads_in_progress",)] == 0)
        assert found[("oxidav_uploads_in_progress",)] == 0
    finally:
        for conn in [*idle, upload]:
            conn.close()


def test_metrics_only_for_allowed_direct_clients(live_server: LiveServer) -> None:
    for header in ("X-Forwarded-For", "Forwarded", "X-Real-IP"):
        proxied = live_server.request("GET", "/metrics", user=None, headers={header: "1.2.3.4"})
        assert (proxied.status, proxied.body) == (404, b"")


def test_metrics_allow_list_replaces_loopback(tmp_path: Path, db_url: str) -> None:
    settings = make_settings(tmp_path / "data", db_url, metrics_allow=("10.0.0.0/8",))
    with in_process_server(settings) as server:
        assert server.request("GET", "/metrics", user=None).status == 404
        assert server.request("GET", "/healthz", user=None).status == 200
    settings = make_settings(tmp_path / "data", db_url, metrics_allow=("127.0.0.1/32",))
    with in_process_server(settings, users={}) as server:
        assert server.request("GET", "/metrics", user=None).status == 200


def test_status_php_still_answers(live_server: LiveServer) -> None:
    resp = live_server.request("GET", "/status.php", user=None)
    assert resp.status == 200 and json.loads(resp.body)["installed"] is True
    assert json.loads(resp.body)["maintenance"] is False
