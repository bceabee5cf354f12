"""The background sweep (``oxidav.sweeper``) reclaims what refused and abandoned uploads left
(issue 25 item 7): one pass is driven directly with a clock moved forward, no sleeps."""

from __future__ import annotations

import base64
import http.client
import os
from datetime import timedelta

from sqlalchemy import func, select, update

from oxidav.db import utcnow
from oxidav.db.models.blobs import BlobChunk, BlobManifest
from oxidav.db.models.users import User
from oxidav.services import Services
from oxidav.sweeper import Sweeper
from tests.support.live import LiveServer

UP = "/remote.php/dav/uploads/alice"
FILES = "/remote.php/dav/files/alice"


def _blob_rows(live: LiveServer) -> tuple[int, int]:
    assert live.services is not None
    with live.services.db.read() as session:
        manifests = session.scalar(select(func.count()).select_from(BlobManifest))
        chunks = session.scalar(select(func.count()).select_from(BlobChunk))
    return int(manifests or 0), int(chunks or 0)


def _stored_keys(live: LiveServer) -> set[str]:
    assert live.services is not None
    return set(live.services.blobs.store.iter_keys())


def _put_without_length(live: LiveServer, path: str, data: bytes) -> int:
    token = base64.b64encode(f"alice:{live.users['alice']}".encode()).decode()
    conn = http.client.HTTPConnection("127.0.0.1", live.port, timeout=60)
    try:
        body = iter([data[i : i + 8192] for i in range(0, len(data), 8192)])
        conn.request(
            "PUT", path, body=body, headers={"Authorization": f"Basic {token}"}, encode_chunked=True
        )
        resp = conn.getresponse()
        resp.read()
        return resp.status
    finally:
        conn.close()


def test_a_pass_reclaims_an_abandoned_session(live_server: LiveServer) -> None:
    assert live_server.services is not None
    kept = os.urandom(200_000)
    assert live_server.request("PUT", f"{FILES}/kept.bin", kept).status == 201
    keys_before = _stored_keys(live_server)
    assert live_server.request("MKCOL", f"{UP}/gone").status == 201
    for n in (1, 2):
        put = live_server.request("PUT", f"{UP}/gone/{n}", os.urandom(150_000))
        assert put.status == 201
    assert len(_stored_keys(live_server)) > len(keys_before)
    sweeper = Sweeper(live_server.services)
    # Today the session is fresh and its chunks referenced: nothing goes.
    assert sweeper.run_once().sessions_purged == 0
    report = sweeper.run_once(now=utcnow() + timedelta(hours=25))
    assert (report.sessions_purged, report.manifests_removed) == (1, 2)
    # The chunks of a collected manifest get a grace period of their own (``blobs.gc``).
    report = sweeper.run_once(now=utcnow() + timedelta(hours=27))
    assert report.chunks_removed >= 2 and report.bytes_freed >= 300_000
    assert live_server.request("PROPFIND", f"{UP}/gone/", headers={"Depth": "0"}).status == 404
    assert _stored_keys(live_server) == keys_before
    got = live_server.request("GET", f"{FILES}/kept.bin")
    assert (got.status, got.body) == (200, kept)
    again = sweeper.run_once(now=utcnow() + timedelta(hours=29))
    assert (again.sessions_purged, again.chunks_removed) == (0, 0)


def test_a_pass_reclaims_the_bytes_of_a_refused_upload(live_server: LiveServer) -> None:
    assert live_server.services is not None
    with live_server.services.db.write() as session:
        session.execute(update(User).where(User.username == "alice").values(quota_bytes=100_000))
    before = _blob_rows(live_server), _stored_keys(live_server)
    assert live_server.request("MKCOL", f"{UP}/s").status == 201
    assert _put_without_length(live_server, f"{UP}/s/1", os.urandom(150_000)) == 507
    assert _put_without_length(live_server, f"{FILES}/big.bin", os.urandom(150_000)) == 507
    assert _blob_rows(live_server) != before[0]  # ingested, referenced by nothing
    sweeper = Sweeper(live_server.services)
    # Within the grace period the bytes stay (an ingest may still rely on them).
    assert sweeper.run_once().chunks_removed == 0
    passes = [sweeper.run_once(now=utcnow() + timedelta(hours=h)) for h in (2, 4)]
    assert sum(report.bytes_freed for report in passes) >= 300_000
    assert (_blob_rows(live_server), _stored_keys(live_server)) == before
    # The session itself is still usable.
    assert live_server.request("PUT", f"{UP}/s/1", b"small").status == 201


def test_the_thread_starts_and_stops(live_server: LiveServer) -> None:
    assert live_server.services is not None
    sweeper = Sweeper(live_server.services)
    sweeper.start()
    thread = sweeper._thread
    assert thread is not None and thread.is_alive()
    sweeper.stop()
    assert not thread.is_alive()
    services = live_server.services
    settings = services.settings.replace(sweep_interval_seconds=0)
    off = Sweeper(Services(settings, services.db, services.authenticator))
    off.start()
    assert off._thread is None
