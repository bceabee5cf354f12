"""CalendarStore on SQLite and PostgreSQL: calendars, objects, preconditions, queries, sync."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import insert

from oxidav.calendars import errors
from oxidav.calendars.filters import TimeRange
from oxidav.calendars.store import CalendarStore
from oxidav.db import Database
from oxidav.db.models.users import User
from oxidav.sync import InvalidSyncToken
from tests.support.calendar_samples import event, make_filter, make_ics


@pytest.fixture
def store(database: Database) -> CalendarStore:
    with database.write() as session:
        for uid, name in ((1, "alice"), (2, "bob")):
            session.execute(
                insert(User).values(id=uid, username=name, display_name=name, password_hash="x")
            )
    return CalendarStore(database, max_resource_bytes=20_000)


def ev(uid: str, start: str = "20260105T100000Z", *props: str) -> bytes:
    return make_ics(event(uid, f"DTSTART:{start}", "DURATION:PT1H", *props)).encode()


def test_default_calendar_is_created_once(store: CalendarStore) -> None:
    first = store.ensure_default(1)
    assert [c.uri for c in first] == ["personal"]
    assert store.ensure_default(1) == first
    assert store.collections(2) == []
    assert first[0].components == ("VEVENT", "VTODO", "VJOURNAL")


def test_create_update_delete_calendar(store: CalendarStore) -> None:
    cal = store.create_collection(
        1, "work", displayname="Work", color="#ff0000ff", components=["VEVENT"]
    )
    assert store.collection(1, "work") == cal
    assert store.collection(2, "work") is None
    with pytest.raises(errors.AlreadyExists):
        store.create_collection(1, "work")
    store.create_collection(2, "work")  # same name, other user
    updated = store.update_collection(cal.id, displayname="Job", sort_order=3)
    assert (updated.displayname, updated.sort_order, updated.color) == ("Job", 3, "#ff0000ff")
    store.put_object(cal, "a.ics", ev("a"))
    store.delete_collection(cal.id)
    assert store.collection(1, "work") is None
    assert store.object(cal.id, "a.ics") is None


def test_put_get_delete_with_etags(store: CalendarStore) -> None:
    cal = store.create_collection(1, "c")
    seq0, token0 = store.sync_state(cal.id)
    created = store.put_object(cal, "a.ics", ev("a"))
    assert created.created
    got = store.object(cal.id, "a.ics")
    assert got is not None and got.data == ev("a").decode() and got.etag == created.etag
    assert got.uid == "a" and got.component_type == "VEVENT"
    # Overwrite with If-Match.
    with pytest.raises(errors.PreconditionFailed):
        store.put_object(cal, "a.ics", ev("a", "20260106T100000Z"), if_match=["nope"])
    updated = store.put_object(cal, "a.ics", ev("a", "20260106T100000Z"), if_match=[created.etag])
    assert not updated.created and updated.etag != created.etag
    # If-None-Match: * refuses to overwrite; If-Match on a missing resource fails.
    with pytest.raises(errors.PreconditionFailed):
        store.put_object(cal, "a.ics", ev("a"), if_none_match=["*"])
    with pytest.raises(errors.PreconditionFailed):
        store.put_object(cal, "new.ics", ev("n"), if_match=["*"])
    assert store.put_object(cal, "new.ics", ev("n"), if_none_match=["*"]).created
    seq1, token1 = store.sync_state(cal.id)
    assert seq1 > seq0 and token1 != token0
    with pytest.raises(errors.PreconditionFailed):
        store.delete_object(cal.id, "a.ics", if_match=[created.etag])
    store.delete_object(cal.id, "a.ics", if_match=[updated.etag])
    with pytest.raises(errors.NotFound):
        store.delete_object(cal.id, "a.ics")
    assert [o.name for o in store.objects(cal.id)] == ["new.ics"]


def test_uid_conflicts(store: CalendarStore) -> None:
    cal = store.create_collection(1, "c")
    other = store.create_collection(1, "d")
    store.put_object(cal, "a.ics", ev("same"))
    with pytest.raises(errors.UidConflict) as info:
        store.put_object(cal, "b.ics", ev("same"))
    assert info.value.href == "a.ics" and info.value.status == 409
    with pytest.raises(errors.UidConflict):
        store.put_object(cal, "a.ics", ev("changed"))
    store.put_object(other, "b.ics", ev("same"))  # another calendar may reuse it


def test_put_validates(store: CalendarStore) -> None:
    cal = store.create_collection(1, "c", components=["VTODO"])
    with pytest.raises(errors.UnsupportedComponent):
        store.put_object(cal, "a.ics", ev("a"))
    with pytest.raises(errors.ResourceTooLarge):
        store.put_object(cal, "a.ics", b"x" * 30_000)
    with pytest.raises(errors.InvalidCalendarObject):
        store.put_object(cal, "a.ics", b"BEGIN:VCALENDAR\r\nEND:VCALENDAR")
    with pytest.raises(errors.InvalidCalendarData):
        store.put_object(cal, "a.ics", b"BEGIN:VCALENDAR\r\nBEGIN:VTODO")
    assert store.objects(cal.id) == []


def test_query_prefilters_in_sql_and_checks_exactly(store: CalendarStore) -> None:
    cal = store.create_collection(1, "c")
    store.put_object(cal, "early.ics", ev("early", "20260101T100000Z"))
    store.put_object(cal, "hit.ics", ev("hit", "20260105T100000Z"))
    store.put_object(
        cal, "weekly.ics", ev("weekly", "20251201T100000Z", "RRULE:FREQ=WEEKLY;BYDAY=WE")
    )
    store.put_object(
        cal,
        "exdated.ics",
        ev("exdated", "20251229T100000Z", "RRULE:FREQ=WEEKLY", "EXDATE:20260105T100000Z"),
    )
    store.put_object(
        cal,
        "todo.ics",
        make_ics("BEGIN:VTODO\nUID:t\nDTSTAMP:20260101T000000Z\nEND:VTODO").encode(),
    )
    rng = TimeRange(datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 6, tzinfo=UTC))
    candidates = {o.name for o in store.candidates(cal.id, "VEVENT", rng)}
    assert candidates == {"hit.ics", "weekly.ics", "exdated.ics"}
    root = make_filter(
        '<C:comp-filter name="VEVENT">'
        '<C:time-range start="20260105T000000Z" end="20260106T000000Z"/></C:comp-filter>'
    )
    assert [o.name for o in store.query(cal, root)] == ["hit.ics"]
    wednesday = make_filter(
        '<C:comp-filter name="VEVENT">'
        '<C:time-range start="20260107T000000Z" end="20260108T000000Z"/></C:comp-filter>'
    )
    assert {o.name for o in store.query(cal, wednesday)} == {"weekly.ics"}
    todos = make_filter('<C:comp-filter name="VTODO"/>')
    assert [o.name for o in store.query(cal, todos)] == ["todo.ics"]


def test_free_busy(store: CalendarStore) -> None:
    cal = store.create_collection(1, "c")
    store.put_object(cal, "a.ics", ev("a", "20260105T100000Z"))
    text = store.free_busy(
        cal, TimeRange(datetime(2026, 1, 5, tzinfo=UTC), datetime(2026, 1, 6, tzinfo=UTC))
    )
    assert "FREEBUSY;FBTYPE=BUSY:20260105T100000Z/20260105T110000Z" in text


def test_sync_changes(store: CalendarStore) -> None:
    cal = store.create_collection(1, "c")
    store.put_object(cal, "a.ics", ev("a"))
    store.put_object(cal, "b.ics", ev("b"))
    initial = store.changes_since(cal.id, None)
    assert [c.name for c in initial.changes] == ["a.ics", "b.ics"]
    assert set(store.object_infos(cal.id, ["a.ics", "b.ics", "x.ics"])) == {"a.ics", "b.ics"}
    store.put_object(cal, "a.ics", ev("a", "20260107T100000Z"))
    store.delete_object(cal.id, "b.ics")
    store.put_object(cal, "c.ics", ev("c"))
    delta = store.changes_since(cal.id, initial.token)
    assert [(c.name, c.kind) for c in delta.changes] == [
        ("a.ics", "modified"),
        ("b.ics", "removed"),
        ("c.ics", "added"),
    ]
    assert set(store.objects_named(cal.id, ["a.ics", "b.ics", "c.ics"])) == {"a.ics", "c.ics"}
    with pytest.raises(InvalidSyncToken):
        store.changes_since(cal.id, "http://oxidav.org/ns/sync/calendar-999-abc/1")


def test_transfer_moves_and_copies_with_preconditions(store: CalendarStore) -> None:
    work = store.create_collection(1, "work")
    home = store.create_collection(1, "home", components=["VTODO"])
    other = store.create_collection(1, "other")
    store.put_object(work, "a.ics", ev("a"))
    token = store.changes_since(work.id, None).token
    # Renaming within a calendar keeps the UID; the log shows removal + addition.
    assert store.transfer(work, "a.ics", work, "b.ics", move=True).created
    assert [o.name for o in store.objects(work.id)] == ["b.ics"]
    assert [(c.name, c.kind) for c in store.changes_since(work.id, token).changes] == [
        ("a.ics", "removed"),
        ("b.ics", "added"),
    ]
    # A calendar that does not take VEVENT refuses it; a copy into the same calendar is a
    # UID conflict.
    with pytest.raises(errors.UnsupportedComponent):
        store.transfer(work, "b.ics", home, "b.ics", move=True)
    with pytest.raises(errors.UidConflict):
        store.transfer(work, "b.ics", work, "c.ics", move=False)
    # Copy to another calendar, then move over an existing one (Overwrite T / F).
    assert store.transfer(work, "b.ics", other, "b.ics", move=False).created
    store.put_object(work, "x.ics", ev("x"))
    with pytest.raises(errors.PreconditionFailed):
        store.transfer(work, "x.ics", other, "b.ics", move=True, overwrite=False)
    result = store.transfer(work, "x.ics", other, "b.ics", move=True)
    assert not result.created
    got = store.object(other.id, "b.ics")
    assert got is not None and got.uid == "x"
    assert [o.name for o in store.objects(work.id)] == ["b.ics"]
    with pytest.raises(errors.NotFound):
        store.transfer(work, "nope.ics", other, "n.ics", move=True)


def test_concurrent_conditional_puts_of_one_object_let_one_win(store: CalendarStore) -> None:
    """Four clients replace one object with If-Match on the ETag they all read: one wins,
    the others get 412 (PostgreSQL locks the row; SQLite has one writer), and the object and
    its change log are the winner's."""
    import threading

    cal = store.create_collection(1, "lost-update")
    first = store.put_object(cal, "o.ics", ev("one-uid"))
    token = store.sync_token(cal.id)
    barrier = threading.Barrier(4)
    outcomes: dict[int, str] = {}

    def writer(n: int) -> None:
        body = ev("one-uid", "20260105T100000Z", f"SUMMARY:writer {n}")
        barrier.wait()
        try:
            outcomes[n] = store.put_object(cal, "o.ics", body, if_match=[first.etag]).etag
        except errors.PreconditionFailed:
            outcomes[n] = "412"

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    winners = [etag for etag in outcomes.values() if etag != "412"]
    assert len(winners) == 1 and len(outcomes) == 4
    assert store.objects(cal.id)[0].etag == winners[0]
    changes = store.changes_since(cal.id, token).changes
    assert [(c.name, c.kind) for c in changes] == [("o.ics", "modified")]


def test_concurrent_puts_of_one_uid_leave_one_object(store: CalendarStore) -> None:
    import threading

    cal = store.create_collection(1, "race")
    barrier = threading.Barrier(4)
    outcomes: list[str] = []

    def writer(n: int) -> None:
        barrier.wait()
        try:
            store.put_object(cal, f"r{n}.ics", ev("shared-uid"))
            outcomes.append("stored")
        except errors.UidConflict:
            outcomes.append("conflict")

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["conflict", "conflict", "conflict", "stored"]
    assert len(store.objects(cal.id)) == 1
    assert len(store.changes_since(cal.id, None).changes) == 1
