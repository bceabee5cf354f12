"""The per-collection change log: record changes, issue tokens, answer "what changed since".

All functions take the caller's ``Session`` so a change is logged in the same transaction as the
data it describes (a member row written and its log entry commit or roll back together).

Writers of one collection are serialised by the counter row: ``record_change`` first increments
``sync_collections.seq`` (a row lock on PostgreSQL, the database lock on SQLite), so sequence
numbers are handed out in commit order per collection, and a reader that sees counter value S
also sees every change numbered up to S.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import Integer, and_, bindparam, delete, insert, not_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from oxidav.db import Transaction, core
from oxidav.db.models.sync import SyncChange, SyncCollection
from oxidav.db.prepared import Prepared
from oxidav.sync.tokens import InvalidSyncToken, SyncToken, parse_token

ChangeKind = Literal["added", "modified", "removed"]


@dataclass(frozen=True)
class Change:
    """One member that changed since a token: ``kind`` is relative to that token (a member
    created after the token is "added" even if it was modified since)."""

    name: str
    kind: ChangeKind
    seq: int


@dataclass(frozen=True)
class ChangeSet:
    changes: list[Change]
    token: str
    #: True when ``limit`` cut the answer short; ``token`` then resumes right after the last
    #: change returned (RFC 6578 §3.6).
    truncated: bool


def _new_epoch() -> str:
    return secrets.token_hex(4)


def init_collection(session: Session, kind: str, collection_id: int) -> str:
    """Start the log of a new collection (call in the transaction that creates it).

    Any state left by an earlier collection with the same id is discarded and a new epoch is
    drawn, so tokens of the old one stop validating. Returns the first token.
    """
    drop_collection(session, kind, collection_id)
    epoch = _new_epoch()
    session.add(SyncCollection(kind=kind, collection_id=collection_id, epoch=epoch, seq=0))
    session.flush()
    return str(SyncToken(kind, collection_id, epoch, 0))


def drop_collection(session: Session, kind: str, collection_id: int) -> None:
    """Forget a collection's log (call in the transaction that deletes the collection)."""
    session.execute(
        delete(SyncChange).where(SyncChange.kind == kind, SyncChange.collection_id == collection_id)
    )
    session.execute(
        delete(SyncCollection).where(
            SyncCollection.kind == kind, SyncCollection.collection_id == collection_id
        )
    )


_BUMP = Prepared(
    update(SyncCollection)
    .where(
        SyncCollection.kind == bindparam("k_kind"),
        SyncCollection.collection_id == bindparam("k_collection"),
    )
    .values(seq=SyncCollection.seq + 1)
    .returning(SyncCollection.seq)
)
_CHANGE_OF = Prepared(
    select(SyncChange.id, SyncChange.removed, SyncChange.created_seq).where(
        SyncChange.kind == bindparam("k_kind"),
        SyncChange.collection_id == bindparam("k_collection"),
        SyncChange.name == bindparam("k_name"),
    )
)
_ADD_CHANGE = Prepared(
    insert(SyncChange).values(
        kind=bindparam("k_kind"),
        collection_id=bindparam("k_collection"),
        name=bindparam("k_name"),
        seq=bindparam("k_seq"),
        created_seq=bindparam("k_created"),
        removed=bindparam("k_removed"),
    )
)
_SET_CHANGE = Prepared(
    update(SyncChange)
    .where(SyncChange.id == bindparam("k_id"))
    .values(
        seq=bindparam("k_seq"), created_seq=bindparam("k_created"), removed=bindparam("k_removed")
    )
)


def _bump(transaction: Transaction, kind: str, collection_id: int) -> int:
    """Increment the collection's counter and return the new value (creating it if needed)."""
    params = {"k_kind": kind, "k_collection": collection_id}
    found = _BUMP.run(core(transaction), params).first()
    if found is not None:
        return int(found[0])
    try:
        with transaction.begin_nested():
            core(transaction).execute(
                insert(SyncCollection).values(
                    kind=kind, collection_id=collection_id, epoch=_new_epoch(), seq=0
                )
            )
    except IntegrityError:
        pass  # created concurrently; the update below waits for it
    return int(_BUMP.run(core(transaction), params).one()[0])


