"""``oxidav.presence`` (servers and maintenance commands by heartbeat) and
``oxidav.progress`` (the meter and the stop flag), on SQLite and PostgreSQL."""

from __future__ import annotations

import io
import os
import signal
from datetime import timedelta

import pytest
from sqlalchemy import select, update

from oxidav.db import Database, utcnow
from oxidav.db.models.presence import ProcessPresence
from oxidav.presence import (
    MAINTENANCE,
    SERVER,
    STALE_AFTER,
    MaintenanceRunningError,
    Presence,
    ServersRunningError,
    exclusive,
    live,
    register_server,
)
from oxidav.progress import Interrupted, Meter, StopFlag

_presence = ProcessPresence.__table__


def _age(db: Database, presence: Presence, seconds: float) -> None:
    with db.write() as session:
        session.execute(
            update(_presence)
            .where(_presence.c.id == presence.id)
            .values(heartbeat_at=utcnow() - timedelta(seconds=seconds))
        )


def test_a_live_server_refuses_the_exclusive_step(database: Database) -> None:
    server = register_server(database, "file:///blobs")
    try:
        assert [h.pid for h in live(database, SERVER)] == [os.getpid()]
        with pytest.raises(ServersRunningError) as refused, exclusive(database, "cmd", "nope"):
            pytest.fail("the body must not run beside a server")
        assert str(refused.value).startswith("nope (1 server process(es) running: ")
        assert not live(database, MAINTENANCE)  # the refused command withdrew its row
    finally:
        server.stop()
    assert not live(database, SERVER)  # a clean stop removes the row
    with exclusive(database, "cmd", "nope"):
        assert [h.what for h in live(database, MAINTENANCE)] == ["cmd"]
        # Nor does a server start, nor a second maintenance command, while it runs.
        with pytest.raises(MaintenanceRunningError, match="'cmd' is running on "):
            register_server(database, "file:///blobs")
        assert not live(database, SERVER)
        with (
            pytest.raises(ServersRunningError, match="1 maintenance command"),
            exclusive(database, "other", "busy"),
        ):
            pytest.fail("two maintenance commands at once")
    assert not live(database, MAINTENANCE)


def test_a_dead_process_goes_stale_and_is_purged(database: Database) -> None:
    dead = Presence(database, SERVER, "file:///blobs")
    dead.register()  # never beats again, never removes its row: a SIGKILLed server
    _age(database, dead, STALE_AFTER + 1)
    assert not live(database, SERVER)
    with exclusive(database, "cmd", "nope"):  # not held up by the dead one
        pass
    with database.read() as session:  # and the registration purged it
        assert session.execute(select(_presence.c.id)).scalars().all() == []


def test_a_heartbeat_keeps_the_row_and_restores_a_purged_one(database: Database) -> None:
    server = Presence(database, SERVER, "file:///blobs")
    server.register()
    _age(database, server, STALE_AFTER - 1)
    server.beat()
    assert live(database, SERVER, now=utcnow() + timedelta(seconds=STALE_AFTER - 2))
    with database.write() as session:  # purged while paused
        session.execute(_presence.delete())
    server.beat()
    assert len(live(database, SERVER)) == 1
    server.stop()


def test_meter_summary_lines_when_not_a_terminal() -> None:
    out = io.StringIO()
    meter = Meter("migrate", stream=out)
    copy = meter.phase("copy", 10, 10_000, unit="chunks")
    copy.advance(4, 4_000)
    copy.advance(6, 6_000)
    copy.done()
    meter.phase("finish", 256, unit="shards").advance(3)  # interrupted: reported at close
    meter.close()
    lines = out.getvalue().splitlines()
    assert len(lines) == 2
    assert lines[0].startswith("migrate: copy 10 chunks, 10.0 kB in ")
    assert lines[0].endswith(" chunks/s)") and "B/s, " in lines[0]
    assert lines[1].startswith("migrate: finish 3 shards in ")


def test_meter_draws_figures_on_a_terminal() -> None:
    out = io.StringIO()
    meter = Meter("fsck", stream=out, live=True)
    phase = meter.phase("chunks", 100, 1_000_000, unit="chunks")
    phase.advance(50, 500_000)
    phase.done()
    meter.close()
    assert "fsck chunks" in out.getvalue()
    assert "50/100 chunks" in out.getvalue() and "500.0 kB/1.0 MB" in out.getvalue()


def test_stop_flag_stops_at_the_next_check_then_at_once() -> None:
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with StopFlag() as stop:
        stop.check()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.requested
        with pytest.raises(Interrupted) as first:
            stop.check()
        assert first.value.exit_code == 128 + signal.SIGTERM
        with pytest.raises(Interrupted):  # a second signal does not wait for a check
            os.kill(os.getpid(), signal.SIGINT)
    # the handlers the process had are back (Python's default, or SIG_IGN in a background job)
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


def test_gc_and_fsck_stop_when_asked(database: Database, tmp_path) -> None:
    from oxidav.blobs import BlobChain, LocalBlobStore
    from oxidav.blobs.fsck import check
    from oxidav.blobs.gc import collect_garbage
    from tests.support.blobs import pieces, random_bytes

    store = LocalBlobStore(tmp_path / "blobs")
    BlobChain(database, store).ingest(pieces(random_bytes(500_000)))
    asked = StopFlag()
    asked.signum = signal.SIGINT  # as if Ctrl-C had come
    with pytest.raises(Interrupted):
        collect_garbage(database, store, 0, stop=asked)
    with pytest.raises(Interrupted):
        check(database, store, deep=True, stop=asked)
    # Nothing half done: what was collected (the manifest) is consistent, and the next run
    # finishes the job.
    assert check(database, store, deep=True).clean
    assert collect_garbage(database, store, 0).chunks_removed == 1
    assert not list(store.iter_keys())
    assert check(database, store, deep=True).clean


def test_a_server_on_the_store_migrated_away_from_does_not_start(database: Database) -> None:
    from oxidav.presence import record_blob_store, recorded_blob_store

    assert recorded_blob_store(database) is None
    register_server(database, "file:///old").stop()  # nothing recorded: any store
    record_blob_store(database, "s3://new/blobs")
    with pytest.raises(MaintenanceRunningError, match="set blob_store to s3://new/blobs"):
        register_server(database, "file:///old")
    assert not live(database, SERVER)
    register_server(database, "s3://new/blobs").stop()
    # The record is not a heartbeat row: registrations never purge it.
    with database.write() as session:
        session.execute(update(_presence).values(heartbeat_at=utcnow() - timedelta(days=30)))
    register_server(database, "s3://new/blobs").stop()
    assert recorded_blob_store(database) == "s3://new/blobs"
