"""Password hashing: argon2id for user passwords, SHA-256 for generated app passwords."""

from __future__ import annotations

import hashlib
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

_HASHER = PasswordHasher()  # argon2id with the library's current recommended parameters

#: A valid hash of a random password; verifying against it makes an unknown user cost as
#: much time as a known one, so response times do not tell which user names exist.
_DUMMY_HASH = _HASHER.hash(secrets.token_urlsafe(16))


def hash_password(password: str) -> str:
    """Return the argon2id PHC string for ``password``."""
    return _HASHER.hash(password)


def verify_password(password_hash: str, password: str) -> bool:
    """Check ``password`` against an argon2 hash in constant time; never raises on a mismatch."""
    try:
        return _HASHER.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def burn_verification(password: str) -> None:
    """Spend one argon2 verification for nothing (used when the user does not exist)."""
    verify_password(_DUMMY_HASH, password)


def new_app_password() -> str:
    """A Nextcloud-style app password: five groups of five characters, 160+ random bits."""
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    groups = ["".join(secrets.choice(alphabet) for _ in range(7)) for _ in range(5)]
    return "-".join(groups)


def app_password_digest(token: str) -> str:
    """The stored form of an app password."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
