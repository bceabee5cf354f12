"""A bounded, thread-safe cache of parsed calendar objects, keyed by ETag.

The ETag is a hash of the stored bytes, so an entry never goes stale: a changed object has a
new ETag. Cached calendars are shared between requests and must be treated as read-only
(every transformation in this package builds new components).
"""

from __future__ import annotations

import threading
from collections import OrderedDict

import icalendar


class ParsedCache:
    def __init__(self, size: int = 4096) -> None:
        self.size = size
        self._items: OrderedDict[str, icalendar.Calendar] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, etag: str, text: str) -> icalendar.Calendar:
        """The parsed ``text`` whose ETag is ``etag``."""
        with self._lock:
            calendar = self._items.get(etag)
            if calendar is not None:
                self._items.move_to_end(etag)
                return calendar
        calendar = icalendar.Calendar.from_ical(text)
        with self._lock:
            self._items[etag] = calendar
            while len(self._items) > self.size:
                self._items.popitem(last=False)
        return calendar

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
