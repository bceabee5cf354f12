"""BEFORE/AFTER gate for a server's memory when it has just started (a change made for memory).

Per side and round: ``oxidav serve --init`` on a new data folder (default workers, as a user
starts it), so it migrates the new database first, as a new installation's first start and
the first start after an upgrade that brings a migration do; a few requests to
``/status.php`` (every worker answers), then the serving processes' largest VmRSS ("first
start"). Then the same folder is started again, nothing left to migrate, and measured the
same way ("later start": a worker's idle RSS). Both sides must leave the database at the same
schema revision. Exits 1 unless AFTER is lower than BEFORE by more than ``SLACK_MIB`` on every
``--decide`` figure (default both; medians over ``--rounds``).

    python -m bench start_memory [--rounds 3] [--before REV] [--decide "later start"]
"""

from __future__ import annotations

import argparse
import http.client
import sqlite3
import statistics
import tempfile
from pathlib import Path

from bench._files_servers import Server, oxidav_env, oxidav_server
from bench._revisions import add_gate_options, alternating, side_sources

#: What AFTER must save, at least, on a deciding figure (MiB).
SLACK_MIB = 2.0
FIGURES = ("first start", "later start")


def _rss_after_requests(server: Server) -> float:
    """Largest VmRSS of the serving processes after a few requests (all workers answered)."""
    for _ in range(8):  # new connections, spread over the workers by the kernel
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
        conn.request("GET", "/status.php")
        response = conn.getresponse()
        response.read()
        conn.close()
        assert response.status == 200, (server.name, response.status)
    return server.rss_kb("VmRSS") / 1024


def _revision(data: Path) -> str:
    with sqlite3.connect(data / "oxidav.db") as conn:
        row = conn.execute("SELECT version_num FROM alembic_version").fetchone()
    return str(row[0])


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench start_memory")
    add_gate_options(parser, FIGURES)
    args = parser.parse_args(argv)
    figures: dict[str, dict[str, list[float]]] = {
        side: {figure: [] for figure in FIGURES} for side in ("BEFORE", "AFTER")
    }
    revisions: dict[str, set[str]] = {"BEFORE": set(), "AFTER": set()}
    with tempfile.TemporaryDirectory(prefix="bench-first-start-") as tmp_name:
        tmp = Path(tmp_name)
        sources = side_sources(args, tmp)
        for n, side in alternating(args.rounds):
            data = tmp / f"{side}-{n}"
            env = {**oxidav_env(data), "OXIDAV_ADMIN_PASSWORD": "a long admin secret"}
            for figure, flags in (("first start", ["--init"]), ("later start", [])):
                with oxidav_server(env, sources[side], side, flags) as server:
                    figures[side][figure].append(_rss_after_requests(server))
            revisions[side].add(_revision(data))
    if revisions["BEFORE"] != revisions["AFTER"] or len(revisions["AFTER"]) != 1:
        print(f"the schema revisions differ: {revisions}")
        return 1
    print(f"{'VmRSS per worker, MiB':24} {'BEFORE':>8} {'AFTER':>8} {'AFTER-BEFORE':>13}")
    medians = {
        side: {figure: statistics.median(values) for figure, values in rows.items()}
        for side, rows in figures.items()
    }
    ok = True
    for figure in FIGURES:
        before, after = medians["BEFORE"][figure], medians["AFTER"][figure]
        deciding = figure in (args.decide or FIGURES)
        if deciding:
            ok &= after < before - SLACK_MIB
        mark = "" if deciding else "  (shown, not deciding)"
        print(f"{figure:24} {before:8.1f} {after:8.1f} {after - before:13.1f}{mark}")
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
