"""The verified-credential cache: argon2 runs once per credential per TTL, not per request.

Entries are keyed by a keyed BLAKE2 digest of ``user \\0 password`` (the key is random per
process), so the cache never holds a password, and a lookup compares digests with
``hmac.compare_digest``. The cache is bounded (least recently used entries go first) and an entry
expires after ``ttl`` seconds. What a credential verified as is the caller's to check again on a
hit: the authenticator asks the database whether the password or app password it verified is
still the user's, so a change made by any process counts at the next request.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Generic, TypeVar

#: What a credential verified as (the authenticator's ``Verified``, a link's ``Principal``).
V = TypeVar("V")


class CredentialCache(Generic[V]):
    """Verified credentials: ``user \\0 password`` -> what they verified as, for ``ttl``."""

    def __init__(
        self,
        ttl: float,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._key = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[bytes, str, V, float]] = OrderedDict()

    def _digest(self, username: str, password: str) -> bytes:
        data = username.encode("utf-8") + b"\0" + password.encode("utf-8")
        return hashlib.blake2b(data, key=self._key, digest_size=32).digest()

    def get(self, username: str, password: str) -> V | None:
        if self._ttl <= 0:
            return None
        digest = self._digest(username, password)
        slot = digest[:8].hex()
        with self._lock:
            entry = self._entries.get(slot)
            if entry is None:
                return None
            stored, _user, value, expires = entry
            if expires <= self._clock() or not hmac.compare_digest(stored, digest):
                return None
            self._entries.move_to_end(slot)
            return value

    def put(self, username: str, password: str, value: V) -> None:
        if self._ttl <= 0:
            return
        digest = self._digest(username, password)
        with self._lock:
            self._entries[digest[:8].hex()] = (digest, username, value, self._clock() + self._ttl)
            self._entries.move_to_end(digest[:8].hex())
            while len(self._entries) > self._max:
                self._entries.popitem(last=False)

    def forget(self, username: str, password: str) -> None:
        """Drop one credential (it no longer verifies)."""
        digest = self._digest(username, password)
        with self._lock:
            entry = self._entries.get(digest[:8].hex())
            if entry is not None and hmac.compare_digest(entry[0], digest):
                del self._entries[digest[:8].hex()]

    def forget_user(self, username: str) -> None:
        """Drop every cached credential of ``username`` (password changed or user deleted)."""
        with self._lock:
            for slot in [s for s, entry in self._entries.items() if entry[1] == username]:
                del self._entries[slot]
