"""BEFORE/AFTER gate for the cost of a small request: GET, PROPFIND and PUT of small things.

BEFORE is ``oxidav serve`` from an exported revision (``--before``, default HEAD), AFTER the
working tree (or ``--after-src``); both as a user starts them (default workers), each on its
own copy of one prepared data folder (``files_vs_apache``'s tree). Per round, in alternating
order, with 8 client processes (``serve_workers``' clients, every answer checked): GET of 2000
files of 4 KiB (requests/s), PROPFIND Depth:1 of a 500-file folder (requests/s), PUT of 2000 new
4 KiB files (files/s, read back and compared), 2000 Range GETs of 64 KiB of a 32 MiB file stored
before the round (requests/s, each answer compared with the source). Medians of ``--rounds``;
exits 1 unless AFTER beats BEFORE on every ``--decide`` figure (default: all).

    python -m bench small_requests [--rounds 3] [--before REV] [--decide "GET 4 KiB x8 req/s"]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from functools import partial
from pathlib import Path

from bench._files_servers import oxidav_server
from bench._revisions import add_gate_options, alternating, side_sources
from bench.files_vs_apache import side_copies
from bench.serve_workers import check_puts, client_pool, put_range_source, rate

FIGURES = (
    "GET 4 KiB x8 req/s",
    "PROPFIND 500 x8 req/s",
    "PUT 4 KiB x8 files/s",
    "ranges 64 KiB x8 req/s",
)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench small_requests")
    add_gate_options(parser, FIGURES)
    args = parser.parse_args(argv)
    figures: dict[str, dict[str, list[float]]] = {"BEFORE": {}, "AFTER": {}}
    with tempfile.TemporaryDirectory(prefix="bench-small-") as tmp_name:
        tmp = Path(tmp_name)
        sources = side_sources(args, tmp)
        envs = side_copies(tmp, [500])
        with client_pool() as pool:
            for n, name in alternating(args.rounds):
                with oxidav_server(envs[name], source=sources[name], name=name) as server:
                    setup = server.client()
                    setup.request("MKCOL", f"r{n}")
                    setup.close()
                    put_range_source(server)
                    runs = {
                        FIGURES[0]: partial(rate, pool, server, "get"),
                        FIGURES[1]: partial(rate, pool, server, "propfind"),
                        FIGURES[2]: partial(rate, pool, server, "put", f"r{n}"),
                        FIGURES[3]: partial(rate, pool, server, "range"),
                    }
                    for figure, run in runs.items():
                        figures[name].setdefault(figure, []).append(run())
                    check_puts(server, f"r{n}")
    ok = True
    decide = set(args.decide or FIGURES)
    print(f"{'figure':24} {'BEFORE':>10} {'AFTER':>10} {'AFTER/BEFORE':>13}")
    for figure in FIGURES:
        before = statistics.median(figures["BEFORE"][figure])
        after = statistics.median(figures["AFTER"][figure])
        if figure in decide:
            ok &= after > before
        mark = "" if figure in decide else "  (shown, not deciding)"
        print(f"{figure:24} {before:10.0f} {after:10.0f} {after / before:13.2f}{mark}")
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
