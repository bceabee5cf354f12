"""How many connections each of a supervisor's worker processes holds, shared between them,
so that new connections spread evenly over the workers.

The workers accept from one listening socket. A new connection wakes every one of them and the
first to call ``accept`` gets it, so connections that arrive together (a sync client's or a
benchmark's pool of keep-alive connections) split unevenly as often as not, and a connection
keeps its worker for its life: the busier worker's core runs out while the other idles.

``ConnectionShares`` is one signed 64-bit count per worker slot in an anonymous shared mapping
the supervisor makes before it forks. A slot holds ``ABSENT`` while no worker serves in it (not
started yet, ended, stopping), else the number of connections its worker holds open. Worker *i*
writes slot *i* only (``WorkerShare``); the supervisor marks a slot ``ABSENT`` once its worker
has ended. A worker whose count is above that of a serving sibling leaves the next connection to
that sibling (``FrontConnectionManager``): it stops watching the listening socket for
``ACCEPT_RECHECK_SECONDS`` and then looks again. A connection the sibling has not taken after
``ACCEPT_DEFERRALS`` looks in a row is accepted anyway, so it waits at most about 20 ms for the
balance even when the sibling cannot take it (its threads busy, its process descheduled).

The counts are advisory: a stale or torn read only changes which worker accepts a connection,
never whether it is served.
"""

from __future__ import annotations

import mmap
import threading

#: A slot with no serving worker.
ABSENT = -1
#: How long a worker with more connections than a sibling leaves a new one to the sibling
#: before it looks again.
ACCEPT_RECHECK_SECONDS = 0.001
#: Looks in a row that find a connection still waiting, after which the worker accepts it.
ACCEPT_DEFERRALS = 20
_COUNT_BYTES = 8


class ConnectionShares:
    """The counts of ``slots`` workers, in memory the supervisor's forked workers share."""

    def __init__(self, slots: int) -> None:
        # Anonymous and MAP_SHARED (Python's default): a forked child writes the same pages.
        self._map = mmap.mmap(-1, slots * _COUNT_BYTES)
        self._counts = memoryview(self._map).cast("q")
        for slot in range(slots):
            self._counts[slot] = ABSENT

    def worker(self, slot: int) -> WorkerShare:
        """Slot ``slot``'s side, for the worker forked into it."""
        return WorkerShare(self._counts, slot)

    def vacate(self, slot: int) -> None:
        """The worker in ``slot`` has ended: its siblings no longer leave connections to it."""
        self._counts[slot] = ABSENT

    def counts(self) -> list[int]:
        """Every slot's count (``ABSENT`` for a slot nobody serves in)."""
        return list(self._counts)


class WorkerShare:
    """One worker's slot: counts the connections it holds open (``opened`` / ``closed``, from
    any of its threads) and says whether a serving sibling holds fewer."""

    def __init__(self, counts: memoryview, slot: int) -> None:
        self._counts = counts
        self._slot = slot
        self._lock = threading.Lock()
        self._open = 0
        self._serving = False

    def serve(self) -> None:
        """This worker accepts connections from now on."""
        with self._lock:
            self._serving = True
            self._counts[self._slot] = self._open

    def leave(self) -> None:
        """This worker accepts nothing more (it stops): siblings stop deferring to it."""
        with self._lock:
            self._serving = False
            self._counts[self._slot] = ABSENT

    def opened(self) -> None:
        """A connection was accepted."""
        with self._lock:
            self._open += 1
            if self._serving:
                self._counts[self._slot] = self._open

    def closed(self) -> None:
        """A connection ``opened`` counted was closed."""
        with self._lock:
            self._open = max(0, self._open - 1)
            if self._serving:
                self._counts[self._slot] = self._open

    def sibling_has_fewer(self) -> bool:
        """True when a serving sibling holds fewer connections than this worker."""
        mine = self._open
        return any(
            0 <= count < mine for slot, count in enumerate(self._counts) if slot != self._slot
        )


__all__ = [
    "ABSENT",
    "ACCEPT_DEFERRALS",
    "ACCEPT_RECHECK_SECONDS",
    "ConnectionShares",
    "WorkerShare",
]