def record_change(
    transaction: Transaction, kind: str, collection_id: int, name: str, change: ChangeKind
) -> int:
    """Log that member ``name`` was added, modified or removed; return the change's sequence
    number (which is also the collection's new CTag value). ``transaction``: the caller's
    session (its pending changes are flushed first) or Core connection; the statements are
    built once."""
    seq = _bump(transaction, kind, collection_id)
    connection = core(transaction)
    key = {"k_kind": kind, "k_collection": collection_id, "k_name": name}
    row = _CHANGE_OF.run(connection, key).first()
    removed = change == "removed"
    if row is None:
        # A member unknown to the log existed before logging began: its life starts at 0.
        created = seq if change == "added" else 0
        _ADD_CHANGE.run(
            connection, {**key, "k_seq": seq, "k_created": created, "k_removed": removed}
        )
    else:
        change_id, was_removed, created = row
        if change == "added" or (was_removed and not removed):
            created = seq
        _SET_CHANGE.run(
            connection,
            {"k_id": change_id, "k_seq": seq, "k_created": created, "k_removed": removed},
        )
    return seq


_COUNTER = Prepared(
    select(SyncCollection.epoch, SyncCollection.seq, SyncCollection.min_seq).where(
        SyncCollection.kind == bindparam("kind"),
        SyncCollection.collection_id == bindparam("collection_id"),
    )
)


def _changes_read(after_token: bool, limited: bool) -> Prepared:
    """The changed members after ``:since`` up to ``:head`` (``changes_since``), in change
    order; ``limited``: at most ``:limit`` rows."""
    since = bindparam("since", type_=Integer())
    visible = (
        not_(and_(SyncChange.removed, SyncChange.created_seq > since))
        if after_token
        else not_(SyncChange.removed)
    )
    statement = (
        select(SyncChange.name, SyncChange.removed, SyncChange.created_seq, SyncChange.seq)
        .where(
            SyncChange.kind == bindparam("kind"),
            SyncChange.collection_id == bindparam("collection_id"),
            SyncChange.seq > since,
            SyncChange.seq <= bindparam("head"),
            visible,
        )
        .order_by(SyncChange.seq)
    )
    if limited:
        statement = statement.limit(bindparam("limit"))
    return Prepared(statement)


#: (after a token, limited) -> the statement of ``changes_since``, built once.
_CHANGES = {
    (token, limited): _changes_read(token, limited)
    for token in (False, True)
    for limited in (False, True)
}


def _counter_values(session: Session, kind: str, collection_id: int) -> tuple[str, int, int]:
    """(epoch, seq, min_seq) of the collection's counter, ("0", 0, 0) if it has none; in the
    session's transaction, with a statement built once."""
    row = _COUNTER.run(core(session), {"kind": kind, "collection_id": collection_id}).first()
    return ("0", 0, 0) if row is None else (row[0], row[1], row[2])


def current_seq(session: Session, kind: str, collection_id: int) -> int:
    """The collection's latest sequence number (0 if nothing was ever logged)."""
    return _counter_values(session, kind, collection_id)[1]


def current_token(session: Session, kind: str, collection_id: int) -> str:
    """The token naming the collection's present state (DAV:sync-token)."""
    epoch, seq, _horizon = _counter_values(session, kind, collection_id)
    return str(SyncToken(kind, collection_id, epoch, seq))


def changes_since(
    session: Session,
    kind: str,
    collection_id: int,
    token: str | None,
    limit: int | None = None,
) -> ChangeSet:
    """The members that changed after ``token`` (all present members if ``token`` is empty),
    in change order, at most ``limit`` of them.

    Raises ``InvalidSyncToken`` for a token of another collection or collection life, or one
    older than the log's horizon. A member created and removed after the token is not
    reported; one removed is reported as "removed" (RFC 6578 §3.5.1).
    """
    epoch, head, horizon = _counter_values(session, kind, collection_id)
    since = 0
    if token:
        parsed = parse_token(token)
        if (
            parsed.kind != kind
            or parsed.collection_id != collection_id
            or parsed.epoch != epoch
            or parsed.seq > head
            or parsed.seq < horizon
        ):
            raise InvalidSyncToken(f"sync token {token!r} is not valid for this collection")
        since = parsed.seq
    params = {"kind": kind, "collection_id": collection_id, "since": since, "head": head}
    if limit is not None:
        params["limit"] = limit + 1
    read = _CHANGES[(bool(token), limit is not None)]
    rows = read.run(core(session), params).rows
    truncated = limit is not None and len(rows) > limit
    if truncated:
        rows = rows[:limit]
    changes = [
        Change(
            name=name,
            kind="removed"
            if removed
            else ("added" if created > since or not token else "modified"),
            seq=seq,
        )
        for name, removed, created, seq in rows
    ]
    end = rows[-1][3] if truncated and rows else head
    return ChangeSet(changes, str(SyncToken(kind, collection_id, epoch, end)), truncated)


__all__ = [
    "Change",
    "ChangeKind",
    "ChangeSet",
    "InvalidSyncToken",
    "changes_since",
    "current_seq",
    "current_token",
    "drop_collection",
    "init_collection",
    "record_change",
]
