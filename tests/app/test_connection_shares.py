"""``ConnectionShares``: the workers' connection counts, in memory a forked worker shares.

The counts are written in a forked child and read in its parent, as the supervisor's workers
read each other's; a slot nobody serves in (not started, ended, stopping) is never deferred to.
"""

from __future__ import annotations

import os

from oxidav.connection_shares import ABSENT, ConnectionShares


def test_slots_start_absent_and_a_serving_worker_counts_its_connections() -> None:
    shares = ConnectionShares(3)
    assert shares.counts() == [ABSENT, ABSENT, ABSENT]
    worker = shares.worker(1)
    worker.opened()  # counted before it serves: kept, shown once it serves
    assert shares.counts() == [ABSENT, ABSENT, ABSENT]
    worker.serve()
    worker.opened()
    assert shares.counts() == [ABSENT, 2, ABSENT]
    worker.closed()
    worker.closed()
    worker.closed()  # a close more than it opened does not go below zero
    assert shares.counts() == [ABSENT, 0, ABSENT]


def test_a_worker_defers_only_to_a_serving_sibling_with_fewer_connections() -> None:
    shares = ConnectionShares(2)
    first, second = shares.worker(0), shares.worker(1)
    first.serve()
    first.opened()
    assert not first.sibling_has_fewer()  # the sibling is not serving yet
    second.serve()
    assert first.sibling_has_fewer()  # 1 against 0
    assert not second.sibling_has_fewer()
    second.opened()
    assert not first.sibling_has_fewer()  # 1 against 1: either may accept
    assert not second.sibling_has_fewer()
    first.opened()
    second.leave()  # stopping: nothing is left to it
    assert not first.sibling_has_fewer()
    assert shares.counts() == [2, ABSENT]


def test_an_ended_workers_slot_is_vacated() -> None:
    shares = ConnectionShares(2)
    first, second = shares.worker(0), shares.worker(1)
    first.serve()
    second.serve()
    first.opened()
    assert first.sibling_has_fewer()
    shares.vacate(1)  # the supervisor reaped the worker in slot 1
    assert not first.sibling_has_fewer()


def test_a_forked_workers_counts_are_seen_by_its_siblings() -> None:
    shares = ConnectionShares(2)
    parent_side = shares.worker(0)
    parent_side.serve()
    parent_side.opened()
    parent_side.opened()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker in slot 1
        try:
            child_side = shares.worker(1)
            child_side.serve()
            child_side.opened()
            os.write(write, b"1" if child_side.sibling_has_fewer() is False else b"0")
        finally:
            os._exit(0)
    os.close(write)
    seen = os.read(read, 1)
    os.close(read)
    os.waitpid(pid, 0)
    assert seen == b"1"  # the child saw the parent's two connections: it has fewer
    assert shares.counts() == [2, 1]  # and the parent sees the child's one
    assert parent_side.sibling_has_fewer()
