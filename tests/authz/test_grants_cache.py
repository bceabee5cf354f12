"""Caching without staleness: sibling isolation, revocation, expiry, moves, and query counts.

Query-count contract of the engine (``oxidav.authz.grants.engine``), asserted here: a listing of N
nodes in a folder shared with the principal costs 3 SELECTs, whatever N is (the generation,
the principal's grants with groups resolved, the folder's ancestor chain); the same listing
in a later request costs exactly 1 SELECT (the generation, the cheap revocation check).
"""

from __future__ import annotations

import logging
from datetime import timedelta

import pytest

from oxidav.authz.grants import groups
from oxidav.authz.grants import store as grants
from oxidav.authz.grants.resources import Resource, ResourceKind
from oxidav.authz.grants.roles import Action, Role
from oxidav.authz.grants.store import Subject
from oxidav.db import Database
from oxidav.tree import list_children, move_node, write_file
from tests.support.engine_events import recorded_selects
from tests.support.grants import NoRefs, World


def children(world: World, path: str) -> list[Resource]:
    folder = world.node(path)
    with world.db.read() as session:
        return [Resource.node(n) for n in list_children(session, folder.id)]


def share(world: World, path: str, subject: Subject, role: Role = Role.VIEWER, **kw: object) -> int:
    with world.db.write() as s:
        return grants.grant(s, subject, world.res(path), role, **kw)  # type: ignore[arg-type]


def statuses(decisions: list) -> list[int]:
    return [200 if d.allowed else d.status for d in decisions]


def test_sibling_isolation_after_folder_decision_is_cached(world: World) -> None:
    engine = world.engine()
    share(world, "/A/S", Subject.user(world.carol.user_id))  # carol: the whole folder
    share(world, "/A/S/f.txt", Subject.user(world.bob.user_id), Role.EDITOR)  # bob: one file
    listing = children(world, "/A/S")
    names = [r.path for r in listing]
    assert names == ["/A/S/f.txt", "/A/S/g.txt", "/A/S/sub"]
    # carol's folder decision (and the folder's ancestor chain) is now cached.
    assert statuses(engine.filter(world.carol, Action.READ, listing)) == [200, 200, 200]
    assert len(engine.chains) == 1
    for _ in range(2):  # cold, then warm
        assert statuses(engine.filter(world.bob, Action.READ, listing)) == [200, 404, 404]
        assert engine.check(world.bob, Action.WRITE, world.res("/A/S/f.txt")).allowed
        assert engine.check(world.bob, Action.READ, world.res("/A/S/g.txt")).status == 404
        assert engine.check(world.bob, Action.READ, world.res("/A/S/sub/h.txt")).status == 404
        assert engine.check(world.bob, Action.LIST, world.res("/A/S")).status == 404
    assert statuses(engine.filter(world.carol, Action.READ, listing)) == [200, 200, 200]


def test_revocation_by_another_process_takes_effect_on_the_next_request(world: World) -> None:
    engine = world.engine(ttl=3600)
    grant_id = share(world, "/A/S", Subject.user(world.bob.user_id), Role.EDITOR)
    file = world.res("/A/S/f.txt")
    assert engine.check(world.bob, Action.WRITE, file).allowed
    other = Database.from_url(world.db.engine.url.render_as_string(hide_password=False))
    try:
        with other.write() as s:  # another process: shares nothing in memory with `engine`
            grants.revoke(s, grant_id)
    finally:
        other.dispose()
    decision = engine.check(world.bob, Action.READ, file)
    assert (decision.allowed, decision.status) == (False, 404)


def test_downgrade_takes_effect_on_the_next_request(world: World) -> None:
    engine = world.engine(ttl=3600)
    share(world, "/A/S", Subject.user(world.bob.user_id), Role.EDITOR)
    file = world.res("/A/S/f.txt")
    assert engine.check(world.bob, Action.WRITE, file).allowed
    share(world, "/A/S", Subject.user(world.bob.user_id), Role.VIEWER)  # the same grant, updated
    decision = engine.check(world.bob, Action.WRITE, file)
    assert (decision.allowed, decision.status, decision.permissions) == (
        False,
        403,
        Role.VIEWER.permissions,
    )


def test_expiry_while_cached(world: World) -> None:
    engine = world.engine(ttl=3600)
    share(world, "/A/S", Subject.user(world.bob.user_id), expires_at=world.clock() + timedelta(1))
    file = world.res("/A/S/f.txt")
    assert engine.check(world.bob, Action.READ, file).allowed
    world.clock.offset = timedelta(days=1, seconds=1)
    assert engine.check(world.bob, Action.READ, file).status == 404


def test_leaving_a_group_takes_effect_on_the_next_request(world: World) -> None:
    engine = world.engine(ttl=3600)
    with world.db.write() as s:
        team = groups.create_group(s, "team")
        groups.add_member(s, team, user_id=world.bob.user_id)
    share(world, "/A", Subject.group(team))
    file = world.res("/A/S/sub/h.txt")
    assert engine.check(world.bob, Action.READ, file).allowed
    with world.db.write() as s:
        groups.remove_member(s, team, user_id=world.bob.user_id)
    assert engine.check(world.bob, Action.READ, file).status == 404


