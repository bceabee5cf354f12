"""Running test code in other threads: one call in a thread of its own (and its result), or
one function in several threads at once (and what they raised)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def in_new_thread(call: Callable[[], T]) -> T:
    """``call()`` run in a new thread, which has ended when this returns."""
    results: list[T] = []
    thread = threading.Thread(target=lambda: results.append(call()))
    thread.start()
    thread.join()
    return results[0]


def run_in_threads(work: Callable[[], None], count: int) -> list[BaseException]:
    """``work()`` in ``count`` threads started together; what any of them raised."""
    errors: list[BaseException] = []

    def guarded() -> None:
        try:
            work()
        except BaseException as exc:  # reported to the caller
            errors.append(exc)

    threads = [threading.Thread(target=guarded) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return errors
