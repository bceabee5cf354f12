"""BEFORE/AFTER gate for the serving process's garbage-collector threshold (issue 30): CPython's
default young threshold (700, BEFORE) against ``process_memory.GC_YOUNG_THRESHOLD`` (AFTER),
in one process, switched request by request.

The process holds the app as ``oxidav serve`` builds it (``make_app``) over folders of 500 and
5000 files (``files_propfind``'s), with what it made at start-up frozen out of the collector,
as the supervisor freezes its objects before forking its workers. Each of ``--runs`` runs sends
every listing (Depth:1 PROPFIND with four named properties, allprop, and the Nextcloud
client's, ``files_propfind.NEXTCLOUD``) once under each threshold, the order swapped every
run, straight to the WSGI app; the same process under both thresholds is the closest two sides
can be on the shared machine. Kept per listing: the median time, and the collector's time and
collections per request (``gc.callbacks``). Both sides' answers must be byte-equal. Exits 1
unless AFTER's median time is lower than BEFORE's for every ``--decide`` listing (default: all).

    python -m bench gc_listing [--runs 60] [--decide "5000 named4"]
"""

from __future__ import annotations

import argparse
import base64
import gc
import io
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench._files_servers import add_alice, oxidav_env
from bench.files_propfind import BODIES, NEXTCLOUD, populate_oxidav

SIZES = (500, 5000)
LISTINGS = {**BODIES, "nextcloud": NEXTCLOUD}
CPYTHON_DEFAULT_YOUNG = 700
AUTH = "Basic " + base64.b64encode(b"alice:secret").decode()

App = Callable[[dict[str, Any], Any], Any]


def propfind(app: App, folder: str, body: bytes) -> bytes:
    environ = {
        "REQUEST_METHOD": "PROPFIND",
        "PATH_INFO": f"/remote.php/dav/files/alice/{folder}",
        "SCRIPT_NAME": "",
        "QUERY_STRING": "",
        "SERVER_NAME": "localhost",
        "SERVER_PORT": "80",
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": "localhost",
        "REMOTE_ADDR": "127.0.0.1",
        "HTTP_AUTHORIZATION": AUTH,
        "HTTP_DEPTH": "1",
        "CONTENT_TYPE": "application/xml",
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
        "wsgi.errors": sys.stderr,
        "wsgi.url_scheme": "http",
        "wsgi.multithread": True,
        "wsgi.multiprocess": False,
        "wsgi.run_once": False,
    }
    statuses: list[str] = []
    answer = app(environ, lambda status, _headers, _exc=None: statuses.append(status))
    try:
        body_out = b"".join(answer)
    finally:
        getattr(answer, "close", lambda: None)()
    if not statuses[0].startswith("207"):
        raise SystemExit(f"PROPFIND {folder}: {statuses[0]}")
    return body_out


class CollectorClock:
    """The collector's time and collections since the last ``take``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.collections = 0
        self._started = 0.0
        gc.callbacks.append(self._note)

    def _note(self, phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.collections += 1

    def take(self) -> tuple[float, int]:
        taken = (self.seconds, self.collections)
        self.seconds, self.collections = 0.0, 0
        return taken


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench gc_listing")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--decide", action="append", help='a listing, e.g. "5000 named4"')
    args = parser.parse_args(argv)
    from oxidav.app import make_app
    from oxidav.process_memory import GC_YOUNG_THRESHOLD
    from oxidav.services import Services
    from oxidav.settings import load_settings

    sides = {"BEFORE": CPYTHON_DEFAULT_YOUNG, "AFTER": GC_YOUNG_THRESHOLD}
    listings = [(size, label) for size in SIZES for label in LISTINGS]
    times: dict[tuple[str, int, str], list[float]] = {}
    collector: dict[tuple[str, int, str], list[tuple[float, int]]] = {}
    kept = gc.get_threshold()
    with tempfile.TemporaryDirectory(prefix="bench-gc-") as tmp:
        env = oxidav_env(Path(tmp) / "oxidav")
        add_alice(env)
        populate_oxidav(env, list(SIZES))
        services = Services.open(load_settings(env=env))
        try:
            app = make_app(services.settings, services)
            answers: dict[tuple[int, str], bytes] = {}
            for size, label in listings:  # imports, caches and compiled statements warm
                answers[(size, label)] = propfind(app, f"f{size}/", LISTINGS[label])
            gc.collect()
            gc.freeze()
            clock = CollectorClock()
            for run in range(args.runs):
                order = list(sides) if run % 2 == 0 else list(reversed(sides))
                for size, label in listings:
                    for side in order:
                        gc.set_threshold(sides[side], kept[1], kept[2])
                        clock.take()
                        started = time.perf_counter()
                        answer = propfind(app, f"f{size}/", LISTINGS[label])
                        elapsed = time.perf_counter() - started
                        key = (side, size, label)
                        times.setdefault(key, []).append(elapsed)
                        collector.setdefault(key, []).append(clock.take())
                        if answer != answers[(size, label)]:
                            raise SystemExit(f"{side}: the {size} {label} listing differs")
        finally:
            gc.set_threshold(*kept)
            services.close()
    deciding = set(args.decide or [f"{size} {label}" for size, label in listings])
    ok = True
    print(
        "| listing | BEFORE ms | AFTER ms | AFTER/BEFORE time | collector ms per request "
        "BEFORE → AFTER | collections per request BEFORE → AFTER |"
    )
    print("|---|---|---|---|---|---|")
    for size, label in listings:
        name = f"{size} {label}"
        before, after = (statistics.median(times[(s, size, label)]) * 1000 for s in sides)
        spent = {
            s: statistics.mean(c[0] for c in collector[(s, size, label)]) * 1000 for s in sides
        }
        count = {s: statistics.mean(c[1] for c in collector[(s, size, label)]) for s in sides}
        print(
            f"| {name} | {before:.2f} | {after:.2f} | {after / before:.2f} | "
            f"{spent['BEFORE']:.2f} → {spent['AFTER']:.2f} | "
            f"{count['BEFORE']:.1f} → {count['AFTER']:.1f} |"
        )
        if name in deciding and not after < before:
            print(f"GATE FAIL: {name}: AFTER {after:.2f} ms is not below BEFORE {before:.2f} ms")
            ok = False
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
