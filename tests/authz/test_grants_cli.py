"""``oxidav group ...`` and ``oxidav share ...`` against a real database (both backends)."""

from __future__ import annotations

from pathlib import Path

import pytest

from oxidav.authz.grants.roles import Action
from oxidav.cli import main
from tests.support.grants import World


@pytest.fixture
def oxidav(
    world: World,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
):
    monkeypatch.setenv(
        "OXIDAV_DATABASE_URL", world.db.engine.url.render_as_string(hide_password=False)
    )

    def run(*argv: str) -> tuple[int, str, str]:
        code = main([*argv, "--data-dir", str(tmp_path / "data")])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_groups_and_shares_from_the_command_line(world: World, oxidav) -> None:
    alice, bob = world.alice.username, world.bob.username
    assert oxidav("group", "add", "team")[0] == 0
    assert oxidav("group", "add", "staff")[0] == 0
    assert oxidav("group", "member", "add", "team", "--user", bob)[0] == 0
    assert oxidav("group", "member", "add", "staff", "--group", "team")[0] == 0
    code, _, err = oxidav("group", "member", "add", "team", "--group", "staff")
    assert code == 2 and "cycle" in err
    code, out, _ = oxidav("group", "list")
    assert out.splitlines() == ["staff\tusers=\tgroups=team", f"team\tusers={bob}\tgroups="]

    code, out, _ = oxidav(
        "share", "add", f"files/{alice}/A/S", "--group", "staff", "--role", "editor"
    )
    assert code == 0
    grant_id = int(out.strip())
    code, out, _ = oxidav("share", "list", "--group", "staff")
    assert out.splitlines() == [
        f"{grant_id}\tgroup:staff\tfiles/{alice}/A/S\teditor\texpires=never"
    ]
    engine = world.engine()
    assert engine.check(world.bob, Action.WRITE, world.res("/A/S/f.txt")).allowed

    code, out, _ = oxidav(
        "share", "add", f"files/{alice}/A/T/x.txt", "--user", bob, "--expires", "2999-01-01"
    )
    assert code == 0
    code, out, _ = oxidav("share", "list", f"files/{alice}/A/T/x.txt")
    assert f"user:{bob}" in out and "viewer\texpires=2999-01-01T00:00:00+00:00" in out

    assert oxidav("share", "revoke", str(grant_id))[0] == 0
    assert engine.check(world.bob, Action.WRITE, world.res("/A/S/f.txt")).status == 404
    code, _, err = oxidav("share", "revoke", str(grant_id))
    assert code == 2 and "no grant" in err
    code, _, err = oxidav("share", "add", f"files/{alice}/nope", "--user", bob)
    assert code == 2 and "no file or folder" in err
    code, _, err = oxidav("share", "add", f"calendars/{alice}/personal", "--user", bob)
    assert code == 2 and "no calendar" in err

    assert oxidav("group", "member", "remove", "staff", "--group", "team")[0] == 0
    assert oxidav("group", "delete", "staff")[0] == 0
    code, out, _ = oxidav("group", "list")
    assert out.splitlines() == [f"team\tusers={bob}\tgroups="]


def test_share_add_takes_roles_or_bits(world: World, oxidav) -> None:
    """Role names stand for Nextcloud's bits; ``--permissions`` gives the bits as they are."""
    alice, bob = world.alice.username, world.bob.username
    code, out, _ = oxidav("share", "add", f"files/{alice}/A/S", "--user", bob, "--permissions", "5")
    assert code == 0
    engine = world.engine()
    folder, file = world.res("/A/S"), world.res("/A/S/f.txt")
    assert engine.check(world.bob, Action.CREATE, folder).allowed  # create
    assert engine.check(world.bob, Action.WRITE, file).status == 403  # no update
    assert engine.check(world.bob, Action.DELETE, file).status == 403  # no delete
    code, out, _ = oxidav("share", "list", "--user", bob)
    assert "\t5\texpires=never" in out
    assert oxidav("share", "add", f"files/{alice}/A/S", "--user", bob, "--role", "editor")[0] == 0
    code, out, _ = oxidav("share", "list", "--user", bob)
    assert "\teditor\texpires=never" in out
    assert engine.check(world.bob, Action.DELETE, file).allowed
    code, _, err = oxidav("share", "add", f"files/{alice}/A/T", "--user", bob, "--permissions", "4")
    assert code == 2 and "read" in err


def test_share_revoke_takes_the_reshares_made_through_it(world: World, oxidav) -> None:
    from oxidav.authz.grants import store as grants
    from oxidav.authz.grants.store import Subject

    alice, bob = world.alice.username, world.bob.username
    _, out, _ = oxidav("share", "add", f"files/{alice}/A/S", "--user", bob, "--role", "manager")
    bob_grant = int(out.strip())
    with world.db.write() as s:
        grants.grant(
            s,
            Subject.user(world.carol.user_id),
            world.res("/A/S"),
            31,
            created_by=world.bob.user_id,
        )
    engine = world.engine()
    file = world.res("/A/S/f.txt")
    assert engine.check(world.carol, Action.WRITE, file).allowed
    assert (
        oxidav("share", "add", f"files/{alice}/A/S", "--user", bob, "--permissions", "17")[0] == 0
    )
    _, out, _ = oxidav("share", "list", "--user", world.carol.username)
    assert "\t17\texpires=never" in out  # reduced to what bob holds
    assert engine.check(world.carol, Action.WRITE, file).status == 403
    assert oxidav("share", "revoke", str(bob_grant))[0] == 0
    _, out, _ = oxidav("share", "list", "--user", world.carol.username)
    assert out == ""
    assert engine.check(world.carol, Action.READ, file).status == 404
