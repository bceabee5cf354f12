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

The state of both is per process and bounded in size (least recently used keys go first).
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass

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
    def __init__(
        self,
        max_failures: int,
        window: float,
        max_keys: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_failures = max_failures
        self._window = window
        self._max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()
        self._failures: OrderedDict[tuple[str, str], deque[float]] = OrderedDict()

    def _recent(self, key: tuple[str, str], now: float) -> deque[float] | None:
        times = self._failures.get(key)
        if times is None:
            return None
        while times and times[0] <= now - self._window:
            times.popleft()
        if not times:
            del self._failures[key]
            return None
        return times

    def retry_after(self, username: str, address: str) -> float | None:
        """Seconds until ``username`` may try again from ``address``; None if it may now."""
        now = self._clock()
        with self._lock:
            times = self._recent((username, address), now)
            if times is None or len(times) < self._max_failures:
                return None
            return max(times[0] + self._window - now, 0.001)

    def record_failure(self, username: str, address: str) -> None:
        now = self._clock()
        key = (username, address)
        with self._lock:
            times = self._recent(key, now)
            if times is None:
                times = self._failures[key] = deque(maxlen=self._max_failures)
            times.append(now)
            self._failures.move_to_end(key)
            while len(self._failures) > self._max_keys:
                self._failures.popitem(last=False)

    def record_success(self, username: str, address: str) -> None:
        with self._lock:
            self._failures.pop((username, address), None)


@dataclass(slots=True)
class _AddressState:
    failures: deque[float]
    in_flight: int = 0


class AddressBudget:
    def __init__(
        self,
        max_failures: int,
        window: float,
        max_keys: int = 100_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._max_failures = max_failures
        self._window = window
        self._max_keys = max_keys
        self._clock = clock
        self._lock = threading.Lock()
        self._states: OrderedDict[str, _AddressState] = OrderedDict()

    @classmethod
    def from_settings(cls, settings: Settings) -> AddressBudget:
        return cls(settings.auth_max_failures_per_address, settings.auth_failure_window)

    def _state(self, key: str, now: float) -> _AddressState:
        state = self._states.get(key)
        if state is None:
            state = self._states[key] = _AddressState(deque(maxlen=self._max_failures))
        failures = state.failures
        while failures and failures[0] <= now - self._window:
            failures.popleft()
        self._states.move_to_end(key)
        while len(self._states) > self._max_keys:
            self._states.popitem(last=False)
        return state

    def reserve(self, address: str) -> float | None:
        """Take a place for one password check from ``address``; None if taken, else the
        seconds until one may be free (nothing taken)."""
        now = self._clock()
        with self._lock:
            state = self._state(address_key(address), now)
            if len(state.failures) + state.in_flight < self._max_failures:
                state.in_flight += 1
                return None
            if len(state.failures) >= self._max_failures:
                return max(state.failures[0] + self._window - now, 0.001)
            return IN_FLIGHT_RETRY_SECONDS

    def settle(self, address: str, failed: bool) -> None:
        """Give back the place ``reserve`` took; a failed check stays counted for the window."""
        now = self._clock()
        with self._lock:
            state = self._state(address_key(address), now)
            state.in_flight = max(state.in_flight - 1, 0)
            if failed:
                state.failures.append(now)
