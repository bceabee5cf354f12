"""CalDAV on one calendar of 5,000 events (10 % recurring): oxidav against Radicale, one run.

Both servers run as their own processes on 127.0.0.1 and hold the same events, each named
``<UID>.ics``. oxidav receives them as single PUTs; Radicale as one collection PUT (its
per-item PUT checks the UID against every item, so 5,000 single PUTs take it many minutes).
The PUT rate compared is that of ``--puts`` further single PUTs into the full calendar, on
both. Then, on one keep-alive connection each, one warm-up and ``--runs`` timed requests
(medians compared) of:

- calendar-query with a one-week time range (getetag + calendar-data);
- calendar-multiget of 100 objects (getetag + calendar-data);
- sync-collection from a token taken before 10 changes (5 modified, 3 added, 2 deleted).

Both must give the same answers (the set of UIDs of the query and multiget, the set of changed
hrefs of the sync); the run exits non-zero on a mismatch or unless oxidav is faster. The issue's
targets (query and sync >= 10x faster, PUT rate >= Radicale's) are reported; ``--strict``
makes missing them an error.

    python -m bench caldav_vs_radicale [--events 5000] [--runs 20] [--database-url URL]
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from lxml import etree

from bench._calendar_data import CAL, MKCALENDAR, event
from bench._vs_radicale import USER, Client, side_by_side

WEEK = ("20260601T000000Z", "20260608T000000Z")
QUERY = (
    '<?xml version="1.0" encoding="utf-8"?>'
    f'<C:calendar-query xmlns:D="DAV:" xmlns:C="{CAL}">'
    "<D:prop><D:getetag/><C:calendar-data/></D:prop>"
    '<C:filter><C:comp-filter name="VCALENDAR"><C:comp-filter name="VEVENT">'
    '<C:time-range start="{start}" end="{end}"/>'
    "</C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"
)
MULTIGET = (
    '<?xml version="1.0" encoding="utf-8"?>'
    f'<C:calendar-multiget xmlns:D="DAV:" xmlns:C="{CAL}">'
    "<D:prop><D:getetag/><C:calendar-data/></D:prop>{hrefs}</C:calendar-multiget>"
)
SYNC = (
    '<?xml version="1.0" encoding="utf-8"?>'
    '<D:sync-collection xmlns:D="DAV:"><D:sync-token>{token}</D:sync-token>'
    "<D:sync-level>1</D:sync-level><D:prop><D:getetag/></D:prop></D:sync-collection>"
)
XML = {"Content-Type": "application/xml; charset=utf-8"}
CALENDAR = {"Content-Type": "text/calendar; charset=utf-8"}


def uids(body: bytes) -> list[str]:
    root = etree.fromstring(body)
    found = []
    for data in root.iter(f"{{{CAL}}}calendar-data"):
        match = re.search(r"^UID:(.*?)\r?$", data.text or "", re.MULTILINE)
        if match:
            found.append(match.group(1))
    return sorted(found)


def sync_answer(body: bytes) -> tuple[list[str], str]:
    root = etree.fromstring(body)
    changed = sorted(
        (h.text or "").rsplit("/", 1)[1]
        for h in root.iterfind("{DAV:}response/{DAV:}href")
        if not (h.text or "").endswith("/")
    )
    return changed, root.findtext("{DAV:}sync-token") or ""


def timed_with_p95(
    client: Client, path: str, body: str, runs: int, answer: Callable[[bytes], object]
) -> tuple[float, float, object]:
    """(median ms, p95 ms, the answer) of ``runs`` REPORTs after one warm-up; the answer
    must not change."""
    headers = {**XML, "Depth": "1"}
    status, data = client.request("REPORT", path, body, headers)
    if status != 207:
        raise SystemExit(f"REPORT on {path} answered {status}: {data[:300]!r}")
    expected = answer(data)
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        status, data = client.request("REPORT", path, body, headers)
        times.append((time.perf_counter() - started) * 1000)
        if status != 207 or answer(data) != expected:
            raise SystemExit(f"REPORT on {path} changed its answer")
    times.sort()
    return statistics.median(times), times[min(len(times) - 1, int(len(times) * 0.95))], expected


def timed(
    client: Client, path: str, body: str, runs: int, answer: Callable[[bytes], object]
) -> tuple[float, object]:
    median, _p95, expected = timed_with_p95(client, path, body, runs, answer)
    return median, expected


def name(i: int) -> str:
    return f"bench-{i:05d}.ics"


def put_each(client: Client, collection: str, numbers: range) -> float:
    """Single PUTs of events ``numbers``; returns PUTs per second."""
    started = time.perf_counter()
    for i in numbers:
        status, data = client.request(
            "PUT", collection + name(i), event(i), {"Content-Type": "text/calendar"}
        )
        if status != 201:
            raise SystemExit(f"PUT on {collection} answered {status}: {data[:300]!r}")
    return len(numbers) / (time.perf_counter() - started)


def put_collection(client: Client, collection: str, events: int) -> None:
    """Radicale's bulk import: one PUT of a VCALENDAR holding every event."""
    bodies = [event(i).split("BEGIN:VEVENT", 1)[1].split("END:VEVENT", 1)[0] for i in range(events)]
    text = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//oxidav bench//EN\r\n"
    text += "".join(f"BEGIN:VEVENT{body}END:VEVENT\r\n" for body in bodies)
    text += "END:VCALENDAR\r\n"
    status, data = client.request("PUT", collection, text, {"Content-Type": "text/calendar"})
    if status not in (201, 204):
        raise SystemExit(f"collection PUT on {collection} answered {status}: {data[:300]!r}")


