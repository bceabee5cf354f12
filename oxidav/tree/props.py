"""Dead properties (RFC 4918 §4.1): stored per node id, read for a whole page in one query.

``get_props`` reads them in the caller's session; ``read_props`` — a PROPFIND page's — reads
the same statement as prepared reads outside any transaction (``oxidav.db.prepared``).

A value is the serialized XML element (``<ns:name …>…</ns:name>`` bytes), as WsgiDAV stores it.
Keyed by node id, the properties follow MOVE for free; COPY duplicates them (§9.8.2).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Integer, Select, delete, insert, select
from sqlalchemy.orm import Session

from oxidav.db import Database
from oxidav.db.models.tree import NodeProperty
from oxidav.db.prepared import PreparedReadsByCount

BATCH = 500


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), BATCH):
        yield ids[start : start + BATCH]


def _props_of(node_ids: Any) -> Select[int, str, bytes]:
    return select(NodeProperty.node_id, NodeProperty.name, NodeProperty.value).where(
        NodeProperty.node_id.in_(node_ids)
    )


_PROPS_OF = PreparedReadsByCount("node", _props_of, Integer())


def _by_node(rows: Iterable[Any]) -> dict[int, dict[str, bytes]]:
    result: dict[int, dict[str, bytes]] = {}
    for node_id, name, value in rows:
        result.setdefault(node_id, {})[name] = value
    return result


def get_props(session: Session, node_ids: Sequence[int]) -> dict[int, dict[str, bytes]]:
    """``{node id: {Clark name: value}}`` for every given node (nodes without props omitted)."""
    return _by_node(
        row for chunk in _chunks(list(node_ids)) for row in session.execute(_props_of(chunk))
    )


def read_props(db: Database, node_ids: Sequence[int]) -> dict[int, dict[str, bytes]]:
    """``get_props`` outside any transaction, each ``PreparedReadsByCount.MOST`` ids one
    prepared read (a PROPFIND page's nodes)."""
    return _by_node(_PROPS_OF.rows(db, node_ids))


def set_props(session: Session, node_id: int, changes: Sequence[tuple[str, bytes | None]]) -> None:
    """Apply PROPPATCH changes in order: ``(name, value)`` sets, ``(name, None)`` removes."""
    for name, value in changes:
        session.execute(
            delete(NodeProperty).where(NodeProperty.node_id == node_id, NodeProperty.name == name)
        )
        if value is not None:
            session.execute(insert(NodeProperty).values(node_id=node_id, name=name, value=value))


def copy_props(session: Session, id_map: dict[int, int]) -> None:
    """Give each new node (``id_map`` value) the dead properties of its source (key)."""
    rows: list[dict[str, object]] = []
    for node_id, props in get_props(session, list(id_map)).items():
        rows.extend(
            {"node_id": id_map[node_id], "name": name, "value": value}
            for name, value in props.items()
        )
    if rows:
        session.execute(insert(NodeProperty), rows)
