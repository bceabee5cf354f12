"""Who may touch which path: the single place where access decisions are made.

For now the rule is ownership: a user reaches only the user-scoped collections that carry their
own name (files, calendars, address books, uploads, trashbin). Anything else that is
user-scoped answers 404, not 403, so that a probe cannot tell whether another user (or their
file) exists. Grants (``oxidav.authz.engine``) will extend this rule, not the handlers.
"""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

from oxidav.authz.decision import ALLOW, Decision
from oxidav.providers.urls import owner_of_path

__all__ = ["ALLOW", "Decision", "decide", "destination_path"]


def destination_path(destination: str) -> str:
    """The decoded path of a ``Destination`` header (absolute URL or absolute path)."""
    return unquote(urlsplit(destination).path)


def decide(username: str, path: str, destination: str | None = None) -> Decision:
    """May ``username`` act on ``path`` (and, for COPY/MOVE, on ``destination``)?"""
    for target, what in ((path, "path"), (destination, "destination")):
        if target is None:
            continue
        owner = owner_of_path(target)
        if owner is not None and owner != username:
            return Decision(False, 404, f"{what} belongs to another user")
    return ALLOW
