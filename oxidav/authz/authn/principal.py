"""``Principal``: who a request acts as once authenticated — the one name for it in oxidav.

Made by authentication (``Authenticator``), left in the environ (``oxidav.environ.principal_of``),
and read by authorization and every room after it. Immutable: a request cannot become another
user half-way.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Principal:
    """An authenticated user."""

    user_id: int
    username: str
