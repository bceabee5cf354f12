"""BEFORE/AFTER gate of ingest speed work (issue 3): HEAD's blob chain vs the working tree's.

BEFORE is the ``oxidav`` package of a git revision (default ``HEAD``; ``git archive`` into a
temporary folder, nothing in the checkout changes), AFTER the working tree (or ``--after-src``).
Every measurement runs in a fresh interpreter whose ``oxidav`` comes from one side, so both
sides run in the same benchmark run, in rotating order, on the same input:

``large``: ``--mib`` MiB of random bytes ingested (``Ingest.run`` from an unbuffered file, the
very call ``python -m bench blobs_ingest`` times) into an empty local store + SQLite; MB/s, the
CPU seconds of the ingest (all threads of the process), and per round the in-process limit
(FastCDC + BLAKE3 through ``ChunkedContent``, this process) for the ratio. Equivalence: the same
manifest hash, content hash and bytes written on both sides, and the bytes written equal the
content size.

``small``: ``--count`` distinct 4 KiB contents ingested one after another through
``BlobChain.ingest`` (a small PUT's ingest) into an empty store + SQLite; µs per ingest, wall
(mostly the two fsyncs of its chunk file and shard folder) and CPU (the process, all threads).
Equivalence: the same manifest hashes (compared through one digest of all of them).

Exits 1 unless AFTER beats BEFORE on the median of every figure, or when any answer differs.

    python -m bench blobs_ingest_gate [large|small|both] [--rounds 5] [--mib 512]
        [--count 2000] [--before REV | --before-src DIR] [--after-src DIR] [--dir /tmp]

``--before-src`` / ``--after-src`` name a folder holding an ``oxidav`` package (e.g. a copy of
the working tree with one file swapped), to compare two candidates directly.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from bench._memory import random_file
from bench._revisions import REPO, add_side_options, before_source

SMALL_SIZE = 4096

_WORKER = """
import sys
sys.path[:0] = [sys.argv[1], sys.argv[2]]
from bench.blobs_ingest_gate import worker
worker(sys.argv[3:])
"""


# -- the worker: runs in a fresh interpreter, imports oxidav from one side ---------------------


def _open_chain(work: Path) -> Any:
    from oxidav.blobs import BlobChain, LocalBlobStore
    from oxidav.db import Database
    from oxidav.db.migrate import upgrade

    db = Database.from_url(f"sqlite:///{work / 'oxidav.db'}")
    upgrade(db.engine)
    return BlobChain(db, LocalBlobStore(work / "blobs"))


def _large(work: Path, source: Path, size: int) -> dict[str, Any]:
    from oxidav.blobs.ingest import Ingest

    chain = _open_chain(work)
    run = Ingest(chain.db, chain.store)
    started, cpu = time.perf_counter(), time.process_time()
    with open(source, "rb", buffering=0) as fh:
        stored = run.run(fh, expected_length=size)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    chain.close()
    chain.db.dispose()
    return {
        "seconds": seconds,
        "cpu": cpu,
        "written": run.written_bytes,
        "manifest": stored.manifest_hash,
        "content": stored.content_hash,
    }


def _small(work: Path, count: int, seed: int) -> dict[str, Any]:
    import blake3

    chain = _open_chain(work)
    contents = [
        blake3.blake3(f"{seed}/{i}".encode()).digest(length=SMALL_SIZE) for i in range(count)
    ]
    names = blake3.blake3()
    chain.ingest([os.urandom(SMALL_SIZE)], expected_length=SMALL_SIZE)  # warm-up
    started, cpu = time.perf_counter(), time.process_time()
    for data in contents:
        stored = chain.ingest([data], expected_length=SMALL_SIZE)
        names.update(stored.manifest_hash.encode())
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    chain.close()
    chain.db.dispose()
    return {"seconds": seconds, "cpu": cpu, "manifests": names.hexdigest()}


def worker(argv: list[str]) -> None:
    import oxidav

    src = Path(sys.path[0]).resolve()
    if not Path(oxidav.__file__).resolve().is_relative_to(src):
        raise SystemExit(f"oxidav imported from {oxidav.__file__}, not from {src}")
    mode, work = argv[0], Path(argv[1])
    if mode == "large":
        result = _large(work, Path(argv[2]), int(argv[3]))
    else:
        result = _small(work, int(argv[2]), int(argv[3]))
    print(json.dumps(result))


# -- the parent: rounds, rotation, equivalence, verdict --------------------------------------


def rotated(names: list[str], round_no: int) -> Iterator[str]:
    shift = round_no % len(names)
    yield from names[shift:] + names[:shift]


def _run(src: Path, args: list[str]) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _WORKER, str(src), str(REPO), *args],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    return result


def _limit_mb_s(source: Path, size: int) -> float:
    from oxidav.blobs.chunking import ChunkedContent

    started = time.perf_counter()
    with open(source, "rb", buffering=0) as fh:
        for _chunk in ChunkedContent(fh, size):
            pass
    return size / (time.perf_counter() - started) / 1e6


def _median(values: list[float]) -> str:
    return f"median {statistics.median(values):7.0f} (range {min(values):.0f}-{max(values):.0f})"


def run_large(tmp: Path, sides: dict[str, Path], rounds: int, mib: int) -> bool:
    size = mib << 20
    source = tmp / "source.bin"
    random_file(source, size)
    _limit_mb_s(source, size)  # warm-up
    rates: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    limits: list[float] = []
    answers: set[tuple[str, str, int]] = set()
    for round_no in range(rounds):
        limits.append(_limit_mb_s(source, size))
        for name in rotated(list(sides), round_no):
            work = tmp / f"{name}{round_no}"
            work.mkdir()
            result = _run(sides[name], ["large", str(work), str(source), str(size)])
            shutil.rmtree(work)
            rates[name].append(size / result["seconds"] / 1e6)
            cpu[name].append(result["cpu"])
            answers.add((result["manifest"], result["content"], result["written"]))
    limit = statistics.median(limits)
    print(f"large: {mib} MiB random, local store + SQLite, {rounds} rounds, MB/s")
    print(f"  limit (FastCDC + BLAKE3): {_median(limits)}")
    for name, values in rates.items():
        ratio = statistics.median(values) / limit
        print(
            f"  {name:6} ingest:          {_median(values)}  ({ratio:.0%} of the limit; "
            f"CPU {statistics.median(cpu[name]):.2f} s)"
        )
    before, after = statistics.median(rates["BEFORE"]), statistics.median(rates["AFTER"])
    per_round = [a / b for a, b in zip(rates["AFTER"], rates["BEFORE"], strict=True)]
    print(
        f"  AFTER/BEFORE: {after / before:.2f} "
        f"(per round {min(per_round):.2f}-{max(per_round):.2f})"
    )
    ok = True
    if len(answers) != 1 or next(iter(answers))[2] != size:
        print(f"FAIL: answers differ or bytes written != {size}: {sorted(answers)}")
        ok = False
    if after <= before:
        print("GATE FAIL: large: AFTER does not beat BEFORE")
        ok = False
    return ok


def run_small(tmp: Path, sides: dict[str, Path], rounds: int, count: int) -> bool:
    micros: dict[str, list[float]] = {name: [] for name in sides}
    cpu: dict[str, list[float]] = {name: [] for name in sides}
    answers: set[str] = set()
    for round_no in range(rounds):
        for name in rotated(list(sides), round_no):
            work = tmp / f"small-{name}{round_no}"
            work.mkdir()
            result = _run(sides[name], ["small", str(work), str(count), str(round_no)])
            shutil.rmtree(work)
            micros[name].append(result["seconds"] / count * 1e6)
            cpu[name].append(result["cpu"] / count * 1e6)
            answers.add(f"{round_no}:{result['manifests']}")
    print(f"small: {count} distinct {SMALL_SIZE} B ingests, {rounds} rounds, µs per ingest")
    ok = True
    for figure, values in (("wall", micros), ("CPU", cpu)):
        for name in sides:
            print(f"  {name:6} {figure:4} {_median(values[name])}")
        before, after = statistics.median(values["BEFORE"]), statistics.median(values["AFTER"])
        print(f"  {figure} BEFORE/AFTER (speed-up): {before / after:.2f}")
        if after >= before:
            print(f"GATE FAIL: small: AFTER does not beat BEFORE on {figure}")
            ok = False
    if len(answers) != rounds:
        print("FAIL: BEFORE and AFTER name the small contents differently")
        ok = False
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench blobs_ingest_gate")
    parser.add_argument("workload", nargs="?", default="both", choices=["large", "small", "both"])
    add_side_options(parser)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir) as name:
        tmp = Path(name)
        before = before_source(args, tmp)
        after = REPO if args.after_src is None else args.after_src.resolve()
        sides = {"BEFORE": before, "AFTER": after}
        print(f"BEFORE: {args.before_src or args.before}; AFTER: {after}")
        print(f"load average {os.getloadavg()[0]:.1f}")
        ok = True
        if args.workload in ("large", "both"):
            ok &= run_large(tmp, sides, args.rounds, args.mib)
        if args.workload in ("small", "both"):
            ok &= run_small(tmp, sides, args.rounds, args.count)
    print(f"load average {os.getloadavg()[0]:.1f}")
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
