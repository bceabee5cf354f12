"""The server process's memory settings: glibc's malloc arenas and Python's garbage collector.

glibc gives threads that allocate at the same time arenas of their own, up to eight per core,
and an arena keeps what was freed in it for its next allocations: a server whose worker
threads once held request bodies keeps that memory ever after, per arena. ``oxidav serve``
limits the arenas before its threads start (``mallopt(M_ARENA_MAX)``, from inside the process:
nothing for the operator to set), so freed memory is reused instead of multiplied; the
interpreter's lock already serializes most allocations. Where the C library has no
``mallopt`` (not glibc) nothing changes.

The cyclic garbage collector examines its youngest generation once ``GC_YOUNG_THRESHOLD``
container objects more have been made than freed (CPython's default is 700). A request that
holds many objects at once — a listing's page of a thousand members — would otherwise start a
collection every few hundred members, each examining objects that are all still in use, and
promote them, so that full collections of the whole heap follow. Objects freed by their
reference count (nearly all of a request's) give their count back; only garbage in cycles
waits for the next collection, at most the threshold's worth of objects.
"""

from __future__ import annotations

import ctypes
import gc

#: glibc's ``M_ARENA_MAX`` parameter number for ``mallopt``.
M_ARENA_MAX = -8
MALLOC_ARENAS = 2
#: Net new container objects that start a collection of the youngest generation.
GC_YOUNG_THRESHOLD = 10_000


def mallopt(parameter: int, value: int) -> bool:
    """glibc's ``mallopt(parameter, value)``; False where it is refused or missing."""
    try:
        function = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return False
    function.argtypes = [ctypes.c_int, ctypes.c_int]
    function.restype = ctypes.c_int
    return bool(function(parameter, value))


def limit_malloc_arenas(arenas: int = MALLOC_ARENAS) -> bool:
    """Cap glibc's malloc arenas (call before threads start); False where it cannot be done."""
    return mallopt(M_ARENA_MAX, arenas)


def raise_gc_threshold(young: int = GC_YOUNG_THRESHOLD) -> None:
    """Collect the youngest generation after ``young`` net new container objects; the older
    generations' thresholds are kept."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(young, older, oldest)
