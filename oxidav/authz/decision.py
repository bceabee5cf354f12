"""``Decision``: the answer of every authorization question, with the HTTP status to give.

A denial carries the status the caller must answer with: 404 where saying "forbidden" would
reveal that the resource exists (the principal cannot see it), 403 where the principal can
already see it (a viewer trying to write).
"""

from __future__ import annotations

from dataclasses import dataclass

from oxidav.authz.roles import Role


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    status: int = 200
    reason: str = ""
    #: The role the principal holds on the resource (None: none, or not a grant question).
    role: Role | None = None


ALLOW = Decision(True)
