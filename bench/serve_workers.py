"""BEFORE/AFTER gate of ``oxidav serve --workers``: one process (BEFORE) against one per CPU.

Both servers are ``oxidav serve`` of the working tree on their own copies of one prepared
data folder (``files_vs_apache``'s tree: 2000 files of 4 KiB among others), BEFORE with
``--workers 1``, AFTER with ``--workers N`` (default: the CPU count, as a user starts it).
Per round, in alternating order: GET of the 2000 files with 8 clients (requests/s, each body
checked), PUT of 2000 new 4 KiB files with 8 clients (files/s, read back and compared), and
PROPFIND Depth:1 of a 500-file folder (named props) with 8 clients (requests/s). The clients
are processes of their own (``--client-procs``), so the client's GIL is not what is measured.
Medians of ``--rounds``; exits 1 unless AFTER beats BEFORE on every figure.

    python -m bench serve_workers [--rounds 3] [--workers N]
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import os
import random
import shutil
import statistics
import tempfile
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from multiprocessing.synchronize import Barrier
from pathlib import Path

import blake3

from bench._files_servers import Server, add_alice, oxidav_env, oxidav_server
from bench._revisions import alternating
from bench.files_propfind import BODIES, listing
from bench.files_put import content
from bench.files_vs_apache import CLIENTS, GET_FILES, RANGE, populate_oxidav, small

#: The file the ``range`` job reads 64 KiB ranges of (``put_range_source`` stores it).
RANGE_SOURCE = "ranges.bin"
RANGE_SOURCE_BYTES = 32 * 1024 * 1024


@functools.cache
def range_source() -> bytes:
    """The ``range`` job's file: 32 MiB that do not repeat (BLAKE3's output of a seed)."""
    return blake3.blake3(b"ranges").digest(length=RANGE_SOURCE_BYTES)


@functools.cache
def range_offsets() -> list[int]:
    """Where each of the ``range`` job's 64 KiB ranges starts (the same in every run and client
    process; drawn once, outside the timed requests)."""
    rng = random.Random(RANGE_SOURCE_BYTES)
    return [rng.randrange(0, RANGE_SOURCE_BYTES - RANGE) for _ in range(GET_FILES)]


def _prepare_client(ready: Barrier) -> None:
    """A client process's start: the ``range`` job's source and offsets, then ``ready``."""
    range_source()
    range_offsets()
    ready.wait()


def client_pool() -> ProcessPoolExecutor:
    """The ``CLIENTS`` client processes, started and ready before any figure is timed: each
    makes the ``range`` job's source and offsets as it starts (32 MiB of BLAKE3 output), and
    the pool is handed back once all of them have. (A pool starts its processes at its first
    task: that, and the source, fell inside the first round's timed figures.)"""
    context = multiprocessing.get_context("fork")  # fork starts every process at the first task
    ready = context.Barrier(CLIENTS + 1)
    pool = ProcessPoolExecutor(
        CLIENTS, mp_context=context, initializer=_prepare_client, initargs=(ready,)
    )
    started = pool.submit(int)
    ready.wait()
    started.result()
    return pool


def put_range_source(server: Server) -> None:
    """Store ``range_source()`` as ``RANGE_SOURCE`` on ``server`` (before a ``range`` job)."""
    client = server.client()
    status, _, _ = client.request("PUT", RANGE_SOURCE, range_source())
    client.close()
    if status not in (201, 204):
        raise SystemExit(f"{server.name}: PUT {RANGE_SOURCE} answered {status}")


def _client_run(port: int, base: str, auth: str, job: str, c: int, run: str) -> int:
    """One client process's share of ``job``; returns the requests it made."""
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    made = 0
    headers = {"Authorization": auth}
    for i in range(c, GET_FILES, CLIENTS):
        if job == "get":
            conn.request("GET", f"{base}get/g{i:04d}.bin", headers=headers)
            response = conn.getresponse()
            if response.status != 200 or response.read() != small(i):
                raise SystemExit(f"GET g{i}: {response.status}")
        elif job == "range":
            first = range_offsets()[i]
            wanted = {**headers, "Range": f"bytes={first}-{first + RANGE - 1}"}
            conn.request("GET", f"{base}{RANGE_SOURCE}", headers=wanted)
            response = conn.getresponse()
            if response.status != 206 or response.read() != range_source()[first : first + RANGE]:
                raise SystemExit(f"Range GET at {first}: {response.status} or other bytes")
        elif job == "put":
            conn.request("PUT", f"{base}{run}/f{i}.bin", body=content(i, run), headers=headers)
            response = conn.getresponse()
            response.read()
            if response.status != 201:
                raise SystemExit(f"PUT f{i}: {response.status}")
        else:
            if i >= 400:  # 400 listings per round in all
                break
            conn.request(
                "PROPFIND",
                f"{base}f500/",
                body=BODIES["named4"],
                headers={**headers, "Depth": "1", "Content-Type": "application/xml"},
            )
            response = conn.getresponse()
            if response.status != 207 or len(listing(response.read())) != 501:
                raise SystemExit("PROPFIND f500: wrong answer")
        made += 1
    conn.close()
    return made


def rate(pool: ProcessPoolExecutor, server: Server, job: str, run: str = "") -> float:
    import time

    assert server.auth is not None
    started = time.perf_counter()
    futures = [
        pool.submit(_client_run, server.port, server.base, server.auth, job, c, run)
        for c in range(CLIENTS)
    ]
    made = sum(f.result() for f in futures)
    return made / (time.perf_counter() - started)


def check_puts(server: Server, run: str) -> None:
    client = server.client()
    for i in range(GET_FILES):
        status, body, _ = client.request("GET", f"{run}/f{i}.bin")
        if status != 200 or body != content(i, run):
            raise SystemExit(f"{server.name}: {run}/f{i}.bin differs")
    client.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench serve_workers")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--workers", type=int, default=0, help="AFTER's workers (0: per CPU)")
    args = parser.parse_args(argv)
    figures: dict[str, dict[str, list[float]]] = {"BEFORE": {}, "AFTER": {}}
    with tempfile.TemporaryDirectory(prefix="bench-workers-") as tmp_name:
        tmp = Path(tmp_name)
        template = oxidav_env(tmp / "template")
        add_alice(template)
        populate_oxidav(template, [500])
        envs: dict[str, dict[str, str]] = {}
        for name, workers in (("BEFORE", 1), ("AFTER", args.workers)):
            shutil.copytree(tmp / "template", tmp / name)
            envs[name] = {**oxidav_env(tmp / name), "OXIDAV_WORKERS": str(workers)}
        jobs: dict[str, Callable[[ProcessPoolExecutor, Server, int], float]] = {
            "GET 4 KiB x8 req/s": lambda pool, server, n: rate(pool, server, "get"),
            "PUT 4 KiB x8 files/s": lambda pool, server, n: rate(pool, server, "put", f"r{n}"),
            "PROPFIND 500 x8 req/s": lambda pool, server, n: rate(pool, server, "propfind"),
        }
        with client_pool() as pool:
            for n, name in alternating(args.rounds):
                with oxidav_server(envs[name], name=name) as server:
                    setup = server.client()
                    setup.request("MKCOL", f"r{n}")
                    setup.close()
                    for figure, job in jobs.items():
                        figures[name].setdefault(figure, []).append(job(pool, server, n))
                    check_puts(server, f"r{n}")
    ok = True
    print(f"cores: {os.cpu_count()}; AFTER: --workers {args.workers or 'per CPU'}")
    print(f"{'figure':24} {'BEFORE':>10} {'AFTER':>10} {'AFTER/BEFORE':>13}")
    for figure in figures["BEFORE"]:
        before = statistics.median(figures["BEFORE"][figure])
        after = statistics.median(figures["AFTER"][figure])
        ok &= after > before
        print(f"{figure:24} {before:10.0f} {after:10.0f} {after / before:13.2f}")
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
