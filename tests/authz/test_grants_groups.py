"""Groups: nesting resolved at any depth, cycles refused, deletions cascade; grant records."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import delete, func, select

from oxidav.authz.grants import groups
from oxidav.authz.grants import store as grants
from oxidav.authz.grants.groups import GroupError
from oxidav.authz.grants.roles import Action, Role
from oxidav.authz.grants.store import GrantError, Subject
from oxidav.db.models.authz import Grant, GroupMember
from oxidav.db.models.users import User
from tests.support.grants import World


def make_groups(world: World, *names: str) -> list[int]:
    with world.db.write() as s:
        return [groups.create_group(s, name) for name in names]


def nest(world: World, outer: int, inner: int) -> None:
    with world.db.write() as s:
        groups.add_member(s, outer, member_group=inner)


def test_nested_groups_reach_the_user(world: World) -> None:
    g1, g2, g3, other = make_groups(world, "g1", "g2", "g3", "other")
    with world.db.write() as s:
        groups.add_member(s, g1, user_id=world.bob.user_id)
    nest(world, g2, g1)
    nest(world, g3, g2)
    nest(world, g3, g1)  # a diamond is not a cycle
    with world.db.read() as s:
        assert groups.user_group_ids(s, world.bob.user_id) == {g1, g2, g3}
        assert groups.user_group_ids(s, world.carol.user_id) == set()
    with world.db.write() as s:
        grants.grant(s, Subject.group(g3), world.res("/A/S"), Role.EDITOR)
        grants.grant(s, Subject.group(other), world.res("/A/T"), Role.EDITOR)
    engine = world.engine()
    assert engine.check(world.bob, Action.WRITE, world.res("/A/S/sub/h.txt")).allowed
    assert engine.check(world.bob, Action.READ, world.res("/A/T/x.txt")).status == 404
    assert engine.check(world.carol, Action.READ, world.res("/A/S/f.txt")).status == 404


def test_the_strongest_of_several_grants_counts(world: World) -> None:
    (team,) = make_groups(world, "team")
    with world.db.write() as s:
        groups.add_member(s, team, user_id=world.bob.user_id)
        grants.grant(s, Subject.group(team), world.res("/A"), Role.VIEWER)
        grants.grant(s, Subject.user(world.bob.user_id), world.res("/A/S"), Role.MANAGER)
    engine = world.engine()
    assert engine.request(world.bob).bits(world.res("/A/S/f.txt")) == Role.MANAGER.permissions
    assert engine.request(world.bob).bits(world.res("/A/T/x.txt")) == Role.VIEWER.permissions


@pytest.mark.parametrize("chain_length", [1, 2, 4])
def test_cycles_are_refused(world: World, chain_length: int) -> None:
    ids = make_groups(world, *(f"c{i}" for i in range(chain_length)))
    for outer, inner in zip(ids[1:], ids, strict=False):
        nest(world, outer, inner)  # c0 in c1 in c2 ...
    with pytest.raises(GroupError, match="cycle"), world.db.write() as s:
        groups.add_member(s, ids[0], member_group=ids[-1])
    with world.db.read() as s:
        edges = s.scalar(select(func.count()).select_from(GroupMember))
    assert edges == chain_length - 1  # nothing was added


def test_membership_errors(world: World) -> None:
    (team,) = make_groups(world, "team")
    with world.db.write() as s:
        groups.add_member(s, team, user_id=world.bob.user_id)
    with pytest.raises(GroupError, match="already"), world.db.write() as s:
        groups.add_member(s, team, user_id=world.bob.user_id)
    with pytest.raises(GroupError, match="not a member"), world.db.write() as s:
        groups.remove_member(s, team, user_id=world.carol.user_id)
    with pytest.raises(GroupError, match="exists"), world.db.write() as s:
        groups.create_group(s, "team")
    with pytest.raises(GroupError, match="invalid"), world.db.write() as s:
        groups.create_group(s, "a/b")
    with pytest.raises(GroupError, match="no group"), world.db.read() as s:
        groups.group_id(s, "nope")


def test_deleting_a_group_drops_its_memberships_and_grants(world: World) -> None:
    outer, team = make_groups(world, "outer", "team")
    nest(world, outer, team)
    with world.db.write() as s:
        groups.add_member(s, team, user_id=world.bob.user_id)
        grants.grant(s, Subject.group(team), world.res("/A"), Role.EDITOR)
    engine = world.engine(ttl=3600)
    assert engine.check(world.bob, Action.READ, world.res("/A/S/f.txt")).allowed
    with world.db.write() as s:
        groups.delete_group(s, "team")
    assert engine.check(world.bob, Action.READ, world.res("/A/S/f.txt")).status == 404
    with world.db.read() as s:
        assert s.scalar(select(func.count()).select_from(GroupMember)) == 0
        assert s.scalar(select(func.count()).select_from(Grant)) == 0
        assert [g.name for g in groups.list_groups(s)] == ["outer"]


def test_deleting_a_user_drops_their_grants(world: World) -> None:
    with world.db.write() as s:
        grants.grant(s, Subject.user(world.bob.user_id), world.res("/A"), Role.EDITOR)
        grants.grant(s, Subject.user(world.carol.user_id), world.res("/A"), Role.EDITOR)
        s.execute(delete(User).where(User.id == world.bob.user_id))
    with world.db.read() as s:
        left = grants.list_grants(s)
    assert [g.subject for g in left] == [Subject.user(world.carol.user_id)]


def test_grant_records(world: World) -> None:
    bob = Subject.user(world.bob.user_id)
    folder = world.res("/A/S")
    with world.db.write() as s:
        first = grants.grant(s, bob, folder, Role.VIEWER, created_by=world.alice.user_id)
        again = grants.grant(s, bob, folder, Role.EDITOR)
    assert first == again  # one grant per subject and resource: updated in place
    with world.db.read() as s:
        (info,) = grants.list_grants(s, resource=folder)
        assert grants.list_grants(s, subject=Subject.user(world.carol.user_id)) == []
        assert grants.list_grants(s, owner_id=world.alice.user_id) == [info]
    assert (info.permissions, info.owner_id, info.created_by) == (
        Role.EDITOR.permissions,
        world.alice.user_id,
        world.alice.user_id,
    )
    with pytest.raises(GrantError, match="owner"), world.db.write() as s:
        grants.grant(s, Subject.user(world.alice.user_id), folder, Role.VIEWER)
    with pytest.raises(GrantError, match="past"), world.db.write() as s:
        grants.grant(s, bob, folder, Role.VIEWER, expires_at=world.clock() - timedelta(1))
    with pytest.raises(GrantError, match="no grant"), world.db.write() as s:
        grants.revoke(s, first + 1000)
    with world.db.write() as s:
        assert grants.revoke_resources(s, folder.kind, [folder.id]) == 1
    assert world.engine().check(world.bob, Action.READ, folder).status == 404
