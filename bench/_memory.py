"""Memory figures of this process (Linux /proc) and random test input, for the in-process
blob benchmarks."""

from __future__ import annotations

import os
from pathlib import Path


def status_kib(field: str) -> int:
    """A ``/proc/self/status`` figure in KiB, e.g. ``VmRSS`` or ``VmHWM`` (peak RSS)."""
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def reset_peak() -> None:
    """Reset ``VmHWM`` to the current RSS (writing 5 to clear_refs)."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")


def random_file(path: Path, size: int) -> None:
    """Write ``size`` random bytes to ``path`` in 16 MiB pieces."""
    with open(path, "wb") as fh:
        left = size
        while left:
            piece = os.urandom(min(left, 16 << 20))
            fh.write(piece)
            left -= len(piece)
