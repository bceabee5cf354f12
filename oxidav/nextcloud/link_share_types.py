"""``oc:share-types`` 3 (public link): the share-type source ``make_app`` gives the enricher.

``link_share_types`` answers, for one PROPFIND page, which of its nodes carry a live public
link made by their owner or by the caller (a manager who reshared) — one query on
``ix_public_links_resource``. An expired link counts for nothing; a deleted one is gone.
``oxidav.app.make_app`` registers it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sqlalchemy import or_, select
from sqlalchemy.orm import Session

from oxidav.authz.grants.resources import ResourceKind
from oxidav.db import utcnow
from oxidav.db.models.links import PublicLink
from oxidav.nextcloud.enrichers import SHARE_LINK


def link_share_types(
    session: Session, user_id: int, node_ids: Sequence[int]
) -> Iterable[tuple[int, int]]:
    """``(node id, 3)`` for each of ``node_ids`` with a live link of its owner or ``user_id``."""
    if not node_ids:
        return []
    rows = session.scalars(
        select(PublicLink.resource_id)
        .where(
            PublicLink.resource_kind.in_([ResourceKind.FOLDER.value, ResourceKind.FILE.value]),
            PublicLink.resource_id.in_(node_ids),
            or_(PublicLink.owner_id == user_id, PublicLink.created_by == user_id),
            or_(PublicLink.expires_at.is_(None), PublicLink.expires_at > utcnow()),
        )
        .distinct()
    )
    return [(int(node_id), SHARE_LINK) for node_id in rows]
