"""A bounded, thread-safe cache of parsed calendar objects, keyed by ETag.

The ETag is a hash of the stored bytes, so an entry never goes stale: a changed object has a
new ETag. Cached calendars are shared between requests and must be treated as read-only
(every transformation in this package builds new components).

The cache is bounded both in entries and in the total length of the source texts it holds
(the parsed form is a small multiple of its text); the least recently used entries go first,
and a text larger than the whole byte budget is parsed but not kept.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import icalendar


class ParsedCache:
    def __init__(self, size: int = 4096, max_text_bytes: int = 32 << 20) -> None:
        self.size = size
        self.max_text_bytes = max_text_bytes
        self._items: OrderedDict[str, tuple[icalendar.Calendar, int]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def get(self, etag: str, text: str) -> icalendar.Calendar:
        """The parsed ``text`` whose ETag is ``etag``."""
        with self._lock:
            entry = self._items.get(etag)
            if entry is not None:
                self._items.move_to_end(etag)
                return entry[0]
        import icalendar

        calendar = icalendar.Calendar.from_ical(text)
        weight = len(text)
        if weight > self.max_text_bytes:
            return calendar
        with self._lock:
            if etag not in self._items:
                self._items[etag] = (calendar, weight)
                self._bytes += weight
            while len(self._items) > self.size or self._bytes > self.max_text_bytes:
                _, (_, dropped) = self._items.popitem(last=False)
                self._bytes -= dropped
        return calendar

    @property
    def text_bytes(self) -> int:
        """Total length of the texts held."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._bytes = 0
