"""Keeping argon2's working memory out of the heap, so a finished run gives it back.

argon2 takes its ``memory_cost`` in one ``malloc`` per run. glibc serves a block that large
with ``mmap`` and unmaps it on ``free`` — until a freed mmapped block raises its *dynamic* mmap
threshold to that block's size (up to 32 MiB); from then on such blocks come from the calling
thread's malloc arena and stay in the process after ``free``, one arena per worker thread.
``unmap_large_blocks`` fixes the threshold (``mallopt(M_MMAP_THRESHOLD)``), which also turns
the dynamic raise off, so every argon2 run's memory is unmapped when it ends and the process's
memory stays bounded by the runs in progress. It is called when the hashing gate is made (never
at import) and does nothing where the C library has no ``mallopt`` (not glibc).
"""

from __future__ import annotations

import ctypes
import logging

from oxidav.process_memory import mallopt

log = logging.getLogger("oxidav.auth")

#: glibc's ``M_MMAP_THRESHOLD`` parameter number for ``mallopt``.
M_MMAP_THRESHOLD = -3
#: Blocks from this size up are mmapped: well below any argon2 ``memory_cost`` we use, well
#: above what the interpreter's small objects need.
MMAP_THRESHOLD_BYTES = 1 << 20


def unmap_large_blocks() -> bool:
    """Fix glibc's mmap threshold; False where that cannot be done."""
    done = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES)
    if not done and hasattr(ctypes.CDLL(None), "mallopt"):
        log.warning("mallopt(M_MMAP_THRESHOLD) refused: argon2 memory may stay in the heap")
    return done
