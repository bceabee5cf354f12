"""``oc:share-types`` 3 (public link): the share-type source ``make_app`` gives the enricher.

``link_share_types`` answers, for one PROPFIND page, which of its nodes carry a live public
link made by their owner or by the caller (a manager who reshared) — one prepared read on
``ix_public_links_resource`` per ``PreparedReadsByCount.MOST`` nodes. An expired link counts
for nothing; a deleted one is gone. ``oxidav.app.make_app`` registers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Integer, Select, bindparam, or_, select

from oxidav.db import Database, UTCDateTime, utcnow
from oxidav.db.models.links import PublicLink
from oxidav.db.prepared import PreparedReadsByCount
from oxidav.nextcloud.enrichers import SHARE_LINK, shared_nodes


def _links_of(node_ids: Any) -> Select[int]:
    link = PublicLink
    now = bindparam("now", type_=UTCDateTime())
    return (
        select(link.resource_id)
        .where(
            *shared_nodes(
                link.resource_kind, link.resource_id, link.owner_id, link.created_by, node_ids
            ),
            or_(link.expires_at.is_(None), link.expires_at > now),
        )
        .distinct()
    )


_LINKS_OF = PreparedReadsByCount("node", _links_of, Integer())


def link_share_types(
    db: Database, user_id: int, node_ids: Sequence[int]
) -> Iterable[tuple[int, int]]:
    """``(node id, 3)`` for each of ``node_ids`` with a live link of its owner or ``user_id``."""
    rows = _LINKS_OF.rows(db, node_ids, user_id=user_id, now=utcnow())
    return [(int(row[0]), SHARE_LINK) for row in rows]
