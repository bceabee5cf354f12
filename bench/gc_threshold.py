"""BEFORE/AFTER gate for the serving process's garbage-collector threshold (issue 30): CPython's
default young threshold (700, BEFORE) against ``process_memory.GC_YOUNG_THRESHOLD`` (AFTER),
in one process, switched request by request.

The process holds the app as ``oxidav serve`` builds it (``make_app``) over folders of 500 and
5000 files (``files_propfind``'s), a calendar of ``--events`` events and an address book of
``--cards`` cards (``dav_vs_xandikos``' data, PUT through the app), with what it made at
start-up frozen out of the collector, as the supervisor freezes its objects before forking its
workers. Each of ``--runs`` runs sends every request once under each threshold, the order
swapped every run, straight to the WSGI app: the file listings (Depth:1 PROPFIND with four
named properties, allprop, and the Nextcloud client's, ``files_propfind.NEXTCLOUD``), a
calendar's and an address book's sync-collection with an empty token, an addressbook-query
EMAIL text-match, and the PUT of a new event (each side its own). The same process under both
thresholds is the closest two sides can be on the shared machine. Kept per request: the median
time, and the collector's time and collections per request (``gc.callbacks``). Both sides'
answers in a run must be byte-equal (but the PUTs'). Exits 1 unless AFTER's median time is
lower than BEFORE's for every ``--decide`` request (default: the listings).

    python -m bench gc_threshold [--runs 60] [--events 1000] [--cards 1000]
        [--decide "5000 named4"]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from bench._calendar_data import MKCALENDAR, event
from bench._files_servers import add_alice, oxidav_env
from bench._wsgi import App, wsgi_request
from bench.caldav_vs_radicale import SYNC, name
from bench.carddav_vs_radicale import QUERY as CARD_QUERY
from bench.carddav_vs_radicale import vcard
from bench.files_propfind import BODIES, NEXTCLOUD, populate_oxidav

CALENDAR_TYPE = "text/calendar; charset=utf-8"
VCARD_TYPE = "text/vcard; charset=utf-8"

SIZES = (500, 5000)
LISTINGS = {**BODIES, "nextcloud": NEXTCLOUD}
CPYTHON_DEFAULT_YOUNG = 700
CALENDAR = "/remote.php/dav/calendars/alice/bench/"
BOOK = "/remote.php/dav/addressbooks/users/alice/contacts/"
FILES = "/remote.php/dav/files/alice/"

#: A request: method, path, body, more environ keys (``HTTP_DEPTH``, ``CONTENT_TYPE`` …).
Request = tuple[str, str, bytes, dict[str, str]]


def call(app: App, request: Request, expect: str) -> bytes:
    """The body of ``request`` sent straight to ``app``; its status must start with
    ``expect``."""
    method, path, body, environ = request
    status, answer = wsgi_request(app, method, path, body, environ)
    if not status.startswith(expect):
        raise SystemExit(f"{method} {path}: {status} {answer[:300]!r}")
    return answer


def requests() -> dict[str, tuple[Request, str]]:
    """``{name: (request, expected status)}`` of the compared requests but the PUT."""
    xml = {"CONTENT_TYPE": "application/xml; charset=utf-8", "HTTP_DEPTH": "1"}
    made: dict[str, tuple[Request, str]] = {
        f"{size} {label}": (("PROPFIND", f"{FILES}f{size}/", body, xml), "207")
        for size in SIZES
        for label, body in LISTINGS.items()
    }
    sync = SYNC.format(token="").encode()
    made["calendar sync empty token"] = (("REPORT", CALENDAR, sync, xml), "207")
    made["card sync empty token"] = (("REPORT", BOOK, sync, xml), "207")
    query = CARD_QUERY.format(needle="person00042@").encode()
    made["card text-match"] = (("REPORT", BOOK, query, xml), "207")
    return made


def put_event(i: int) -> Request:
    return ("PUT", CALENDAR + name(i), event(i).encode(), {"CONTENT_TYPE": CALENDAR_TYPE})


def load_dav(app: App, events: int, cards: int) -> None:
    """The calendar and address book of ``dav_vs_xandikos``, PUT through ``app``."""
    call(app, ("MKCALENDAR", CALENDAR, MKCALENDAR.encode(), {}), "201")
    for i in range(events):
        call(app, put_event(i), "201")
    for i in range(cards):
        card = ("PUT", f"{BOOK}c{i:05d}.vcf", vcard(i).encode(), {"CONTENT_TYPE": VCARD_TYPE})
        call(app, card, "201")


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
    parser = argparse.ArgumentParser(prog="python -m bench gc_threshold")
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--decide", action="append", help='a request, e.g. "5000 named4"')
    args = parser.parse_args(argv)
    from oxidav.app import make_app
    from oxidav.process_memory import GC_YOUNG_THRESHOLD
    from oxidav.services import Services
    from oxidav.settings import load_settings

    sides = {"BEFORE": CPYTHON_DEFAULT_YOUNG, "AFTER": GC_YOUNG_THRESHOLD}
    compared = requests()
    names = [*compared, "CalDAV PUT"]
    times: dict[tuple[str, str], list[float]] = {}
    collector: dict[tuple[str, str], list[tuple[float, int]]] = {}
    kept = gc.get_threshold()
    with tempfile.TemporaryDirectory(prefix="bench-gc-") as tmp:
        env = oxidav_env(Path(tmp) / "oxidav")
        add_alice(env)
        populate_oxidav(env, list(SIZES))
        services = Services.open(load_settings(env=env))
        try:
            app = make_app(services.settings, services)
            load_dav(app, args.events, args.cards)
            for made in compared.values():
                call(app, *made)  # imports, caches and compiled statements warm
            gc.collect()
            gc.freeze()
            clock = CollectorClock()
            next_event = args.events
            for run in range(args.runs):
                order = list(sides) if run % 2 == 0 else list(reversed(sides))
                for key in names:
                    answers: set[bytes] = set()
                    for side in order:
                        gc.set_threshold(sides[side], kept[1], kept[2])
                        clock.take()
                        started = time.perf_counter()
                        if key == "CalDAV PUT":
                            call(app, put_event(next_event), "201")
                            next_event += 1
                        else:
                            answers.add(call(app, *compared[key]))
                        times.setdefault((side, key), []).append(time.perf_counter() - started)
                        collector.setdefault((side, key), []).append(clock.take())
                    if len(answers) > 1:
                        raise SystemExit(f"BEFORE and AFTER answer {key} apart")
        finally:
            gc.set_threshold(*kept)
            services.close()
    deciding = set(args.decide or [key for key in compared if key.split()[0].isdigit()])
    ok = True
    print(
        "| request | BEFORE ms | AFTER ms | AFTER/BEFORE | collector ms per request "
        "BEFORE → AFTER | collections per request BEFORE → AFTER |"
    )
    print("|---|---|---|---|---|---|")
    for key in names:
        before, after = (statistics.median(times[(side, key)]) * 1000 for side in sides)
        spent = {side: statistics.mean(c[0] for c in collector[(side, key)]) for side in sides}
        count = {side: statistics.mean(c[1] for c in collector[(side, key)]) for side in sides}
        print(
            f"| {key} | {before:.2f} | {after:.2f} | {after / before:.2f} | "
            f"{spent['BEFORE'] * 1000:.2f} → {spent['AFTER'] * 1000:.2f} | "
            f"{count['BEFORE']:.1f} → {count['AFTER']:.1f} |"
        )
        if key in deciding and not after < before:
            print(f"GATE FAIL: {key}: AFTER {after:.2f} ms is not below BEFORE {before:.2f} ms")
            ok = False
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
