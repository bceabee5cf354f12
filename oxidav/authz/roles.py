"""Actions, roles, and the one table that says which role allows which action.

A grant gives its subject a ``Role`` on a resource. Roles are nested: every role allows what the
role below it allows (viewer < editor < manager < owner), so the strongest of several grants is
the one that counts. The owner of a resource (the user it belongs to) may do everything; so may
a co-owner (a grant with role ``owner``).

Most actions are judged on the resource itself. ``DELETE`` and ``MOVE_OUT`` change the
membership of the resource's folder, so they are judged on the role the principal holds on that
folder (the role inherited from the resource's ancestors): a grant made directly on a file lets
its holder edit the file but not delete it or move it away, as in Nextcloud, where a file share
never carries the delete permission.
"""

from __future__ import annotations

from enum import Enum


class Action(Enum):
    """What a request wants to do with one resource."""

    READ = "read"  #: GET / HEAD, PROPFIND Depth 0, REPORT on the resource
    LIST = "list"  #: PROPFIND Depth 1 on a collection: see its members
    WRITE = "write"  #: replace the content (PUT on an existing resource)
    CREATE = "create"  #: create a member in this collection (PUT of a new name, MKCOL)
    DELETE = "delete"  #: DELETE this resource (judged on its folder)
    MOVE_IN = "move_in"  #: MOVE something into this collection (the Destination side)
    MOVE_OUT = "move_out"  #: MOVE this resource away (the source side; judged on its folder)
    COPY = "copy"  #: COPY this resource somewhere (the source side)
    LOCK = "lock"  #: LOCK / UNLOCK (RFC 4918 §9.10, §9.11)
    PROPPATCH = "proppatch"  #: set or remove dead properties (RFC 4918 §9.2)
    RESHARE = "reshare"  #: grant others access to this resource


class Role(Enum):
    """What a grant gives, weakest first (``rank`` orders them)."""

    VIEWER = "viewer"
    EDITOR = "editor"
    MANAGER = "manager"
    OWNER = "owner"

    @property
    def rank(self) -> int:
        return _RANK[self]


_RANK = {Role.VIEWER: 1, Role.EDITOR: 2, Role.MANAGER: 3, Role.OWNER: 4}

_VIEW = frozenset({Action.READ, Action.LIST, Action.COPY})
_EDIT = _VIEW | {
    Action.WRITE,
    Action.CREATE,
    Action.DELETE,
    Action.MOVE_IN,
    Action.MOVE_OUT,
    Action.LOCK,
    Action.PROPPATCH,
}

#: The one place that says which role allows which action.
ROLE_ACTIONS: dict[Role, frozenset[Action]] = {
    Role.VIEWER: _VIEW,
    Role.EDITOR: frozenset(_EDIT),
    Role.MANAGER: frozenset(_EDIT | {Action.RESHARE}),
    Role.OWNER: frozenset(Action),
}

#: Actions judged on the role held on the resource's folder, not on the resource itself.
MEMBERSHIP_ACTIONS = frozenset({Action.DELETE, Action.MOVE_OUT})


def allows(role: Role | None, action: Action) -> bool:
    """Whether ``role`` (None: no role at all) allows ``action``."""
    return role is not None and action in ROLE_ACTIONS[role]


def strongest(a: Role | None, b: Role | None) -> Role | None:
    """The stronger of two roles (None is weaker than any role)."""
    if a is None:
        return b
    if b is None:
        return a
    return a if a.rank >= b.rank else b
