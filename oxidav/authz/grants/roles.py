"""Actions, permission bits, and the one table that says which bit allows which action.

A grant gives its subject a set of **permission bits** on a resource, Nextcloud's (OCS Share
API, ``OCP\\Constants::PERMISSION_*``), stored as given and enforced one by one:

- ``READ`` (1): read, list, copy from;
- ``UPDATE`` (2): overwrite, rename in place, lock, set properties;
- ``CREATE`` (4): new files and folders in a folder, move something in;
- ``DELETE`` (8): delete, move something out;
- ``SHARE`` (16): reshare, with at most the bits held.

Several grants that reach one resource add their bits up (as Nextcloud joins the shares of one
node). The owner of a resource (the user it belongs to) may do everything.

Most actions are judged on the bits held on the resource itself. ``DELETE`` and ``MOVE_OUT``
change the membership of the resource's folder, so they are judged on the bits inherited from
the resource's ancestors: a grant made directly on a file lets its holder edit the file but not
delete it or move it away, as in Nextcloud, where a file share never carries the delete bit.

``Role`` names are the operator's shorthands for common sums (``oxidav share add --role``):
viewer 1, editor 15, manager 31; ``owner`` (a co-owner) is 31 as well.
"""

from __future__ import annotations

from enum import Enum, IntFlag


class Action(Enum):
    """What a request wants to do with one resource."""

    READ = "read"  #: GET / HEAD, PROPFIND Depth 0, REPORT on the resource
    LIST = "list"  #: PROPFIND Depth 1 on a collection: see its members
    WRITE = "write"  #: replace the content (PUT on an existing resource)
    RENAME = "rename"  #: MOVE to a new name in the same folder
    CREATE = "create"  #: create a member in this collection (PUT of a new name, MKCOL)
    DELETE = "delete"  #: DELETE this resource (judged on its folder)
    MOVE_IN = "move_in"  #: MOVE something into this collection (the Destination side)
    MOVE_OUT = "move_out"  #: MOVE this resource to another folder (judged on its folder)
    COPY = "copy"  #: COPY this resource somewhere (the source side)
    LOCK = "lock"  #: LOCK / UNLOCK of an existing resource (RFC 4918 §9.10, §9.11)
    PROPPATCH = "proppatch"  #: set or remove dead properties (RFC 4918 §9.2)
    RESHARE = "reshare"  #: grant others access to this resource


class Permission(IntFlag):
    """Nextcloud's share permission bits."""

    READ = 1
    UPDATE = 2
    CREATE = 4
    DELETE = 8
    SHARE = 16


#: Every bit: what the owner holds.
ALL = sum(int(bit) for bit in Permission)
#: The bits a file share can carry (Nextcloud strips create and delete from file shares).
FILE_BITS = ALL & ~int(Permission.CREATE | Permission.DELETE)

#: The one place that says which bit allows which action.
ACTION_BITS: dict[Action, int] = {
    Action.READ: Permission.READ,
    Action.LIST: Permission.READ,
    Action.COPY: Permission.READ,
    Action.WRITE: Permission.UPDATE,
    Action.RENAME: Permission.UPDATE,
    Action.LOCK: Permission.UPDATE,
    Action.PROPPATCH: Permission.UPDATE,
    Action.CREATE: Permission.CREATE,
    Action.MOVE_IN: Permission.CREATE,
    Action.DELETE: Permission.DELETE,
    Action.MOVE_OUT: Permission.DELETE,
    Action.RESHARE: Permission.SHARE,
}

#: Actions judged on the bits held on the resource's folder, not on the resource itself.
MEMBERSHIP_ACTIONS = frozenset({Action.DELETE, Action.MOVE_OUT})


class Role(Enum):
    """Names for common sums of bits (the operator's ``--role``)."""

    VIEWER = "viewer"
    EDITOR = "editor"
    MANAGER = "manager"
    OWNER = "owner"

    @property
    def permissions(self) -> int:
        return _ROLE_BITS[self]


_ROLE_BITS = {
    Role.VIEWER: int(Permission.READ),
    Role.EDITOR: ALL & ~int(Permission.SHARE),
    Role.MANAGER: ALL,
    Role.OWNER: ALL,
}


def bits_of(access: Role | int) -> int:
    """The bits of a role, or the bits themselves."""
    return access.permissions if isinstance(access, Role) else int(access)


def describe(bits: int) -> str:
    """``editor``, ``17`` …: the role name when the bits are exactly one, else the bits."""
    names = [r.value for r in (Role.VIEWER, Role.EDITOR, Role.MANAGER) if r.permissions == bits]
    return names[0] if names else str(bits)


def allows(bits: int | None, action: Action) -> bool:
    """Whether ``bits`` (None or 0: nothing held) allow ``action``."""
    if not bits:
        return False
    needed = ACTION_BITS[action]
    return bits & needed == needed
