"""Throttling of failed logins: per user name + address, and per address across user names.

``LoginThrottle``: after ``max_failures`` failures within ``window`` seconds, further attempts
for that (user name, address) pair are refused (HTTP 429 with Retry-After) until the oldest
counted failure leaves the window; a success clears the pair.

``AddressBudget``: an address (an IPv6 address counts as its /64, which one host usually holds
whole) gets ``max_failures`` failed password checks within ``window`` seconds, whatever user
names it tries. A check *reserves* its place before it runs (``reserve``) and settles after
(``settle``), so checks in flight count too: concurrent requests cannot overshoot the budget,
and an address causes at most ``max_failures`` argon2 runs per window. A success frees its
place and clears nothing (one good account must not reset an attacker's budget).

The failures are kept in a ``FailureStore``: the database for the server (every process counts
every failure), this process's memory otherwise (``oxidav.authz.authn.failures``). Checks in
flight are this process's own.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from oxidav.authz.authn.failures import FailureStore, LocalFailures
from oxidav.settings import Settings

#: Retry-After while an address's budget is full of checks still running.
IN_FLIGHT_RETRY_SECONDS = 1.0


def address_key(address: str) -> str:
    """The key an address is budgeted under: IPv4 as is, IPv6 as its /64 network."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return address
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


class LoginThrottle:
    """Failed logins per (name, address): ``max_failures`` within ``window`` seconds, then 429."""

    def __init__(
        self,
        max_failures: int,
        window: float,
        store: FailureStore | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._max_failures = max_failures
        self._window = window
        self._store = store or LocalFailures(max_failures)
        self._clock = clock

    @staticmethod
    def _key(username: str, address: str) -> str:
        return f"{username}\0{address}"

    def retry_after(self, username: str, address: str) -> float | None:
        """Seconds until ``username`` may try again from ``address``; None if it may now."""
        now = self._clock()
        times = self._store.times(self._key(username, address), now, self._window)
        if len(times) < self._max_failures:
            return None
        return max(times[-self._max_failures] + self._window - now, 0.001)

    def record_failure(self, username: str, address: str) -> None:
        self._store.add([self._key(username, address)], self._clock(), self._window)

    def record_success(self, username: str, address: str) -> None:
        self._store.clear(self._key(username, address))


class AddressBudget:
    """Failed password checks per address across user names, checks in flight included."""

    def __init__(
        self,
        max_failures: int,
        window: float,
        store: FailureStore | None = None,
        clock: Callable[[], float] = time.time,
        max_keys: int = 100_000,
    ) -> None:
        self._max_failures = max_failures
        self._window = window
        self._store = store or LocalFailures(max_failures)
        self._clock = clock
        self._max_keys = max_keys
        self._lock = threading.Lock()
        #: Checks running now per address key (this process's; they last a second at most).
        self._in_flight: OrderedDict[str, int] = OrderedDict()

    @classmethod
    def from_settings(cls, settings: Settings, store: FailureStore | None = None) -> AddressBudget:
        return cls(settings.auth_max_failures_per_address, settings.auth_failure_window, store)

    def reserve(self, address: str) -> float | None:
        """Take a place for one password check from ``address``; None if taken, else the
        seconds until one may be free (nothing taken)."""
        key = address_key(address)
        now = self._clock()
        with self._lock:  # the failures and the checks in flight are read as one state
            failures = self._store.times(key, now, self._window)
            running = self._in_flight.get(key, 0)
            if len(failures) + running < self._max_failures:
                self._in_flight[key] = running + 1
                self._in_flight.move_to_end(key)
                while len(self._in_flight) > self._max_keys:
                    self._in_flight.popitem(last=False)
                return None
        if len(failures) >= self._max_failures:
            return max(failures[-self._max_failures] + self._window - now, 0.001)
        return IN_FLIGHT_RETRY_SECONDS

    def settle(self, address: str, failed: bool) -> None:
        """Give back the place ``reserve`` took; a failed check stays counted for the window."""
        key = address_key(address)
        with self._lock:  # a failed check moves from in flight to the failures at once
            if failed:
                self._store.add([key], self._clock(), self._window)
            running = self._in_flight.get(key, 0) - 1
            if running > 0:
                self._in_flight[key] = running
            else:
                self._in_flight.pop(key, None)
