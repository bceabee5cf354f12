"""Metrics shared by the worker processes of one ``oxidav serve --workers N`` supervisor.

prometheus_client's multiprocess mode: every process writes its counters, histograms and
gauges to memory-mapped files in one directory, and a scrape, whichever worker answers it,
sums them (``Metrics.exposition``). The mode is chosen when prometheus_client is imported, so
``share_metrics`` runs in the supervisor before anything imports it; the directory is new for
each supervisor and removed when it exits. Gauges read at scrape time (connections, threads,
the database pool, ``process_*``) are those of the worker that answered.

This module imports nothing of prometheus_client until a worker is forgotten.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

#: prometheus_client's own switch for its multiprocess mode.
SHARED_DIR_ENV = "PROMETHEUS_MULTIPROC_DIR"


def share_metrics() -> str:
    """Make a new directory for the workers' metrics and switch prometheus_client to it (call
    before it is imported); it is removed when this process exits."""
    path = tempfile.mkdtemp(prefix="oxidav-metrics-")
    os.environ[SHARED_DIR_ENV] = path
    owner = os.getpid()

    def _remove() -> None:
        if os.getpid() == owner:
            shutil.rmtree(path, ignore_errors=True)

    atexit.register(_remove)
    return path


def shared_dir() -> str | None:
    """The directory of the shared metrics, if this process is one of several workers."""
    return os.environ.get(SHARED_DIR_ENV) or None


def forget_worker(pid: int) -> None:
    """Drop the live gauges of a worker that ended (its counters keep counting in the sum)."""
    path = shared_dir()
    if path is None:
        return
    from prometheus_client import multiprocess

    multiprocess.mark_process_dead(pid, path)  # type: ignore[no-untyped-call]
