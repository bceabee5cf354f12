"""Favorites (``oc:favorite``): which nodes a user starred, read for a page in one query.

Favorites are per user everywhere: a mark is the marking user's, also on a node of another
user's tree (a share), and nobody ever sees another user's marks. Rows are keyed by node id,
so a favorite follows MOVE and rename. A row whose node was purged
is ignored by every read (they join or filter on live nodes) and removed on the next unset.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Integer, Select, bindparam, delete, insert, select
from sqlalchemy.orm import Session

from oxidav.db import Database
from oxidav.db.models.nextcloud import Favorite
from oxidav.db.models.tree import Node
from oxidav.db.prepared import PreparedReadsByCount
from oxidav.tree.nodes import select_live
from oxidav.tree.types import NodeInfo

BATCH = 500


def _chunks(ids: Sequence[int]) -> Iterable[Sequence[int]]:
    for start in range(0, len(ids), BATCH):
        yield ids[start : start + BATCH]


def _favorites_of(user_id: Any, node_ids: Any) -> Select[int]:
    return select(Favorite.node_id).where(
        Favorite.user_id == user_id, Favorite.node_id.in_(node_ids)
    )


_FAVORITES_OF = PreparedReadsByCount(
    "node", lambda ids: _favorites_of(bindparam("user_id", type_=Integer()), ids), Integer()
)


def favorite_ids(session: Session, user_id: int, node_ids: Sequence[int]) -> set[int]:
    """The subset of ``node_ids`` that ``user_id`` marked as favorite."""
    found: set[int] = set()
    for chunk in _chunks(list(node_ids)):
        found.update(session.scalars(_favorites_of(user_id, chunk)))
    return found


def read_favorite_ids(db: Database, user_id: int, node_ids: Sequence[int]) -> set[int]:
    """``favorite_ids`` outside any transaction, as prepared reads (a PROPFIND page's)."""
    return {row[0] for row in _FAVORITES_OF.rows(db, node_ids, user_id=user_id)}


def set_favorite(session: Session, user_id: int, node_id: int, favorite: bool) -> None:
    """Mark (or unmark) one node; idempotent."""
    exists = session.scalar(
        select(Favorite.node_id).where(Favorite.user_id == user_id, Favorite.node_id == node_id)
    )
    if favorite and exists is None:
        session.execute(insert(Favorite).values(user_id=user_id, node_id=node_id))
    elif not favorite and exists is not None:
        session.execute(
            delete(Favorite).where(Favorite.user_id == user_id, Favorite.node_id == node_id)
        )


def list_favorites(
    session: Session, user_id: int, below: str = "", owner_id: int | None = None
) -> list[NodeInfo]:
    """The live nodes ``user_id`` marked as favorite in ``owner_id``'s tree (default: their
    own) at or below tree path ``below``, ordered by path."""
    stmt = (
        select_live()
        .join(Favorite, (Favorite.node_id == Node.id) & (Favorite.user_id == user_id))
        .where(Node.user_id == (user_id if owner_id is None else owner_id))
        .order_by(Node.path)
    )
    if below:
        stmt = stmt.where((Node.path == below) | Node.path.startswith(below + "/", autoescape=True))
    return [NodeInfo.from_row(row) for row in session.execute(stmt)]
