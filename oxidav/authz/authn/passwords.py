"""Password hashing: argon2id for user passwords, SHA-256 for generated app passwords.

New hashes use OWASP's Password Storage Cheat Sheet argon2id configuration m=12288 KiB (12 MiB),
t=3, p=1 — one of its listed equivalent-strength profiles (like 19 MiB/t=2 or 46 MiB/t=1). It is
the largest memory among them that keeps the hashing gate's default of two concurrent runs within
32 MiB, trading memory for passes. Hashes stored with other parameters (argon2-cffi's 64 MiB
default, used before) keep verifying; ``needs_rehash`` tells the login path to replace them.

Nothing here runs at import time. Hashings a request causes go through the process's
``HashingGate`` (``oxidav.authz.authn.hashing_gate``), which bounds how many run at once.
"""

from __future__ import annotations

import hashlib
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

#: OWASP's argon2id m=12 MiB, t=3, p=1 (see the module docstring).
MEMORY_COST_KIB = 12288
TIME_COST = 3
PARALLELISM = 1
HASHER = PasswordHasher(time_cost=TIME_COST, memory_cost=MEMORY_COST_KIB, parallelism=PARALLELISM)


def hash_password(password: str, hasher: PasswordHasher = HASHER) -> str:
    """Return the argon2id PHC string for ``password``."""
    return hasher.hash(password)


def verify_password(password_hash: str, password: str, hasher: PasswordHasher = HASHER) -> bool:
    """Check ``password`` against an argon2 hash in constant time; never raises on a mismatch."""
    try:
        return hasher.verify(password_hash, password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False


def needs_rehash(password_hash: str, hasher: PasswordHasher = HASHER) -> bool:
    """Whether a hash (that just verified) was made with other parameters than ``hasher``'s."""
    try:
        return hasher.check_needs_rehash(password_hash)
    except ValueError:  # not an argon2 hash (InvalidHashError is one)
        return False


def new_app_password() -> str:
    """A Nextcloud-style app password: five groups of five characters, 160+ random bits."""
    alphabet = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    groups = ["".join(secrets.choice(alphabet) for _ in range(7)) for _ in range(5)]
    return "-".join(groups)


def app_password_digest(token: str) -> str:
    """The stored form of an app password."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()
