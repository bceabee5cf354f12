"""``oxidav share link create|list|delete`` against a real database (both backends)."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from oxidav.authz.authn.hashing_gate import HashingGate
from oxidav.authz.authn.throttle import AddressBudget
from oxidav.authz.links.access import Credentials, LinkDenied, LinkGate
from oxidav.authz.links.store import LinkMode
from oxidav.cli import main
from oxidav.settings import Settings
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

    def run(*argv: str, stdin: str = "") -> tuple[int, str, str]:
        monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
        code = main([*argv, "--data-dir", str(tmp_path / "data")])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_links_from_the_command_line(world: World, oxidav) -> None:
    alice = world.alice.username
    settings = Settings()
    gate = LinkGate(
        world.db,
        settings,
        HashingGate.from_settings(settings),
        AddressBudget.from_settings(settings),
    )
    code, out, _ = oxidav("share", "link", "create", alice, "/A/S")
    assert code == 0
    plain = out.strip()
    link = gate.open(plain, Credentials())
    assert (link.mode, link.node_path, link.password_hash) == (LinkMode.READ, "/A/S", None)

    code, out, _ = oxidav(
        "share",
        "link",
        "create",
        alice,
        "/A/T",
        "--password-stdin",
        "--upload-only",
        "--expires",
        "2999-01-01",
        "--label",
        "drop box",
        stdin="s3cret\n",
    )
    assert code == 0
    drop = out.strip()
    with pytest.raises(LinkDenied):
        gate.open(drop, Credentials(password="wrong"))
    link = gate.open(drop, Credentials(password="s3cret"))
    assert (link.mode, link.label) == (LinkMode.UPLOAD, "drop box")

    code, out, _ = oxidav("share", "link", "list", alice)
    rows = [line.split("\t") for line in out.splitlines()]
    assert [(r[0], r[1], r[2], r[4], r[5]) for r in rows] == [
        (plain, "read", "/A/S", "password=no", "live"),
        (drop, "upload", "/A/T", "password=yes", "live"),
    ]
    assert rows[1][3].startswith("expires=2999-01-01")

    assert oxidav("share", "link", "delete", plain)[0] == 0
    with pytest.raises(LinkDenied) as denied:
        gate.open(plain, Credentials())
    assert denied.value.status == 404
    code, _, err = oxidav("share", "link", "delete", plain)
    assert code == 2 and "no link" in err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("/A/S/f.txt", "--upload-only"), "folders"),
        (("/missing",), "no file or folder"),
        (("/",), "root"),
        (("/A", "--expires", "2001-01-01"), "past"),
    ],
)
def test_link_create_errors(world: World, oxidav, args: tuple[str, ...], message: str) -> None:
    code, _, err = oxidav("share", "link", "create", world.alice.username, *args)
    assert code == 2 and message in err


def test_empty_stdin_password_is_refused(world: World, oxidav) -> None:
    code, _, err = oxidav(
        "share", "link", "create", world.alice.username, "/A", "--password-stdin", stdin="\n"
    )
    assert code == 2 and "empty" in err
