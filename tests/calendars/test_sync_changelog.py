"""The generic change log behind RFC 6578 sync tokens (oxidav.sync), on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest

from oxidav.db import Database
from oxidav.sync import (
    InvalidSyncToken,
    changes_since,
    current_seq,
    current_token,
    drop_collection,
    init_collection,
    parse_token,
    record_change,
)

K = "calendar"


def _names(cs):
    return [(c.name, c.kind) for c in cs.changes]


def test_initial_sync_lists_present_members(database: Database) -> None:
    with database.write() as s:
        t0 = init_collection(s, K, 1)
        record_change(s, K, 1, "a.ics", "added")
        record_change(s, K, 1, "b.ics", "added")
        record_change(s, K, 1, "c.ics", "added")
        record_change(s, K, 1, "b.ics", "removed")
    assert parse_token(t0).seq == 0
    with database.read() as s:
        cs = changes_since(s, K, 1, None)
        assert _names(cs) == [("a.ics", "added"), ("c.ics", "added")]
        assert not cs.truncated
        assert cs.token == current_token(s, K, 1)
        assert parse_token(cs.token).seq == 4 == current_seq(s, K, 1)


def test_incremental_changes_collapse_per_member(database: Database) -> None:
    with database.write() as s:
        init_collection(s, K, 7)
        record_change(s, K, 7, "a.ics", "added")
        record_change(s, K, 7, "b.ics", "added")
        record_change(s, K, 7, "gone.ics", "added")
    with database.read() as s:
        token = current_token(s, K, 7)
    with database.write() as s:
        record_change(s, K, 7, "a.ics", "modified")
        record_change(s, K, 7, "a.ics", "modified")
        record_change(s, K, 7, "new.ics", "added")
        record_change(s, K, 7, "new.ics", "modified")
        record_change(s, K, 7, "gone.ics", "removed")
        record_change(s, K, 7, "temp.ics", "added")
        record_change(s, K, 7, "temp.ics", "removed")
    with database.read() as s:
        cs = changes_since(s, K, 7, token)
    # temp.ics lived and died after the token: not reported. new.ics is "added" relative to the
    # token although its latest change is a modification.
    assert _names(cs) == [("a.ics", "modified"), ("new.ics", "added"), ("gone.ics", "removed")]
    with database.read() as s:
        assert changes_since(s, K, 7, cs.token).changes == []


def test_recreated_member_is_added_again(database: Database) -> None:
    with database.write() as s:
        init_collection(s, K, 1)
        record_change(s, K, 1, "a.ics", "added")
        record_change(s, K, 1, "a.ics", "removed")
    with database.read() as s:
        token = current_token(s, K, 1)
    with database.write() as s:
        record_change(s, K, 1, "a.ics", "added")
    with database.read() as s:
        assert _names(changes_since(s, K, 1, token)) == [("a.ics", "added")]
        assert _names(changes_since(s, K, 1, None)) == [("a.ics", "added")]


def test_limit_truncates_and_token_resumes_exactly(database: Database) -> None:
    with database.write() as s:
        init_collection(s, K, 3)
        for i in range(10):
            record_change(s, K, 3, f"{i}.ics", "added")
    seen: list[str] = []
    token: str | None = None
    pages = 0
    with database.read() as s:
        while True:
            cs = changes_since(s, K, 3, token, limit=3)
            seen += [c.name for c in cs.changes]
            token = cs.token
            pages += 1
            if not cs.truncated:
                break
    assert seen == [f"{i}.ics" for i in range(10)]
    assert pages == 4
    # Changes that happen between pages are picked up by the resumed token.
    with database.write() as s:
        record_change(s, K, 3, "0.ics", "modified")
    with database.read() as s:
        assert _names(changes_since(s, K, 3, token, limit=3)) == [("0.ics", "modified")]


def test_limit_exactly_reached_is_not_truncated(database: Database) -> None:
    with database.write() as s:
        init_collection(s, K, 3)
        record_change(s, K, 3, "a", "added")
        record_change(s, K, 3, "b", "added")
    with database.read() as s:
        cs = changes_since(s, K, 3, None, limit=2)
    assert not cs.truncated and len(cs.changes) == 2


@pytest.mark.parametrize(
    "bad",
    [
        "garbage",
        "http://oxidav.org/ns/sync/calendar-1-deadbeef/x",
        "http://example.com/sync/1",
    ],
)
def test_malformed_tokens_are_invalid(database: Database, bad: str) -> None:
    with database.write() as s:
        init_collection(s, K, 1)
    with database.read() as s, pytest.raises(InvalidSyncToken):
        changes_since(s, K, 1, bad)


def test_tokens_of_other_collections_and_future_are_invalid(database: Database) -> None:
    with database.write() as s:
        init_collection(s, K, 1)
        init_collection(s, K, 2)
        record_change(s, K, 1, "a", "added")
    with database.read() as s:
        t1 = current_token(s, K, 1)
        with pytest.raises(InvalidSyncToken):
            changes_since(s, K, 2, t1)
        with pytest.raises(InvalidSyncToken):
            changes_since(s, "addressbook", 1, t1)
        p = parse_token(t1)
        future = t1.rsplit("/", 1)[0] + f"/{p.seq + 5}"
        with pytest.raises(InvalidSyncToken):
            changes_since(s, K, 1, future)


def test_recreated_collection_rejects_old_tokens(database: Database) -> None:
    with database.write() as s:
        init_collection(s, K, 5)
        for i in range(5):
            record_change(s, K, 5, f"{i}", "added")
    with database.read() as s:
        old = current_token(s, K, 5)
    with database.write() as s:
        drop_collection(s, K, 5)
        init_collection(s, K, 5)
        for i in range(9):
            record_change(s, K, 5, f"{i}", "added")
    with database.read() as s, pytest.raises(InvalidSyncToken):
        changes_since(s, K, 5, old)


def test_record_change_creates_a_missing_counter(database: Database) -> None:
    with database.write() as s:
        assert record_change(s, K, 42, "a", "added") == 1
        assert record_change(s, K, 42, "b", "added") == 2
    with database.read() as s:
        assert _names(changes_since(s, K, 42, None)) == [("a", "added"), ("b", "added")]


def test_record_change_on_a_core_connection_logs_as_on_a_session(database: Database) -> None:
    with database.write_core() as connection:
        assert record_change(connection, K, 43, "a", "added") == 1  # the counter is created
        assert record_change(connection, K, 43, "a", "modified") == 2
        assert record_change(connection, K, 43, "b", "added") == 3
    with database.read() as s:
        token = changes_since(s, K, 43, None).token
    with database.write_core() as connection:
        assert record_change(connection, K, 43, "a", "removed") == 4
        assert record_change(connection, K, 43, "a", "added") == 5  # a new life
        assert record_change(connection, K, 43, "b", "removed") == 6
    with database.read() as s:
        assert _names(changes_since(s, K, 43, None)) == [("a", "added")]
        assert _names(changes_since(s, K, 43, token)) == [("a", "added"), ("b", "removed")]


def test_rolled_back_change_is_not_logged(database: Database) -> None:
    with database.write() as s:
        init_collection(s, K, 1)
    with pytest.raises(RuntimeError), database.write() as s:
        record_change(s, K, 1, "a", "added")
        raise RuntimeError("abort")
    with database.read() as s:
        assert current_seq(s, K, 1) == 0
        assert changes_since(s, K, 1, None).changes == []