def test_moving_out_of_a_shared_folder_ends_the_cascade(world: World) -> None:
    engine = world.engine(ttl=3600)
    share(world, "/A", Subject.user(world.bob.user_id))
    assert statuses(engine.filter(world.bob, Action.READ, children(world, "/A/S"))) == [200] * 3
    with world.db.write() as s:
        move_node(s, world.alice.user_id, "/A/S", "/S")  # out of the shared /A
        move_node(s, world.alice.user_id, "/A/T/x.txt", "/x.txt")
    assert statuses(engine.filter(world.bob, Action.READ, children(world, "/S"))) == [404] * 3
    assert engine.check(world.bob, Action.READ, world.res("/S/sub/h.txt")).status == 404
    assert engine.check(world.bob, Action.READ, world.res("/x.txt")).status == 404
    assert engine.check(world.bob, Action.READ, world.res("/A/T")).allowed


def test_a_grant_counts_only_for_its_owners_resource(world: World) -> None:
    """A node id reused for another user's node must not inherit the grant."""
    engine = world.engine()
    file = world.res("/A/S/f.txt")
    share(world, "/A/S/f.txt", Subject.user(world.bob.user_id))
    impostor = Resource(ResourceKind.FILE, file.id, world.carol.user_id, None, "")
    assert engine.check(world.bob, Action.READ, file).allowed
    assert engine.check(world.bob, Action.READ, impostor).status == 404


def test_calendar_and_addressbook_grants(world: World) -> None:
    engine = world.engine()
    calendar = Resource.calendar(7, world.alice.user_id)
    with world.db.write() as s:
        grants.grant(s, Subject.user(world.bob.user_id), calendar, Role.VIEWER)
        grants.grant(
            s,
            Subject.user(world.bob.user_id),
            Resource.addressbook(7, world.alice.user_id),
            Role.EDITOR,
        )
    assert engine.check(world.bob, Action.READ, calendar).allowed
    assert engine.check(world.bob, Action.WRITE, calendar).status == 403
    assert engine.check(world.bob, Action.DELETE, calendar).status == 403  # only the owner
    assert (
        engine.check(world.bob, Action.READ, Resource.calendar(8, world.alice.user_id)).status
        == 404
    )
    assert engine.check(
        world.bob, Action.CREATE, Resource.addressbook(7, world.alice.user_id)
    ).allowed
    # The same id as a folder is another resource.
    assert engine.check(world.bob, Action.READ, world.res("/A")).status == 404


def test_every_denial_logs_one_audit_line(world: World, caplog: pytest.LogCaptureFixture) -> None:
    engine = world.engine()
    share(world, "/A/S/f.txt", Subject.user(world.bob.user_id))
    caplog.set_level(logging.INFO, logger="oxidav.audit")
    engine.filter(world.bob, Action.READ, children(world, "/A/S"))
    engine.check(world.bob, Action.WRITE, world.res("/A/S/f.txt"))
    engine.check(world.alice, Action.DELETE, world.res("/A/S/f.txt"))
    lines = [r for r in caplog.records if r.name == "oxidav.audit"]
    assert len(lines) == 3  # g.txt and sub (404), the write on f.txt (403); none for alice
    first = lines[0].oxidav_audit  # type: ignore[attr-defined]
    assert first["user"] == world.bob.username and first["action"] == "read"
    assert first["status"] == 404 and "/A/S/g.txt" in first["resource"]
    assert "permissions 1 do not allow write" in lines[2].getMessage()


def _add_files(world: World, folder: str, count: int) -> None:
    with world.db.write() as s:
        for i in range(count):
            write_file(s, NoRefs(), world.alice.user_id, f"{folder}/n{i:04}.txt", None)


@pytest.mark.parametrize("extra", [5, 60])
def test_listing_costs_constant_queries_and_none_when_warm(world: World, extra: int) -> None:
    _add_files(world, "/A/S", extra)
    share(world, "/A", Subject.user(world.bob.user_id))
    listing = children(world, "/A/S")
    assert len(listing) == 3 + extra
    db_engine = world.db.engine
    engine = world.engine()
    with recorded_selects(db_engine) as seen:
        assert all(d.allowed for d in engine.filter(world.bob, Action.READ, listing))
    assert len(seen) == 3, seen  # generation, grants, ancestor chain
    with recorded_selects(db_engine) as seen:  # the next request: caches are warm
        assert all(d.allowed for d in engine.filter(world.bob, Action.READ, listing))
    assert len(seen) == 1, seen  # only the generation
    assert "authz_state" in seen[0]
    with recorded_selects(
        db_engine
    ) as seen:  # one check per child in one request: memoised per folder
        request = engine.request(world.bob)
        assert all(request.check(Action.READ, r).allowed for r in listing)
    assert len(seen) == 1
    with recorded_selects(db_engine) as seen:  # the owner's own listing asks nothing
        assert all(d.allowed for d in engine.filter(world.alice, Action.READ, listing))
    assert seen == []
    with recorded_selects(db_engine) as seen:  # no grant from alice at all: no ancestor walk
        assert all(
            d.status == 404 for d in world.engine().filter(world.carol, Action.READ, listing)
        )
    assert len(seen) == 2


def test_cold_check_in_the_callers_session(world: World) -> None:
    share(world, "/A", Subject.user(world.bob.user_id), Role.EDITOR)
    listing = children(world, "/A/S")
    db_engine = world.db.engine
    with world.db.read() as session, recorded_selects(db_engine) as seen:
        request = world.engine(ttl=0).request(world.bob, session)
        assert all(d.allowed for d in request.filter(Action.WRITE, listing))
        assert request.bits(listing[0]) == Role.EDITOR.permissions
    assert len(seen) == 3
