"""Groups of users, nested groups, and the resolution of a user's groups.

A group's members are users and other groups. A member group's members are members too, at any
depth, so a user belongs to every group reachable upwards from them. Membership never forms a
cycle: adding group H to group G is refused when G is H or already nested inside H.

Every change runs in the caller's transaction and first bumps the grants generation
(``oxidav.authz.grants.generation``): membership decides what grants reach a user, so caches of a
user's grants must not survive it, and on PostgreSQL the bump's row lock serializes concurrent
membership changes so two of them cannot close a cycle together.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sqlalchemy import CTE, Integer, delete, literal, select
from sqlalchemy.orm import Session

from oxidav.authz.grants import generation
from oxidav.db.models.authz import GroupMember, UserGroup
from oxidav.db.models.users import User

GROUP_NAME_RE = re.compile(r"^[^\x00-\x1f/\\]{1,64}$")


class GroupError(ValueError):
    """A group operation that cannot be done (bad or duplicate name, unknown group, cycle)."""


@dataclass(frozen=True)
class GroupInfo:
    id: int
    name: str
    users: tuple[str, ...]
    groups: tuple[str, ...]


def group_id(session: Session, name: str) -> int:
    """The id of the group ``name``; ``GroupError`` if there is none."""
    found = session.scalar(select(UserGroup.id).where(UserGroup.name == name))
    if found is None:
        raise GroupError(f"no group {name!r}")
    return int(found)


def create_group(session: Session, name: str) -> int:
    if not GROUP_NAME_RE.match(name) or name.strip() != name:
        raise GroupError(f"invalid group name {name!r}: 1-64 characters, no '/' or '\\'")
    generation.bump(session)
    if session.scalar(select(UserGroup.id).where(UserGroup.name == name)) is not None:
        raise GroupError(f"group {name!r} already exists")
    group = UserGroup(name=name)
    session.add(group)
    session.flush()
    return group.id


def delete_group(session: Session, name: str) -> None:
    """Delete a group; its memberships and the grants made to it go with it (cascade)."""
    gid = group_id(session, name)
    generation.bump(session)
    # Memberships (both ways) and grants to the group go by ON DELETE CASCADE.
    session.execute(delete(UserGroup).where(UserGroup.id == gid))


def nested_groups(outer: int) -> CTE:
    """A recursive CTE (column ``gid``): ``outer`` and every group nested in it, at any depth."""
    below = select(literal(outer, Integer).label("gid")).cte("below", recursive=True)
    step = select(GroupMember.member_group_id).where(
        GroupMember.group_id == below.c.gid, GroupMember.member_group_id.is_not(None)
    )
    return below.union(step)


def groups_of_user(user_id: int) -> CTE:
    """A recursive CTE (column ``gid``): every group ``user_id`` belongs to, nesting resolved.

    ``UNION`` (not ``UNION ALL``) makes the walk stop even if a cycle ever slipped in.
    """
    up = (
        select(GroupMember.group_id.label("gid"))
        .where(GroupMember.member_user_id == user_id)
        .cte("user_groups_up", recursive=True)
    )
    step = select(GroupMember.group_id).where(GroupMember.member_group_id == up.c.gid)
    return up.union(step)


def user_group_ids(session: Session, user_id: int) -> set[int]:
    """The ids of every group ``user_id`` belongs to (directly or through nesting)."""
    cte = groups_of_user(user_id)
    return {int(gid) for gid in session.scalars(select(cte.c.gid))}


def add_member(
    session: Session, group: int, *, user_id: int | None = None, member_group: int | None = None
) -> None:
    """Add a user or a group (exactly one) to ``group``; refuses cycles and duplicates."""
    if (user_id is None) == (member_group is None):
        raise GroupError("give exactly one member: a user or a group")
    generation.bump(session)
    if member_group is not None:
        nested = nested_groups(member_group)
        if session.scalar(select(nested.c.gid).where(nested.c.gid == group)) is not None:
            raise GroupError("adding this group would make a membership cycle")
        exists = select(GroupMember.id).where(
            GroupMember.group_id == group, GroupMember.member_group_id == member_group
        )
    else:
        exists = select(GroupMember.id).where(
            GroupMember.group_id == group, GroupMember.member_user_id == user_id
        )
    if session.scalar(exists) is not None:
        raise GroupError("already a member")
    session.add(GroupMember(group_id=group, member_user_id=user_id, member_group_id=member_group))
    session.flush()


def remove_member(
    session: Session, group: int, *, user_id: int | None = None, member_group: int | None = None
) -> None:
    """Remove a user or a group (exactly one) from ``group``; ``GroupError`` if not a member."""
    if (user_id is None) == (member_group is None):
        raise GroupError("give exactly one member: a user or a group")
    generation.bump(session)
    column = GroupMember.member_user_id if user_id is not None else GroupMember.member_group_id
    member = user_id if user_id is not None else member_group
    result = session.execute(
        delete(GroupMember)
        .where(GroupMember.group_id == group, column == member)
        .execution_options(synchronize_session=False)
    )
    if getattr(result, "rowcount", 1) == 0:
        raise GroupError("not a member")


def list_groups(session: Session) -> list[GroupInfo]:
    """Every group with its direct members (user names, group names), by name."""
    groups = session.execute(select(UserGroup.id, UserGroup.name).order_by(UserGroup.name)).all()
    users: dict[int, list[str]] = {}
    for gid, username in session.execute(
        select(GroupMember.group_id, User.username)
        .join(User, User.id == GroupMember.member_user_id)
        .order_by(User.username)
    ):
        users.setdefault(gid, []).append(username)
    names = {gid: name for gid, name in groups}
    nested: dict[int, list[str]] = {}
    for gid, member in session.execute(
        select(GroupMember.group_id, GroupMember.member_group_id).where(
            GroupMember.member_group_id.is_not(None)
        )
    ):
        if member is not None:
            nested.setdefault(gid, []).append(names[member])
    return [
        GroupInfo(gid, name, tuple(users.get(gid, ())), tuple(sorted(nested.get(gid, ()))))
        for gid, name in groups
    ]
