"""Checking a user name and password: the policy (cache, throttles, hashing cap) in one place.

``Authenticator.authenticate`` is what every entry point calls — the WsgiDAV domain controller,
the Nextcloud OCS routes, the login flow. It accepts a user's own password (argon2id) or one of
the user's app passwords (SHA-256 digest, found by one indexed lookup). The order is the point:

1. the verified-credential cache (``auth_cache_seconds``): a credential that verified lately is
   accepted without hashing and without waiting behind anyone's hashing, once one primary-key
   read says it is still the user's (the password hash it matched is still stored, the app
   password still exists): a password changed, an app password revoked or a user deleted
   through any process stops working at the next request in every process;
2. the refusals that cost no hashing (``LoginRefused``, 429): the user name + address pair over
   ``auth_max_failures``, the address over ``auth_max_failures_per_address`` across names
   (a place in that budget is reserved here, so checks in flight count); the failures are
   counted in the database, so every process behind a balancer refuses alike;
3. the database lookup, then one argon2 run in a slot of the ``HashingGate``
   (``auth_hash_concurrency``; 429 when no slot frees in time) — for an unknown user name too,
   against a stand-in hash, so a known and an unknown name cost the same;
4. after a successful password check, a stored hash made with other argon2 parameters than the
   current ones is replaced: re-hashed in the same slot, stored best-effort (a failure to store
   is logged and the login still succeeds).

Each refusal and each failure writes one line on ``oxidav.auth`` (reason and address; never
the password).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from sqlalchemy import bindparam, select, update

from oxidav.authz.authn.accounts import store_rehashed_password
from oxidav.authz.authn.credential_cache import CredentialCache
from oxidav.authz.authn.failures import DatabaseFailures
from oxidav.authz.authn.hashing_gate import HashingGate
from oxidav.authz.authn.login_refusals import HashingBusy, LoginRefused, TooManyFailedLogins
from oxidav.authz.authn.passwords import app_password_digest
from oxidav.authz.authn.principal import Principal
from oxidav.authz.authn.throttle import AddressBudget, LoginThrottle
from oxidav.db import Database, utcnow
from oxidav.db.models.users import AppPassword, User
from oxidav.db.prepared import PreparedRead
from oxidav.settings import Settings

log = logging.getLogger("oxidav.auth")

__all__ = ["Authenticator", "HashingBusy", "LoginRefused", "TooManyFailedLogins", "Verified"]

_PASSWORD_HASH = PreparedRead(select(User.password_hash).where(User.id == bindparam("id")))
_APP_PASSWORD = PreparedRead(select(AppPassword.id).where(AppPassword.id == bindparam("id")))


@dataclass(frozen=True, slots=True)
class Verified:
    """A credential that verified: who it is, and what it matched — the user's stored password
    hash, or the row of one of their app passwords."""

    principal: Principal
    password_hash: str | None = None
    app_password_id: int | None = None


class Authenticator:
    def __init__(self, db: Database, settings: Settings) -> None:
        self._db = db
        self.cache: CredentialCache[Verified] = CredentialCache(settings.auth_cache_seconds)
        self.throttle = LoginThrottle(
            settings.auth_max_failures, settings.auth_failure_window, DatabaseFailures(db, "login")
        )
        #: Failed checks per address across user names; public-link passwords share it.
        self.address_budget = AddressBudget.from_settings(settings, DatabaseFailures(db, "address"))
        #: The process's cap on password hashing; public-link passwords share it.
        self.hashing = HashingGate.from_settings(settings)

    @property
    def slow_verifications(self) -> int:
        """How many argon2 runs the hashing gate started (the auth benchmark reads it)."""
        return self.hashing.verifications

    def authenticate(self, username: str, password: str, address: str = "") -> Principal | None:
        """Return the principal for valid credentials, None for invalid ones.

        Raises ``LoginRefused`` (``TooManyFailedLogins``, ``HashingBusy``) instead of checking
        the password: while this user name + address or this address is throttled, or when no
        hashing slot frees in time.
        """
        cached = self.cache.get(username, password)
        if cached is not None:
            if self._still_valid(cached):
                return cached.principal
            self.cache.forget(username, password)
        retry_after = self.throttle.retry_after(username, address)
        if retry_after is not None:
            log.warning("login throttled user=%r address=%s", username, address or "-")
            raise TooManyFailedLogins(retry_after)
        retry_after = self.address_budget.reserve(address)
        if retry_after is not None:
            refusal = TooManyFailedLogins(retry_after, "too many failed logins from this address")
            self._log_refusal(refusal, address)
            raise refusal
        verified: Verified | None = None
        checked = False
        try:
            verified = self._verify(username, password)
            checked = True
        except HashingBusy as busy:
            self._log_refusal(busy, address)
            raise
        finally:
            self.address_budget.settle(address, failed=checked and verified is None)
        if verified is None:
            self.throttle.record_failure(username, address)
            log.warning("login failed user=%r address=%s", username, address or "-")
            return None
        self.throttle.record_success(username, address)
        self.cache.put(username, password, verified)
        return verified.principal

    def _still_valid(self, verified: Verified) -> bool:
        """Whether what ``verified`` matched is still the user's (one primary-key read)."""
        if verified.app_password_id is not None:
            return _APP_PASSWORD.first(self._db, {"id": verified.app_password_id}) is not None
        row = _PASSWORD_HASH.first(self._db, {"id": verified.principal.user_id})
        return row is not None and row[0] == verified.password_hash

    @staticmethod
    def _log_refusal(refusal: LoginRefused, address: str) -> None:
        log.warning(
            "login refused status=%d address=%s reason=%s",
            refusal.status,
            address or "-",
            refusal.reason,
        )

    def _verify(self, username: str, password: str) -> Verified | None:
        with self._db.read() as session:
            user = session.execute(
                select(User.id, User.username, User.password_hash).where(User.username == username)
            ).first()
            app_password_id = None
            if user is not None:
                app_password_id = session.scalar(
                    select(AppPassword.id).where(
                        AppPassword.user_id == user.id,
                        AppPassword.token_sha256 == app_password_digest(password),
                    )
                )
        if user is None:
            self.hashing.verify_unknown(password)
            return None
        if app_password_id is not None:
            with self._db.write() as session:
                session.execute(
                    update(AppPassword)
                    .where(AppPassword.id == app_password_id)
                    .values(last_used_at=utcnow())
                )
            return Verified(Principal(user.id, user.username), app_password_id=app_password_id)
        matched, new_hash = self.hashing.verify_and_rehash(user.password_hash, password)
        if not matched:
            return None
        stored = user.password_hash
        if new_hash is not None and self._store_rehash(user.id, user.password_hash, new_hash):
            stored = new_hash
        return Verified(Principal(user.id, user.username), password_hash=stored)

    def _store_rehash(self, user_id: int, old_hash: str, new_hash: str) -> bool:
        """Store a re-hash; whether it was stored (a failure is logged, the login stands)."""
        try:
            return store_rehashed_password(self._db, user_id, old_hash, new_hash)
        except Exception:
            log.exception("password re-hash not stored user_id=%d", user_id)
            return False
