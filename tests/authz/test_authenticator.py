"""The authenticator's policy: passwords, app passwords, the credential cache, the throttles
and the hashing cap."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest
from sqlalchemy import delete, select

from oxidav.authz.authn import accounts
from oxidav.authz.authn.authenticator import Authenticator, HashingBusy, TooManyFailedLogins
from oxidav.authz.authn.failures import purge_old
from oxidav.authz.authn.hashing_gate import HashingGate
from oxidav.authz.authn.throttle import IN_FLIGHT_RETRY_SECONDS, AddressBudget, address_key
from oxidav.db import Database
from oxidav.db.models.users import AppPassword, LoginFailure
from oxidav.settings import Settings, SettingsError, load_settings


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


def test_a_password_changed_elsewhere_stops_working_at_the_next_request(
    database: Database, alice: int
) -> None:
    """Another process changed it (nothing told this one): the cached credential is checked
    against the stored hash on every hit, so the old password fails at once."""
    auth = make_auth(database)
    assert auth.authenticate("alice", "secret") is not None
    accounts.set_password(database, "alice", "new")
    assert auth.authenticate("alice", "secret") is None
    assert auth.authenticate("alice", "new") is not None
    for _ in range(3):
        assert auth.authenticate("alice", "new") is not None
    assert auth.slow_verifications == 3  # old (cached) failed its check, then old and new once


def test_a_revoked_app_password_or_a_deleted_user_stops_working_at_once(
    database: Database, alice: int
) -> None:
    auth = make_auth(database)
    token = accounts.create_app_password(database, "alice", "phone")
    assert auth.authenticate("alice", token) is not None
    assert auth.authenticate("alice", "secret") is not None
    with database.write() as session:
        session.execute(delete(AppPassword))
    assert auth.authenticate("alice", token) is None
    assert auth.authenticate("alice", "secret") is not None
    accounts.delete_user(database, "alice")
    assert auth.authenticate("alice", "secret") is None


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


def test_failures_through_one_process_throttle_the_others(database: Database, alice: int) -> None:
    """Two authenticators on one database are two processes behind a balancer: the failures
    made through one count in the other, for the name + address and for the address."""
    first, second = (
        make_auth(database, auth_max_failures=3),
        make_auth(database, auth_max_failures=3),
    )
    for auth in (first, second, first):
        assert auth.authenticate("alice", "bad", "10.0.0.9") is None
    with pytest.raises(TooManyFailedLogins):
        second.authenticate("alice", "secret", "10.0.0.9")
    assert first.authenticate("alice", "secret", "10.0.0.10") is not None
    budget = dict(auth_max_failures=100, auth_max_failures_per_address=2)
    one, two = make_auth(database, **budget), make_auth(database, **budget)
    assert one.authenticate("x", "bad", "10.0.0.20") is None
    assert two.authenticate("y", "bad", "10.0.0.20") is None
    with pytest.raises(TooManyFailedLogins):
        one.authenticate("alice", "secret", "10.0.0.20")


def test_stored_failures_name_nobody_and_old_ones_are_purged(
    database: Database, alice: int
) -> None:
    auth = make_auth(database)
    assert auth.authenticate("alice", "bad", "10.0.0.30") is None
    with database.read() as session:
        keys = session.scalars(select(LoginFailure.key)).all()
    assert keys and not any("alice" in key or "10.0.0.30" in key for key in keys)
    assert purge_old(database, 300.0, now=time.time() - 1) == 0  # still in the window
    assert purge_old(database, 300.0, now=time.time() + 301) == len(keys)


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


def test_address_budget_counts_checks_in_flight_and_expires() -> None:
    now = [100.0]
    budget = AddressBudget(2, 60.0, clock=lambda: now[0])
    assert budget.reserve("10.0.0.1") is None
    assert budget.reserve("10.0.0.1") is None
    assert budget.reserve("10.0.0.1") == IN_FLIGHT_RETRY_SECONDS  # two checks still running
    assert budget.reserve("10.0.0.2") is None  # per address
    budget.settle("10.0.0.1", failed=False)  # a success frees its place...
    assert budget.reserve("10.0.0.1") is None
    budget.settle("10.0.0.1", failed=True)
    budget.settle("10.0.0.1", failed=True)
    now[0] += 10
    assert budget.reserve("10.0.0.1") == pytest.approx(50.0)  # ...failures stay for the window
    now[0] += 51
    assert budget.reserve("10.0.0.1") is None


def test_ipv6_addresses_share_a_budget_per_64() -> None:
    assert address_key("2001:db8::1") == address_key("2001:db8::ffff:2") == "2001:db8::/64"
    assert address_key("2001:db8:0:1::1") != address_key("2001:db8::1")
    assert address_key("::ffff:10.0.0.1") == "10.0.0.1"
    assert address_key("10.0.0.1") == "10.0.0.1"
    assert address_key("not an address") == "not an address"


def test_address_budget_spans_user_names_and_refuses_before_hashing(
    database: Database, alice: int, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, "oxidav.auth")
    auth = make_auth(database, auth_max_failures_per_address=2)
    assert auth.authenticate("alice", "secret", "10.0.0.1") is not None
    assert auth.authenticate("nobody1", "x", "10.0.0.1") is None
    assert auth.authenticate("nobody2", "x", "10.0.0.1") is None
    runs = auth.hashing.verifications
    with pytest.raises(TooManyFailedLogins) as info:
        auth.authenticate("nobody3", "x", "10.0.0.1")
    assert info.value.status == 429 and info.value.retry_after > 0
    refusals = [r.getMessage() for r in caplog.records if "login refused" in r.getMessage()]
    assert refusals == [
        "login refused status=429 address=10.0.0.1 reason=too many failed logins from this address"
    ]
    with pytest.raises(TooManyFailedLogins):
        auth.authenticate("bob", "x", "10.0.0.1")
    assert auth.hashing.verifications == runs
    # A cached credential is not refused; another address is not affected.
    assert auth.authenticate("alice", "secret", "10.0.0.1") is not None
    assert auth.authenticate("nobody3", "x", "10.0.0.2") is None


def test_unknown_user_costs_one_argon2_run(database: Database, alice: int) -> None:
    auth = make_auth(database)
    for expected in (1, 2, 3):
        assert auth.authenticate("nobody", "guess", f"10.0.0.{expected}") is None
        assert auth.hashing.verifications == expected


def test_no_hashing_slot_in_time_is_hashing_busy(database: Database, alice: int) -> None:
    auth = make_auth(database, auth_hash_concurrency=1, auth_hash_wait_seconds=0.05)
    with auth.hashing.slot(), pytest.raises(HashingBusy) as info:
        auth.authenticate("alice", "secret", "10.0.0.1")
    assert info.value.status == 429 and info.value.retry_after_header == ("Retry-After", "1")
    assert auth.authenticate("alice", "secret", "10.0.0.1") is not None


def test_hashing_queue_is_bounded() -> None:
    gate = HashingGate(concurrency=1, wait=60.0, queue=0)
    with gate.slot(), pytest.raises(HashingBusy), gate.slot():
        pass
    assert gate.running == 0


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("auth_max_failures_per_address", "0"),
        ("auth_hash_concurrency", "0"),
        ("auth_hash_concurrency", "65"),
        ("auth_hash_wait_seconds", "0"),
    ],
)
def test_bad_budget_settings_name_the_key(tmp_path: Path, key: str, value: str) -> None:
    with pytest.raises(SettingsError) as info:
        load_settings({"data_dir": tmp_path}, env={f"OXIDAV_{key.upper()}": value})
    assert f"'{key}'" in str(info.value)
