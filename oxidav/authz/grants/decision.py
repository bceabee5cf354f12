"""``Decision``: the answer of every authorization question, with the HTTP status to give.

A denial carries the status the caller must answer with: 404 where saying "forbidden" would
reveal that the resource exists (the principal cannot see it), 403 where the principal can
already see it (a reader trying to write).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Decision:
    allowed: bool
    status: int = 200
    reason: str = ""
    #: The permission bits the principal holds on the resource (None: none, or not a grant
    #: question).
    permissions: int | None = None


ALLOW = Decision(True)
