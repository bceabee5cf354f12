"""Throttling of failed logins per user name + client address.

After ``max_failures`` failures within ``window`` seconds, further attempts for that pair are
refused (HTTP 429 with Retry-After) until the oldest counted failure leaves the window; a success
clears the pair. The state is per process and bounded in size.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable


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
