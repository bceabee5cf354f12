"""litmus through the two ways into another user's tree: a share mounted in bob's tree, and a
public edit link (``/public.php/dav/files/<token>/``, no credentials)."""

from __future__ import annotations

from pathlib import Path

from oxidav.authz.grants.roles import Role
from oxidav.authz.grants.store import Subject, grant
from oxidav.authz.grants.targets import resolve_target, user_id
from oxidav.authz.links.store import LinkMode
from tests.support.litmus import assert_litmus_passes, needs_litmus
from tests.support.live import LiveServer
from tests.support.public_links import make_link


@needs_litmus
def test_litmus_inside_a_mounted_share(live_server: LiveServer, tmp_path: Path) -> None:
    alice = "/remote.php/dav/files/alice"
    assert live_server.request("MKCOL", alice + "/team").status == 201
    assert live_server.services is not None
    with live_server.services.db.write() as session:
        bob = Subject.user(user_id(session, "bob"))
        grant(session, bob, resolve_target(session, "files/alice/team"), Role.EDITOR)
    url = f"{live_server.base_url}/remote.php/dav/files/bob/team/"
    assert_litmus_passes(url, tmp_path, "bob", "secret")


@needs_litmus
def test_litmus_through_a_public_edit_link(live_server: LiveServer, tmp_path: Path) -> None:
    assert live_server.request("MKCOL", "/remote.php/dav/files/alice/pub").status == 201
    token = make_link(live_server, "/pub", mode=LinkMode.EDIT)
    assert_litmus_passes(f"{live_server.base_url}/public.php/dav/files/{token}/", tmp_path)
