"""The server process's C heap: at most ``MALLOC_ARENAS`` glibc malloc arenas.

glibc gives threads that allocate at the same time arenas of their own, up to eight per core,
and an arena keeps what was freed in it for its next allocations: a server whose worker
threads once held request bodies keeps that memory ever after, per arena. ``oxidav serve``
limits the arenas before its threads start (``mallopt(M_ARENA_MAX)``, from inside the process:
nothing for the operator to set), so freed memory is reused instead of multiplied; the
interpreter's lock already serializes most allocations. Where the C library has no
``mallopt`` (not glibc) nothing changes.
"""

from __future__ import annotations

import ctypes

#: glibc's ``M_ARENA_MAX`` parameter number for ``mallopt``.
M_ARENA_MAX = -8
MALLOC_ARENAS = 2


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
