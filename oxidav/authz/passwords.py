"""Password hashing: argon2id for user passwords, SHA-256 for generated app passwords.

Nothing here runs at import time. Verifications a request causes go through the process's
``HashingGate`` (``oxidav.authz.hashing_gate``), which bounds how many run at once.
"""

from __future__ import annotations

import hashlib
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

#: argon2id with the library's current recommended parameters (64 MiB per run).
HASHER = PasswordHasher()


def hash_password(password: str) -> str:
    """Return the argon2id PHC string for ``password``."""
    return HASHER.hash(password)


def verify_password(password_hash: str, password: str, hasher: PasswordHasher = HASHER) -> bool:
    """Check ``password`` against an argon2 hash in constant time; never raises on a mismatch."""
    try:
        return hasher.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def new_app_password() -> str:
    """A Nextcloud-style app password: five groups of five characters, 160+ random bits."""
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    groups = ["".join(secrets.choice(alphabet) for _ in range(7)) for _ in range(5)]
    return "-".join(groups)


def app_password_digest(token: str) -> str:
    """The stored form of an app password."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
