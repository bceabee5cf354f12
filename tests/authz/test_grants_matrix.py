"""The table: roles x actions x grant placement x target, every cell asserted (issue 7).

bob is the recipient. alice's tree is ``/A/S/{f.txt,g.txt,sub/h.txt}`` and ``/A/T/x.txt``; each
cell checks one action on the file ``/A/S/f.txt`` or on its folder ``/A/S``. One engine serves
the whole table, so a cache that outlived a revocation or an expiry would break later cells.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from oxidav.authz.grants import groups
from oxidav.authz.grants import store as grants
from oxidav.authz.grants.roles import Action, Role
from oxidav.authz.grants.store import Subject
from tests.support.grants import World

VIEW = {"read", "list", "copy"}
EDIT = VIEW | {"write", "rename", "create", "delete", "move_in", "move_out", "lock", "proppatch"}
#: The spec, written out independently of ``roles.ACTION_BITS``.
ROLE_ALLOWS = {
    "viewer": VIEW,
    "editor": EDIT,
    "manager": EDIT | {"reshare"},
    "owner": EDIT | {"reshare"},
}
assert {a.value for a in Action} == ROLE_ALLOWS["owner"]

#: Where the grant is made.
PLACED_ON = {
    "folder": "/A/S",
    "ancestor": "/A",
    "direct": "/A/S/f.txt",
    "sibling": "/A/S/g.txt",
    "expired": "/A/S",
    "revoked": "/A/S",
}
TARGETS = {"file": "/A/S/f.txt", "folder": "/A/S"}

#: (placement, target) -> (the grant reaches the target, it reaches the target's folder).
REACHES = {
    ("folder", "file"): (True, True),
    ("folder", "folder"): (True, False),  # the grant is on /A/S itself; its folder is /A
    ("ancestor", "file"): (True, True),
    ("ancestor", "folder"): (True, True),
    ("direct", "file"): (True, False),  # a file grant never reaches the file's folder
    ("direct", "folder"): (False, False),
}


def expected(role: str, placement: str, target: str, action: str) -> int:
    on_target, on_folder = REACHES.get((placement, target), (False, False))
    # DELETE and MOVE_OUT change the folder's membership: judged on the folder's role.
    judged = on_folder if action in ("delete", "move_out") else on_target
    if judged and action in ROLE_ALLOWS[role]:
        return 200
    return 403 if on_target else 404  # anti-enumeration: 404 unless bob can see it


@pytest.mark.parametrize("via", ["user", "nested group"])
def test_every_cell(world: World, via: str) -> None:
    engine = world.engine()
    bob, alice, carol = world.bob, world.alice, world.carol
    if via == "user":
        subject = Subject.user(bob.user_id)
    else:
        with world.db.write() as s:
            inner, outer = groups.create_group(s, "inner"), groups.create_group(s, "outer")
            groups.add_member(s, inner, user_id=bob.user_id)
            groups.add_member(s, outer, member_group=inner)
        subject = Subject.group(outer)
    targets = {name: world.res(path) for name, path in TARGETS.items()}
    failures: list[str] = []
    cells = 0

    for role in Role:
        for placement, path in PLACED_ON.items():
            expires = world.clock() + timedelta(hours=1) if placement == "expired" else None
            with world.db.write() as s:
                grant_id = grants.grant(
                    s, subject, world.res(path), role, expires_at=expires, created_by=alice.user_id
                )
            if placement in ("expired", "revoked"):
                # Warm every cache with an allowing decision first.
                assert engine.check(bob, Action.READ, targets["file"]).allowed
                if placement == "revoked":
                    with world.db.write() as s:
                        grants.revoke(s, grant_id)
                else:
                    world.clock.offset = timedelta(hours=2)
            for action in Action:
                listed = engine.filter(bob, action, targets.values())
                for (name, target), batched in zip(targets.items(), listed, strict=True):
                    decision = engine.check(bob, action, target)
                    got = 200 if decision.allowed else decision.status
                    want = expected(role.value, placement, name, action.value)
                    cells += 1
                    if got != want or batched != decision:
                        failures.append(
                            f"{role.value:8} {placement:8} {name:6} {action.value:9} "
                            f"want {want} got {got} ({decision.reason}) filter={batched.status}"
                        )
                    assert engine.check(alice, action, target).allowed  # the owner, always
                    assert engine.check(carol, action, target).status == 404  # a stranger
            world.clock.offset = timedelta()
            if placement != "revoked":
                with world.db.write() as s:
                    grants.revoke(s, grant_id)
            assert engine.check(bob, Action.READ, targets["file"]).status == 404

    assert cells == len(Role) * len(PLACED_ON) * len(Action) * len(TARGETS)
    assert not failures, "\n".join(failures)
