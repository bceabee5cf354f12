"""The global cap on password hashing: at most ``concurrency`` argon2 runs at once.

Every argon2 run a request can cause — verifying a user's password, the stand-in for an unknown
user name, a public link's password; hashing a link password set through the Share API; the
re-hash of a user's password stored with old parameters — runs inside a slot of the process's
one ``HashingGate``, so the memory argon2 takes (its ``memory_cost`` per run, see ``passwords``)
is bounded by ``concurrency`` runs whatever the number of requests. Invariants:

- a request waits for a slot at most ``wait`` seconds, and at most ``queue`` requests wait at
  all; beyond either it gets ``HashingBusy`` (429 + Retry-After) having hashed nothing, so
  waiting requests tie up a bounded number of worker threads;
- an unknown user name costs one argon2 run, like a known one (``verify_unknown``), so timing
  does not tell which names exist. The hash it verifies against is made on first use, inside a
  slot — that first run hashes instead of verifying, which costs the same — never at import;
- argon2's memory is unmapped when a run ends (``argon2_memory.unmap_large_blocks``, applied
  when a gate is made), so the memory stays bounded by the runs in progress, not by the
  number of threads that ever hashed;
- a re-hash after a successful verification happens in the verification's own slot
  (``verify_and_rehash``), never by queueing a second time;
- the counters (``verifications``, ``running``, ``peak_running``) are what tests and benches
  observe: ``verifications`` counts every slot taken, ``peak_running`` the most at once.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from argon2 import PasswordHasher

from oxidav.authz.authn.argon2_memory import unmap_large_blocks
from oxidav.authz.authn.login_refusals import HashingBusy
from oxidav.authz.authn.passwords import HASHER, hash_password, needs_rehash, verify_password
from oxidav.settings import Settings

#: How many requests may wait for a slot, per slot.
QUEUE_PER_SLOT = 4


class HashingGate:
    def __init__(
        self,
        concurrency: int,
        wait: float,
        queue: int | None = None,
        hasher: PasswordHasher = HASHER,
    ) -> None:
        self.concurrency = concurrency
        self.wait = wait
        self.queue = QUEUE_PER_SLOT * concurrency if queue is None else queue
        self._hasher = hasher
        self._slots = threading.Condition()
        self._dummy_lock = threading.Lock()
        self._dummy_hash: str | None = None
        #: argon2 runs started, slots taken now, and the most ever taken at once.
        self.verifications = 0
        self.running = 0
        self.peak_running = 0
        self._waiting = 0
        unmap_large_blocks()

    @classmethod
    def from_settings(cls, settings: Settings) -> HashingGate:
        return cls(settings.auth_hash_concurrency, settings.auth_hash_wait_seconds)

    @contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one hashing slot; ``HashingBusy`` if none is free within ``wait`` seconds
        or too many requests already wait."""
        with self._slots:
            if self.running >= self.concurrency:
                if self._waiting >= self.queue:
                    raise HashingBusy(1.0, "password checks are busy (queue full)")
                self._waiting += 1
                try:
                    free = self._slots.wait_for(
                        lambda: self.running < self.concurrency, timeout=self.wait
                    )
                finally:
                    self._waiting -= 1
                if not free:
                    raise HashingBusy(1.0, "password checks are busy (no slot in time)")
            self.running += 1
            self.verifications += 1
            self.peak_running = max(self.peak_running, self.running)
        try:
            yield
        finally:
            with self._slots:
                self.running -= 1
                self._slots.notify()

    def verify(self, password_hash: str, password: str) -> bool:
        """``password`` against an argon2 hash, in a slot."""
        with self.slot():
            return verify_password(password_hash, password, self._hasher)

    def verify_and_rehash(self, password_hash: str, password: str) -> tuple[bool, str | None]:
        """``password`` against an argon2 hash, in a slot; on a match with a hash made with
        other parameters than the current ones, also the new hash (same slot), else None."""
        with self.slot():
            if not verify_password(password_hash, password, self._hasher):
                return False, None
            if not needs_rehash(password_hash, self._hasher):
                return True, None
            return True, hash_password(password, self._hasher)

    def hash(self, password: str) -> str:
        """A new argon2id hash of ``password`` (a link password being set), in a slot."""
        with self.slot():
            return hash_password(password, self._hasher)

    def verify_unknown(self, password: str) -> None:
        """Spend what checking ``password`` against a real hash spends, in a slot."""
        with self.slot():
            with self._dummy_lock:
                if self._dummy_hash is None:
                    self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(16))
                    return
                dummy = self._dummy_hash
            verify_password(dummy, password, self._hasher)
