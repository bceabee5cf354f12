"""CalDAV and CardDAV against Xandikos (and the CalDAV PUT rate against Radicale), one run.

The DAV rows of issue 30's table. oxidav (``oxidav serve`` as a user starts it), Xandikos
(``xandikos serve --defaults``, anonymous) and Radicale 3 (no auth) run as their own processes
on 127.0.0.1. A calendar of ``--events`` events (10 % weekly series, as in
``caldav_vs_radicale``) and an address book of ``--cards`` cards (as in
``carddav_vs_radicale``) are loaded into oxidav and Xandikos with single PUTs. Then, each on
one keep-alive connection, one warm-up and ``--runs`` timed requests (median; p95 too):

- sync-collection from a token taken before 10 changes (5 modified, 3 added, 2 deleted);
- sync-collection with an empty token (every member);
- calendar-multiget of 100 objects (its p95 against its median);
- sync-collection of the address book with an empty token (every card; no target);
- addressbook-query, EMAIL text-match contains (one card);

and the rate of ``--puts`` further single event PUTs into the full calendar, on oxidav and on
Radicale. Both servers must give the same answers (the sets of changed hrefs, UIDs). The
ratios are printed against the issue's targets; the run exits 1 when one is missed.

    python -m bench dav_vs_xandikos [--events 1000] [--cards 1000] [--runs 30] [--puts 200]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from bench._calendar_data import MKCALENDAR
from bench._vs_radicale import USER, Client, free_port, side_by_side, wait_for_port
from bench.caldav_vs_radicale import (
    MULTIGET,
    SYNC,
    XML,
    change_ten,
    name,
    put_each,
    sync_answer,
)
from bench.caldav_vs_radicale import timed_with_p95 as timed
from bench.caldav_vs_radicale import uids as event_uids
from bench.carddav_vs_radicale import QUERY as CARD_QUERY
from bench.carddav_vs_radicale import uids as card_uids
from bench.carddav_vs_radicale import vcard

BIN = Path(sys.executable).parent
OX_CAL = f"/remote.php/dav/calendars/{USER}/bench/"
OX_BOOK = f"/remote.php/dav/addressbooks/users/{USER}/contacts/"
XA_CAL = "/user/calendars/bench/"
XA_BOOK = "/user/contacts/addressbook/"


@contextmanager
def xandikos(tmp: Path) -> Iterator[Client]:
    port = free_port()
    process = subprocess.Popen(
        [
            str(BIN / "xandikos"),
            "serve",
            "-d",
            str(tmp / "xandikos"),
            "--state-dir",
            str(tmp / "xandikos-state"),
            "--defaults",
            "-l",
            "127.0.0.1",
            "-p",
            str(port),
            "--no-detect-systemd",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ},
    )
    try:
        wait_for_port(port, process)
        yield Client(port)
    finally:
        process.terminate()
        process.wait(timeout=30)


def load(client: Client, calendar: str, book: str, events: int, cards: int) -> None:
    status, data = client.request("MKCALENDAR", calendar, MKCALENDAR, XML)
    if status != 201:
        raise SystemExit(f"MKCALENDAR {calendar} answered {status}: {data[:300]!r}")
    put_each(client, calendar, range(events))
    for i in range(cards):
        status, data = client.request(
            "PUT", f"{book}c{i:05d}.vcf", vcard(i), {"Content-Type": "text/vcard; charset=utf-8"}
        )
        if status != 201:
            raise SystemExit(f"PUT {book} answered {status}: {data[:300]!r}")


def measure(
    client: Client, calendar: str, book: str, events: int, runs: int
) -> dict[str, tuple[float, float, object]]:
    results: dict[str, tuple[float, float, object]] = {}
    changed_only: Callable[[bytes], object] = lambda body: sync_answer(body)[0]  # noqa: E731
    results["sync empty token"] = timed(client, calendar, SYNC.format(token=""), runs, changed_only)
    _status, data = client.request("REPORT", calendar, SYNC.format(token=""), {**XML, "Depth": "1"})
    token = sync_answer(data)[1]
    change_ten(client, calendar, events + 1000)
    results["sync 10 changes"] = timed(
        client, calendar, SYNC.format(token=token), runs, changed_only
    )
    step = max(1, events // 100)
    hrefs = "".join(f"<D:href>{calendar}{name(i)}</D:href>" for i in range(0, events, step))
    results["multiget 100"] = timed(
        client, calendar, MULTIGET.format(hrefs=hrefs), runs, event_uids
    )
    results["card sync empty token"] = timed(
        client, book, SYNC.format(token=""), runs, changed_only
    )
    results["card text-match"] = timed(
        client, book, CARD_QUERY.format(needle="person00042@"), runs, card_uids
    )
    return results


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench dav_vs_xandikos")
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--puts", type=int, default=200)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        with side_by_side(tmp) as (ox, rad), xandikos(tmp) as xa:
            load(ox, OX_CAL, OX_BOOK, args.events, args.cards)
            load(xa, XA_CAL, XA_BOOK, args.events, args.cards)
            status, _ = rad.request("MKCALENDAR", f"/{USER}/bench/", MKCALENDAR, XML)
            assert status == 201
            extra = range(args.events, args.events + args.puts)
            # Each PUT series starts with nothing dirty: the loads' writeback (Xandikos commits
            # every item to git) must not be charged to the syncs of whichever series runs next.
            os.sync()
            ox_rate = put_each(ox, OX_CAL, extra)
            os.sync()
            rad_rate = put_each(rad, f"/{USER}/bench/", extra)
            put_each(xa, XA_CAL, extra)  # the same calendar on both (not a compared figure)
            total = args.events + args.puts
            ours = measure(ox, OX_CAL, OX_BOOK, total, args.runs)
            theirs = measure(xa, XA_CAL, XA_BOOK, total, args.runs)
    ok = True
    print(f"{'figure':22} {'oxidav ms':>10} {'p95':>7} {'xandikos':>10} {'p95':>7} {'ratio':>6}")
    targets = {"sync 10 changes": 0.2, "sync empty token": 0.5, "card text-match": 0.2}
    for figure, (median, p95, answer) in ours.items():
        peer_median, peer_p95, peer_answer = theirs[figure]
        same = answer == peer_answer
        ratio = median / peer_median
        verdict = ""
        if figure in targets:
            met = ratio <= targets[figure]
            verdict = f"<= {targets[figure]}: {'met' if met else 'MISSED'}"
            ok &= met
        if figure == "multiget 100":
            met = p95 <= 2 * median
            verdict = f"p95 <= 2x median: {'met' if met else 'MISSED'}"
            ok &= met
        ok &= same
        print(
            f"{figure:22} {median:10.2f} {p95:7.2f} {peer_median:10.2f} {peer_p95:7.2f} "
            f"{ratio:6.2f}  {verdict}{'' if same else '  ANSWERS DIFFER'}"
        )
        if not same and isinstance(answer, list) and isinstance(peer_answer, list):
            only_ours = sorted(set(answer) - set(peer_answer))
            only_theirs = sorted(set(peer_answer) - set(answer))
            print(
                f"    oxidav {len(answer)}, Xandikos {len(peer_answer)}; only oxidav: "
                f"{only_ours[:3]}, only Xandikos: {only_theirs[:3]}"
            )
    met = ox_rate >= 20 * rad_rate
    ok &= met
    print(
        f"CalDAV PUT into {args.events} events: oxidav {ox_rate:.0f}/s, Radicale "
        f"{rad_rate:.1f}/s, {ox_rate / rad_rate:.1f}x (>= 20x: {'met' if met else 'MISSED'})"
    )
    return 0 if ok else 1
