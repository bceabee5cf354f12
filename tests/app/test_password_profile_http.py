"""The argon2 profile of stored passwords, and link passwords under the hashing cap, over HTTP.

New hashes use ``oxidav.authz.authn.passwords``' profile (argon2id, 12 MiB, t=3, p=1). A user whose
hash was stored with argon2-cffi's default (64 MiB) profile logs in as before and is re-hashed
to the new profile, in the login's own hashing slot; a failure to store the new hash is logged
and the login still succeeds. Setting a link password through the Share API hashes in a slot
of the process's ``HashingGate`` and is answered 429 + Retry-After when the gate is full.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from argon2 import PasswordHasher, extract_parameters
from sqlalchemy import select, text, update

from oxidav.authz.authn.hashing_gate import HashingGate
from oxidav.db.models.links import PublicLink
from oxidav.db.models.users import User
from tests.support.live import LiveServer, in_process_server, make_settings
from tests.support.nextcloud import ocs, sharing_tree

PROPFIND_ROOT = ("PROPFIND", "/remote.php/dav/")
DEPTH0 = {"Depth": "0"}
SHARES = "/ocs/v2.php/apps/files_sharing/api/v1/shares"
#: OWASP's argon2id profile the server now hashes with: (memory KiB, passes, lanes).
NEW_PROFILE = (12288, 3, 1)
#: argon2-cffi's default (RFC 9106 low-memory) profile, what older oxidav stored.
OLD_PROFILE = (65536, 3, 4)


def profile(password_hash: str) -> tuple[int, int, int]:
    params = extract_parameters(password_hash)
    assert params.type.name == "ID"
    return (params.memory_cost, params.time_cost, params.parallelism)


def stored_hash(server: LiveServer, username: str) -> str:
    assert server.services is not None
    with server.services.db.read() as session:
        found = session.scalar(select(User.password_hash).where(User.username == username))
    assert found is not None
    return found


def set_stored_hash(server: LiveServer, username: str, password_hash: str) -> None:
    assert server.services is not None
    with server.services.db.write() as session:
        session.execute(
            update(User).where(User.username == username).values(password_hash=password_hash)
        )


def gate(server: LiveServer) -> HashingGate:
    assert server.services is not None
    return server.services.authenticator.hashing


@pytest.fixture
def uncached_server(db_url: str, tmp_path: Any) -> Iterator[LiveServer]:
    """A server that remembers no verified credential: every request checks the password."""
    settings = make_settings(tmp_path / "data", db_url, auth_cache_seconds=0)
    with in_process_server(settings) as server:
        yield server


def test_new_users_are_hashed_with_the_owasp_profile(live_server: LiveServer) -> None:
    assert profile(stored_hash(live_server, "alice")) == NEW_PROFILE
    assert live_server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207


def test_a_64_mib_hash_logs_in_and_is_rehashed_in_the_same_slot(
    uncached_server: LiveServer,
) -> None:
    server = uncached_server
    old = PasswordHasher().hash("secret")
    assert profile(old) == OLD_PROFILE
    set_stored_hash(server, "alice", old)
    before = gate(server).verifications
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207
    # One slot for the verification and the re-hash, not a second trip through the queue.
    assert gate(server).verifications == before + 1
    renewed = stored_hash(server, "alice")
    assert profile(renewed) == NEW_PROFILE
    # The new hash verifies; it is not re-hashed again; a wrong password still fails.
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207
    assert stored_hash(server, "alice") == renewed
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0, password="wrong").status == 401
    assert stored_hash(server, "alice") == renewed


def test_a_wrong_password_leaves_an_old_hash_alone(uncached_server: LiveServer) -> None:
    old = PasswordHasher().hash("secret")
    set_stored_hash(uncached_server, "alice", old)
    response = uncached_server.request(*PROPFIND_ROOT, headers=DEPTH0, password="wrong")
    assert response.status == 401
    assert stored_hash(uncached_server, "alice") == old


def _refuse_password_updates(server: LiveServer) -> None:
    """A real database failure on storing a password hash: a trigger that aborts it."""
    assert server.services is not None
    with server.services.db.write() as session:
        if session.get_bind().dialect.name == "sqlite":
            session.execute(
                text(
                    "CREATE TRIGGER no_rehash BEFORE UPDATE OF password_hash ON users "
                    "BEGIN SELECT RAISE(ABORT, 'password updates refused'); END"
                )
            )
        else:
            session.execute(
                text(
                    "CREATE FUNCTION no_rehash() RETURNS trigger LANGUAGE plpgsql AS "
                    "$$ BEGIN RAISE EXCEPTION 'password updates refused'; END $$"
                )
            )
            session.execute(
                text(
                    "CREATE TRIGGER no_rehash BEFORE UPDATE OF password_hash ON users "
                    "FOR EACH ROW EXECUTE FUNCTION no_rehash()"
                )
            )


def test_a_rehash_that_cannot_be_stored_is_logged_and_the_login_succeeds(
    uncached_server: LiveServer, caplog: pytest.LogCaptureFixture
) -> None:
    server = uncached_server
    old = PasswordHasher().hash("secret")
    set_stored_hash(server, "alice", old)
    _refuse_password_updates(server)
    with caplog.at_level(logging.ERROR, logger="oxidav.auth"):
        assert server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207
    assert any("re-hash not stored" in r.getMessage() for r in caplog.records)
    assert stored_hash(server, "alice") == old


def _link_hash(server: LiveServer, share_id: int) -> str | None:
    assert server.services is not None
    with server.services.db.read() as session:
        row = session.get(PublicLink, share_id - 1_000_000_000)
        assert row is not None
        return row.password_hash


def _link_count(server: LiveServer) -> int:
    assert server.services is not None
    with server.services.db.read() as session:
        return len(list(session.scalars(select(PublicLink.id))))


def test_link_passwords_set_over_ocs_are_hashed_in_the_gate(live_server: LiveServer) -> None:
    server = sharing_tree(live_server)
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207  # alice's login cached
    hashing = gate(server)
    before = hashing.verifications
    status, doc = ocs(
        server,
        "POST",
        SHARES,
        params={"shareType": 3, "path": "/Shared/a.txt", "password": "link-secret"},
    )
    assert status == 200, doc
    share_id = int(doc["data"]["id"])
    assert hashing.verifications == before + 1
    first = _link_hash(server, share_id)
    assert first is not None and profile(first) == NEW_PROFILE
    status, doc = ocs(server, "PUT", f"{SHARES}/{share_id}", params={"password": "other"})
    assert status == 200, doc
    assert hashing.verifications == before + 2
    assert _link_hash(server, share_id) not in (None, first)


def test_link_password_setting_is_429_when_the_gate_is_full(live_server: LiveServer) -> None:
    server = sharing_tree(live_server)
    assert server.request(*PROPFIND_ROOT, headers=DEPTH0).status == 207  # alice's login cached
    status, doc = ocs(
        server,
        "POST",
        SHARES,
        params={"shareType": 3, "path": "/Shared/a.txt", "password": "link-secret"},
    )
    assert status == 200, doc
    share_id = int(doc["data"]["id"])
    stored = _link_hash(server, share_id)
    links_before = _link_count(server)
    hashing = gate(server)
    hashing.wait = 0.2
    with hashing.slot(), hashing.slot():  # every slot of the default cap of 2 taken
        form = {"Content-Type": "application/x-www-form-urlencoded"}
        created = server.request(
            "POST",
            f"{SHARES}?format=json",
            "shareType=3&path=%2FShared%2Fsub&password=p1",
            headers=form,
        )
        changed = server.request(
            "PUT", f"{SHARES}/{share_id}?format=json", "password=p2", headers=form
        )
        for busy in (created, changed):
            assert busy.status == 429, busy.text
            assert int(busy.headers["retry-after"]) >= 1
        # Without a password nothing is hashed, and the gate is not asked.
        plain = server.request(
            "POST", f"{SHARES}?format=json", "shareType=3&path=%2Fother.txt", headers=form
        )
        assert plain.status == 200, plain.text
    # The refused requests stored nothing.
    assert _link_count(server) == links_before + 1
    assert _link_hash(server, share_id) == stored
