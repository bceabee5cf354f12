"""BEFORE/AFTER gate for CalDAV / CardDAV request costs (``dav_vs_xandikos``' workload).

BEFORE is ``oxidav serve`` from an exported revision (``--before``, default HEAD), AFTER the
working tree (or ``--after-src``), both as a user starts them, each on its own data folder,
loaded through HTTP with the same calendar of ``--events`` events and address book of
``--cards`` cards. Per round, in alternating order, the medians of ``--runs`` requests of
``dav_vs_xandikos.measure`` (sync-collection with an empty token and after 10 changes,
calendar-multiget of 100, address book sync-collection with an empty token, addressbook-query
EMAIL text-match), then the rate of ``--puts`` further single event PUTs into the full calendar
("CalDAV PUT", each must answer 201); both sides must give the same answers. Figures are
requests per second (the inverse of the median; for PUT, the rate); medians over ``--rounds``.
Exits 1 unless AFTER beats BEFORE on every figure ``--decide`` names (default: all; the others
are shown: a change to one path is not judged on paths it does not touch).

    python -m bench dav_gate [--events 1000] [--cards 1000] [--puts 200] [--rounds 3]
        [--before REV] [--decide "sync empty token"]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from pathlib import Path

from bench._revisions import add_gate_options, alternating, side_sources
from bench._vs_radicale import PASSWORD, Client
from bench.caldav_vs_radicale import put_each
from bench.dav_vs_xandikos import OX_BOOK, OX_CAL, load, measure
from tests.support.live import start_server_process


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench dav_gate")
    parser.add_argument("--events", type=int, default=1000)
    parser.add_argument("--cards", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--puts", type=int, default=200)
    add_gate_options(parser)
    args = parser.parse_args(argv)
    figures: dict[str, dict[str, list[float]]] = {"BEFORE": {}, "AFTER": {}}
    answers: dict[str, dict[str, object]] = {"BEFORE": {}, "AFTER": {}}
    with tempfile.TemporaryDirectory(prefix="bench-dav-") as tmp_name:
        tmp = Path(tmp_name)
        sources = side_sources(args, tmp)
        for n, name in alternating(args.rounds):
            data = tmp / f"{name}-{n}"
            server = start_server_process(
                ["--data-dir", str(data), "--port", "0"],
                env={"OXIDAV_ADMIN_PASSWORD": PASSWORD, "OXIDAV_LOG_LEVEL": "WARNING"},
                cwd=sources[name],
            )
            try:
                client = Client(int(server.base_url.rsplit(":", 1)[1]))
                load(client, OX_CAL, OX_BOOK, args.events, args.cards)
                results = measure(client, OX_CAL, OX_BOOK, args.events, args.runs)
                fresh = range(args.events + 2000, args.events + 2000 + args.puts)
                put_rate = put_each(client, OX_CAL, fresh)
            finally:
                server.stop()
            for figure, (median_ms, _p95, answer) in results.items():
                figures[name].setdefault(figure, []).append(1000 / median_ms)
                answers[name][figure] = answer
            figures[name].setdefault("CalDAV PUT", []).append(put_rate)
            answers[name]["CalDAV PUT"] = len(fresh)
    ok = answers["BEFORE"] == answers["AFTER"]
    print(f"{'figure (req/s)':22} {'BEFORE':>10} {'AFTER':>10} {'AFTER/BEFORE':>13}")
    for figure in figures["BEFORE"]:
        before = statistics.median(figures["BEFORE"][figure])
        after = statistics.median(figures["AFTER"][figure])
        deciding = not args.decide or figure in args.decide
        ok &= after > before or not deciding
        mark = "" if deciding else "  (shown, not deciding)"
        print(f"{figure:22} {before:10.1f} {after:10.1f} {after / before:13.2f}{mark}")
    print("same answers" if answers["BEFORE"] == answers["AFTER"] else "ANSWERS DIFFER")
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
