"""One measurement of ``files_put_cpu``: small PUTs through oxidav's WSGI app in this process.

Run by path (``python bench/_put_cpu_worker.py DATA_DIR FILES WARMUP [WORKLOAD]``) with
``PYTHONPATH`` naming the folder whose ``oxidav`` package is measured. The data folder must hold
a migrated database with user alice (``oxidav user add``). PUTs ``WARMUP`` untimed resources,
then ``FILES`` timed ones, and prints one JSON line: the thread's CPU and the wall-clock
microseconds per timed PUT (the wall time also holds what the thread waited for: the syncs of a
checkpoint) and the SHA-256 of every timed resource as a GET through the same app returns it
(statuses included), which BEFORE and AFTER must share.

``WORKLOAD`` ``files`` (the default): distinct 4 KiB files (``files_put.content``), each into a
new name of one folder. ``caldav``: events (``caldav_vs_radicale.event``: every tenth a weekly
series) into one new calendar, the timed ones into a calendar already holding ``WARMUP``.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from pathlib import Path
from typing import NamedTuple

# ``bench`` comes from this checkout (ahead of the measured folder, which may hold an older
# one), ``oxidav`` from the measured folder: the checkout leaves the path before it is imported.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from bench._calendar_data import MKCALENDAR, event
from bench._wsgi import App, wsgi_request
from bench.files_put import content

del sys.path[0]

BASE = "/remote.php/dav/files/alice/"
CALENDAR = "/remote.php/dav/calendars/alice/bench/"


def request(
    app: App, method: str, path: str, body: bytes = b"", base: str = BASE
) -> tuple[str, bytes]:
    return wsgi_request(app, method, base + path, body)


#: A request of a workload: the path (under the workload's base) and the body.
Sent = tuple[str, bytes]


class Workload(NamedTuple):
    base: str
    setup_method: str  # each setup request must answer 201
    setup: list[Sent]
    warmup: list[Sent]
    timed: list[Sent]


def files_workload(files: int, warmup: int) -> Workload:
    """The ``files`` workload (module docstring)."""
    runs = {
        run: [(f"{run}/f{i}.bin", content(i, run)) for i in range(count)]
        for run, count in (("warmup", warmup), ("timed", files))
    }
    setup = [("warmup", b""), ("timed", b"")]
    return Workload(BASE, "MKCOL", setup, runs["warmup"], runs["timed"])


def caldav_workload(files: int, warmup: int) -> Workload:
    """The ``caldav`` workload (module docstring)."""

    def puts(numbers: range) -> list[Sent]:
        return [(f"e{i:05d}.ics", event(i).encode()) for i in numbers]

    setup = [("", MKCALENDAR.encode())]
    return Workload(
        CALENDAR, "MKCALENDAR", setup, puts(range(warmup)), puts(range(warmup, warmup + files))
    )


def main(data_dir: str, files: int, warmup: int, workload: str = "files") -> None:
    os.environ["OXIDAV_DATA_DIR"] = data_dir
    os.environ["OXIDAV_LOG_LEVEL"] = "WARNING"
    from oxidav.app import make_app
    from oxidav.settings import load_settings

    app = make_app(load_settings())
    made = (caldav_workload if workload == "caldav" else files_workload)(files, warmup)
    base = made.base
    for path, body in made.setup:
        status, _ = request(app, made.setup_method, path, body, base=base)
        if not status.startswith("201"):
            raise SystemExit(f"{made.setup_method} {path}: {status}")
    for run, puts in (("warmup", made.warmup), ("timed", made.timed)):
        started, wall_started = time.thread_time(), time.perf_counter()
        for path, body in puts:
            status, _ = request(app, "PUT", path, body, base=base)
            if not status.startswith(("201", "204")):
                raise SystemExit(f"PUT {path} ({run}): {status}")
        cpu = time.thread_time() - started
        wall = time.perf_counter() - wall_started
    answers = hashlib.sha256()
    for path, _body in made.timed:
        status, body = request(app, "GET", path, base=base)
        answers.update(status.encode() + hashlib.sha256(body).digest())
    per_put = {"cpu": 1e6 * cpu / files, "wall": 1e6 * wall / files}
    print(json.dumps({**per_put, "answers": answers.hexdigest()}))


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:5])
