"""BEFORE/AFTER gate of how ``oxidav serve``'s workers share eight keep-alive connections.

Both sides are ``oxidav serve`` as a user starts it (default workers: one per CPU), from their
revisions (``--before``, default HEAD; AFTER the working tree or ``--after-src``), on copies of
one prepared data folder (``files_vs_apache``'s tree). Each run opens eight client
connections at once (``serve_workers``' client processes) and GETs the 2000 files of 4 KiB over
them (every body checked); while it runs, the kernel says which worker holds each connection
(``/proc``: the worker holding the server end of its socket). Per side: how the connections
split in each run, the share of runs split evenly and the median rate. ``--runs`` runs per side
and round, the sides alternating over ``--rounds``. Exits 1 unless AFTER splits evenly more
often than BEFORE and its median rate is higher.

    python -m bench connection_split [--rounds 3] [--runs 8] [--before REV] [--after-src DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import threading
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from bench._files_servers import Server, oxidav_server
from bench._revisions import add_gate_options, alternating, side_sources
from bench.files_vs_apache import CLIENTS, side_copies
from bench.serve_workers import rate


def _established_inodes(port: int) -> set[str]:
    """Inodes of the server ends of established connections to ``port`` (/proc/net/tcp)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                found.add(fields[9])
    return found


def _held_by(pid: int, inodes: set[str]) -> int:
    held = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            held += 1
    return held


def split(server: Server) -> tuple[int, ...]:
    """Connections per worker, most first."""
    inodes = _established_inodes(server.port)
    return tuple(sorted((_held_by(pid, inodes) for pid in server.serving_pids()), reverse=True))


def measured_run(pool: ProcessPoolExecutor, server: Server) -> tuple[float, tuple[int, ...]]:
    """One GET run's rate and the split most often seen while all its connections were open."""
    seen: list[tuple[int, ...]] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.005):
            found = split(server)
            if sum(found) == CLIENTS:
                seen.append(found)

    watcher = threading.Thread(target=watch)
    watcher.start()
    try:
        made = rate(pool, server, "get")
    finally:
        done.set()
        watcher.join()
    return made, Counter(seen).most_common(1)[0][0] if seen else ()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench connection_split")
    add_gate_options(parser)
    parser.add_argument("--runs", type=int, default=8, help="GET runs per side and round")
    args = parser.parse_args(argv)
    rates: dict[str, list[float]] = {"BEFORE": [], "AFTER": []}
    splits: dict[str, Counter[tuple[int, ...]]] = {"BEFORE": Counter(), "AFTER": Counter()}
    with tempfile.TemporaryDirectory(prefix="bench-split-") as tmp_name:
        tmp = Path(tmp_name)
        sources = side_sources(args, tmp)
        envs = side_copies(tmp, [])
        with ProcessPoolExecutor(CLIENTS) as pool:
            for _n, name in alternating(args.rounds):
                with oxidav_server(envs[name], source=sources[name], name=name) as server:
                    rate(pool, server, "get")  # warm-up: the pool's processes, the caches
                    for _ in range(args.runs):
                        made, found = measured_run(pool, server)
                        rates[name].append(made)
                        splits[name][found] += 1
    even = {}
    for name in ("BEFORE", "AFTER"):
        runs = sum(splits[name].values())
        even[name] = sum(n for s, n in splits[name].items() if s and max(s) - min(s) <= 1) / runs
        shown = ", ".join(
            f"{'-'.join(map(str, s)) or 'unseen'}: {n}" for s, n in splits[name].most_common()
        )
        print(f"{name}: splits {shown}; evenly {even[name]:.0%}")
    before, after = statistics.median(rates["BEFORE"]), statistics.median(rates["AFTER"])
    print(
        f"GET 4 KiB x8 req/s (median of runs): BEFORE {before:.0f}  AFTER {after:.0f}  "
        f"AFTER/BEFORE {after / before:.2f}"
    )
    ok = even["AFTER"] > even["BEFORE"] and after > before
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
