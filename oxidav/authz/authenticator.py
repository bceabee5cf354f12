"""Checking a user name and password: the policy (cache, throttle, timing) in one place.

``Authenticator.authenticate`` is what every entry point calls — the WsgiDAV domain controller,
the Nextcloud OCS routes, the CLI. It accepts a user's own password (argon2id) or one of the
user's app passwords (SHA-256 digest, found by one indexed lookup). A credential that verified
is trusted for ``auth_cache_seconds`` without running argon2 again; failures are counted per
user name + address and throttled.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy import select, update

from oxidav.authz.credential_cache import CredentialCache, Principal
from oxidav.authz.passwords import app_password_digest, burn_verification, verify_password
from oxidav.authz.throttle import LoginThrottle
from oxidav.db import Database, utcnow
from oxidav.db.models.users import AppPassword, User
from oxidav.settings import Settings

log = logging.getLogger("oxidav.auth")


class TooManyFailedLogins(Exception):
    """Raised instead of checking a password while the user+address pair is throttled."""

    def __init__(self, retry_after: float) -> None:
        super().__init__(f"too many failed logins; retry after {retry_after:.0f} s")
        self.retry_after = retry_after


class Authenticator:
    def __init__(self, db: Database, settings: Settings) -> None:
        self._db = db
        self.cache = CredentialCache(settings.auth_cache_seconds)
        self.throttle = LoginThrottle(settings.auth_max_failures, settings.auth_failure_window)
        self._count_lock = threading.Lock()
        #: How many slow (argon2) verifications ran; the auth benchmark reads it.
        self.slow_verifications = 0

    def authenticate(self, username: str, password: str, address: str = "") -> Principal | None:
        """Return the principal for valid credentials, None for invalid ones.

        Raises ``TooManyFailedLogins`` while this user name + address is throttled; the
        password is then not even looked at.
        """
        cached = self.cache.get(username, password)
        if cached is not None:
            return cached
        retry_after = self.throttle.retry_after(username, address)
        if retry_after is not None:
            log.warning("login throttled user=%r address=%s", username, address or "-")
            raise TooManyFailedLogins(retry_after)
        principal = self._verify(username, password)
        if principal is None:
            self.throttle.record_failure(username, address)
            log.warning("login failed user=%r address=%s", username, address or "-")
            return None
        self.throttle.record_success(username, address)
        self.cache.put(username, password, principal)
        return principal

    def _verify(self, username: str, password: str) -> Principal | None:
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
            self._count_slow()
            burn_verification(password)
            return None
        if app_password_id is not None:
            with self._db.write() as session:
                session.execute(
                    update(AppPassword)
                    .where(AppPassword.id == app_password_id)
                    .values(last_used_at=utcnow())
                )
            return Principal(user.id, user.username)
        self._count_slow()
        if verify_password(user.password_hash, password):
            return Principal(user.id, user.username)
        return None

    def _count_slow(self) -> None:
        with self._count_lock:
            self.slow_verifications += 1
