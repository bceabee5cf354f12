"""The authenticator's policy: passwords, app passwords, the credential cache and the throttle."""

from __future__ import annotations

import pytest

from oxidav.authz import accounts
from oxidav.authz.authenticator import Authenticator, TooManyFailedLogins
from oxidav.db import Database
from oxidav.settings import Settings


@pytest.fixture
def alice(database: Database) -> int:
    return accounts.create_user(database, "alice", "secret", email="alice@example.org")


def make_auth(database: Database, **overrides: object) -> Authenticator:
    return Authenticator(database, Settings().replace(**overrides))


def test_password_and_app_password_are_accepted(database: Database, alice: int) -> None:
    auth = make_auth(database)
    token = accounts.create_app_password(database, "alice", "phone")
    assert auth.authenticate("alice", "secret").user_id == alice  # type: ignore[union-attr]
    assert auth.authenticate("alice", token).username == "alice"  # type: ignore[union-attr]
    assert auth.authenticate("alice", "wrong") is None
    assert auth.authenticate("nobody", "secret") is None


def test_app_password_is_bound_to_its_user(database: Database, alice: int) -> None:
    accounts.create_user(database, "bob", "bobpw")
    token = accounts.create_app_password(database, "alice")
    assert make_auth(database).authenticate("bob", token) is None


def test_cache_runs_argon2_once_per_credential(database: Database, alice: int) -> None:
    auth = make_auth(database)
    for _ in range(1000):
        assert auth.authenticate("alice", "secret", "127.0.0.1") is not None
    assert auth.slow_verifications == 1


def test_cache_is_per_credential_not_per_user(database: Database, alice: int) -> None:
    auth = make_auth(database)
    assert auth.authenticate("alice", "secret") is not None
    assert auth.authenticate("alice", "secreT") is None
    assert auth.slow_verifications == 2


def test_without_cache_every_request_verifies(database: Database, alice: int) -> None:
    auth = make_auth(database, auth_cache_seconds=0.0)
    for _ in range(3):
        auth.authenticate("alice", "secret")
    assert auth.slow_verifications == 3


def test_changed_password_stops_working_after_cache_is_dropped(
    database: Database, alice: int
) -> None:
    auth = make_auth(database)
    assert auth.authenticate("alice", "secret") is not None
    accounts.set_password(database, "alice", "new")
    auth.cache.forget_user("alice")
    assert auth.authenticate("alice", "secret") is None
    assert auth.authenticate("alice", "new") is not None


def test_throttle_after_max_failures_per_user_and_address(database: Database, alice: int) -> None:
    auth = make_auth(database, auth_max_failures=5)
    for _ in range(5):
        assert auth.authenticate("alice", "bad", "10.0.0.1") is None
    with pytest.raises(TooManyFailedLogins) as info:
        auth.authenticate("alice", "secret", "10.0.0.1")
    assert info.value.retry_after > 0
    # another address is not affected
    assert auth.authenticate("alice", "secret", "10.0.0.2") is not None


def test_throttle_window_expires(database: Database, alice: int) -> None:
    now = [1000.0]
    auth = make_auth(database, auth_max_failures=3, auth_failure_window=60.0)
    auth.throttle._clock = lambda: now[0]
    for _ in range(3):
        auth.authenticate("alice", "bad", "a")
    with pytest.raises(TooManyFailedLogins):
        auth.authenticate("alice", "secret", "a")
    now[0] += 61
    assert auth.authenticate("alice", "secret", "a") is not None


def test_deleted_user_cascades_app_passwords(database: Database, alice: int) -> None:
    token = accounts.create_app_password(database, "alice")
    accounts.delete_user(database, "alice")
    assert make_auth(database).authenticate("alice", token) is None
    assert accounts.list_users(database) == []


def test_account_errors(database: Database, alice: int) -> None:
    with pytest.raises(accounts.AccountError):
        accounts.create_user(database, "alice", "x")
    with pytest.raises(accounts.AccountError):
        accounts.create_user(database, "bad/name", "x")
    with pytest.raises(accounts.AccountError):
        accounts.create_user(database, "carol", "")
    with pytest.raises(accounts.AccountError):
        accounts.set_password(database, "nobody", "x")