def change_ten(client: Client, collection: str, events: int) -> None:
    """5 modified, 3 added, 2 deleted."""
    for i in [*range(0, 35, 7), *range(events, events + 3)]:
        changed = event(i, "changed")
        status, _ = client.request("PUT", collection + name(i), changed, CALENDAR)
        if status not in (201, 204):
            raise SystemExit(f"PUT on {collection} answered {status}")
    for i in (11, 13):
        status, _ = client.request("DELETE", collection + name(i))
        if status not in (200, 204):
            raise SystemExit(f"DELETE on {collection} answered {status}")


def measure(
    client: Client, collection: str, events: int, runs: int
) -> dict[str, tuple[float, object]]:
    results: dict[str, tuple[float, object]] = {}
    results["query"] = timed(
        client, collection, QUERY.format(start=WEEK[0], end=WEEK[1]), runs, uids
    )
    step = max(1, events // 100)
    hrefs = "".join(f"<D:href>{collection}{name(i)}</D:href>" for i in range(0, events, step))
    results["multiget"] = timed(client, collection, MULTIGET.format(hrefs=hrefs), runs, uids)
    status, data = client.request(
        "REPORT", collection, SYNC.format(token=""), {**XML, "Depth": "1"}
    )
    if status != 207:
        raise SystemExit(f"sync-collection on {collection} answered {status}")
    token = sync_answer(data)[1]
    change_ten(client, collection, events + 1000)
    results["sync"] = timed(
        client, collection, SYNC.format(token=token), runs, lambda b: sync_answer(b)[0]
    )
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench caldav_vs_radicale")
    parser.add_argument("--events", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--puts", type=int, default=200, help="single PUTs timed on both")
    parser.add_argument("--database-url", default="", help="oxidav database (default SQLite)")
    parser.add_argument("--target", type=float, default=10.0)
    parser.add_argument("--strict", action="store_true", help="fail unless the targets are met")
    args = parser.parse_args(argv)
    with (
        tempfile.TemporaryDirectory() as tmp,
        side_by_side(Path(tmp), args.database_url) as (ox, rad),
    ):
        ox_path = f"/remote.php/dav/calendars/{USER}/bench/"
        rad_path = f"/{USER}/bench/"
        for client, path in ((ox, ox_path), (rad, rad_path)):
            status, data = client.request("MKCALENDAR", path, MKCALENDAR, XML)
            if status != 201:
                raise SystemExit(f"MKCALENDAR {path} answered {status}: {data[:300]!r}")
        load_rate = put_each(ox, ox_path, range(args.events))
        started = time.perf_counter()
        put_collection(rad, rad_path, args.events)
        rad_load = time.perf_counter() - started
        extra = range(args.events, args.events + args.puts)
        ox_rate = put_each(ox, ox_path, extra)
        rad_rate = put_each(rad, rad_path, extra)
        print(
            f"events: {args.events} (10 % weekly series); oxidav loaded them with single "
            f"PUTs at {load_rate:.0f}/s, Radicale with one collection PUT in {rad_load:.1f} s"
        )
        print(
            f"PUT rate, {args.puts} more single PUTs into the full calendar: "
            f"oxidav {ox_rate:.0f}/s, Radicale {rad_rate:.0f}/s"
        )
        total = args.events + args.puts
        ox_results = measure(ox, ox_path, total, args.runs)
        rad_results = measure(rad, rad_path, total, args.runs)
        ok = True
        met = ox_rate >= rad_rate
        for name, label in (
            ("query", "calendar-query (1 week)"),
            ("multiget", "calendar-multiget (100)"),
            ("sync", "sync-collection (10 changes)"),
        ):
            ox_ms, ox_answer = ox_results[name]
            rad_ms, rad_answer = rad_results[name]
            same = ox_answer == rad_answer
            ratio = rad_ms / ox_ms
            count = len(ox_answer) if isinstance(ox_answer, list) else 0
            print(
                f"{label:30s} results {count:4d}  oxidav {ox_ms:8.1f} ms  "
                f"Radicale {rad_ms:8.1f} ms  speed-up {ratio:6.1f}x  "
                f"{'same answers' if same else 'ANSWERS DIFFER'}"
            )
            ok = ok and same and ratio > 1
            if name in ("query", "sync"):
                met = met and ratio >= args.target
        print(
            f"targets (query, sync >= {args.target:.0f}x; PUT rate >= Radicale): "
            f"{'met' if met else 'NOT met'}"
        )
        ok = ok and (met or not args.strict)
        print("PASS" if ok else "FAIL")
        return 0 if ok else 1
