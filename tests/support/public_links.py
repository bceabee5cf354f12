"""Public links for the tests: alice's seeded tree, a link made straight in the database, Basic
credentials of a link."""

from __future__ import annotations

import base64

from oxidav.authz.links import store as links
from oxidav.authz.links.store import LinkMode
from oxidav.tree import resolve
from tests.support.live import LiveServer

ALICE = "/remote.php/dav/files/alice"


SECRET = b"top-secret-content"


def populate(server: LiveServer) -> LiveServer:
    """alice has /P/{a.txt, <b>&.txt, sub/c.txt} and /secret.txt beside it."""
    for method, path, body in (
        ("MKCOL", "/P", None),
        ("MKCOL", "/P/sub", None),
        ("PUT", "/P/a.txt", b"alpha"),
        ("PUT", "/P/<b>&.txt", b"bee"),
        ("PUT", "/P/sub/c.txt", b"sea"),
        ("PUT", "/secret.txt", SECRET),
    ):
        assert server.request(method, ALICE + path, body).status == 201
    return server


def make_link(
    server: LiveServer,
    path: str,
    *,
    mode: LinkMode = LinkMode.READ,
    password: str | None = None,
) -> str:
    assert server.services is not None
    with server.services.db.write() as session:
        node = resolve(session, _alice_id(server), path)
        assert node is not None
        return links.create_link(session, node, mode=mode, password=password).token


def _alice_id(server: LiveServer) -> int:
    from oxidav.authz.grants.targets import user_id

    assert server.services is not None
    with server.services.db.read() as session:
        return user_id(session, "alice")


def basic(user: str, password: str) -> dict[str, str]:
    return {"Authorization": "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()}
