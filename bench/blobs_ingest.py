"""Ingest throughput and memory of the blob chain on a local store (SQLite).

1. The in-process limit: the same file through FastCDC + BLAKE3 (per chunk and whole) only —
   the very ``ChunkedContent`` an ingest runs, single-threaded BLAKE3 on both sides; and, for
   context, the store alone: as many chunk files of the same sizes written and fsynced, with no
   chunking and no database (on a slow disk this, not CDC, is the ceiling), and the same bytes
   written and fsynced as ONE file (what the disk does without a file per chunk).
2. Ingest of the file into an empty store: MB/s (sync sweeps and the manifest commit
   included), peak RSS growth during the ingest (VmHWM reset first), and ingest / limit.
3. Re-ingest of the same file: new bytes written must be 0; its time.

Each round measures limit, store alone, one file and ingest back to back (the machine is shared,
so its load drifts); figures are medians over ``--rounds``, with the range. The run fails unless
the median ingest reaches ``--target`` (default 50%) of the median limit, RSS growth stays under
``--max-rss-mib`` and the re-ingest writes nothing.

    python -m bench blobs_ingest [--mib 512] [--dir /tmp] [--target 0.5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import blake3

from bench._memory import random_file, reset_peak, status_kib
from oxidav.blobs import BlobChain, LocalBlobStore
from oxidav.blobs.chunking import ChunkedContent
from oxidav.blobs.ingest import Ingest
from oxidav.db import Database
from oxidav.db.migrate import upgrade


def limit_mb_s(path: Path, size: int) -> tuple[float, str, list[int]]:
    """FastCDC + BLAKE3 (per chunk and whole content) alone, reading the same file: exactly
    the chunking stage of an ingest, without the database and the store."""
    sizes = []
    started = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        content = ChunkedContent(fh, size)
        for chunk in content:
            sizes.append(len(chunk.data))
    elapsed = time.perf_counter() - started
    return size / elapsed / 1e6, content.content_hash, sizes


def store_ceiling_mb_s(root: Path, sizes: list[int]) -> float:
    """The store alone: the same number and sizes of chunk files written (two threads, as the
    ingest does) and fsynced in one sweep, with no chunking and no database."""
    store = LocalBlobStore(root)
    buffer = os.urandom(max(sizes))
    keys = [blake3.blake3(i.to_bytes(8, "big")).hexdigest() for i in range(len(sizes))]
    started = time.perf_counter()
    with ThreadPoolExecutor(2) as pool:
        list(pool.map(lambda k, n: store.put_unsynced(k, buffer[:n]), keys, sizes))
    store.sync(keys)
    elapsed = time.perf_counter() - started
    store.close()
    shutil.rmtree(root)
    return sum(sizes) / elapsed / 1e6


def one_file_mb_s(root: Path, sizes: list[int]) -> float:
    """The same bytes, in the same write sizes, appended to one file and fsynced: the disk's
    byte rate without a file (an inode and a directory entry) per chunk."""
    root.mkdir()
    buffer = os.urandom(max(sizes))
    started = time.perf_counter()
    fd = os.open(root / "one", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    try:
        for n in sizes:
            view = memoryview(buffer)[:n]
            while view:
                view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - started
    shutil.rmtree(root)
    return sum(sizes) / elapsed / 1e6


def _median(values: list[float]) -> str:
    return f"median {statistics.median(values):5.0f} (range {min(values):.0f}-{max(values):.0f})"


def ingest_run(chain: BlobChain, path: Path, size: int) -> tuple[float, int, int, str]:
    """(seconds, new bytes written, peak RSS growth in KiB, manifest hash)."""
    reset_peak()
    base = status_kib("VmRSS")
    run = Ingest(chain.db, chain.store)
    started = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        stored = run.run(fh, expected_length=size)
    elapsed = time.perf_counter() - started
    return elapsed, run.written_bytes, status_kib("VmHWM") - base, stored.manifest_hash


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench blobs_ingest")
    parser.add_argument("--mib", type=int, default=512, help="content size (default 512 MiB)")
    parser.add_argument("--dir", type=Path, default=None, help="where the store goes")
    parser.add_argument("--target", type=float, default=0.5, help="ingest / limit to reach")
    parser.add_argument("--max-rss-mib", type=float, default=128.0)
    parser.add_argument("--rounds", type=int, default=3, help="rounds; medians are reported")
    args = parser.parse_args(argv)
    size = args.mib << 20
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        source = root / "source.bin"
        random_file(source, size)
        _limit, content_hash, sizes = limit_mb_s(source, size)  # warm-up, and the chunk sizes
        limits: list[float] = []
        ceilings: list[float] = []
        one_files: list[float] = []
        runs = []
        for i in range(args.rounds):
            # One round = each measurement once, back to back; every ingest round starts from
            # an empty store and database.
            limits.append(limit_mb_s(source, size)[0])
            ceilings.append(store_ceiling_mb_s(root / f"ceiling{i}", sizes))
            one_files.append(one_file_mb_s(root / f"one{i}", sizes))
            db = Database.from_url(f"sqlite:///{root / f'oxidav{i}.db'}")
            upgrade(db.engine)
            chain = BlobChain(db, LocalBlobStore(root / f"blobs{i}"))
            runs.append(ingest_run(chain, source, size))
            if chain.stat(runs[-1][3]).content_hash != content_hash:
                print("FAIL: ingest and limit disagree on the content hash")
                return 1
            if i < args.rounds - 1:
                chain.close()
                db.dispose()
                shutil.rmtree(root / f"blobs{i}")
        ingests = [size / run[0] / 1e6 for run in runs]
        manifest = runs[0][3]
        rss_kib = runs[0][2]  # the first run: the only one starting from a fresh heap
        written = min(run[1] for run in runs)
        again, rewritten, rss2_kib, manifest2 = ingest_run(chain, source, size)
        with chain.open(manifest) as reader:
            check = blake3.blake3()
            for piece in reader.iter_range(0, size, 1 << 20):
                check.update(piece)
        chain.close()
        db.dispose()

    limit = statistics.median(limits)
    ingest = statistics.median(ingests)
    ceiling = statistics.median(ceilings)
    ratio = ingest / limit
    ratios = [i / lim for i, lim in zip(ingests, limits, strict=True)]
    print(f"content: {args.mib} MiB of random bytes, local store + SQLite in {tmp}")
    print(f"{args.rounds} rounds, MB/s; load average {os.getloadavg()[0]:.1f}")
    print(f"limit (FastCDC + BLAKE3 only):  {_median(limits)}")
    print(
        f"ingest:                         {_median(ingests)}  ({written / 1e6:.0f} MB written, "
        f"peak RSS +{rss_kib / 1024:.1f} MiB in the first run)"
    )
    print(f"store alone (write + fsync):    {_median(ceilings)}  ({len(sizes)} chunk files)")
    print(f"same bytes as one file + fsync: {_median(one_files)}")
    print(
        f"ingest / limit:                 {ratio:8.0%}  (per round "
        f"{min(ratios):.0%}-{max(ratios):.0%}; target {args.target:.0%})"
    )
    print(f"ingest / min(limit, store):     {ingest / min(limit, ceiling):8.0%}")
    print(
        f"re-ingest:                      {size / again / 1e6:8.0f} MB/s  ({again:.2f} s, "
        f"{rewritten} new bytes written, peak RSS +{rss2_kib / 1024:.1f} MiB)"
    )
    failures = []
    if manifest2 != manifest or check.hexdigest() != content_hash:
        failures.append("re-ingest or read-back differs")
    if written != size or any(run[1] != size for run in runs):
        failures.append(f"an ingest wrote {written} bytes, expected {size}")
    if rewritten != 0:
        failures.append("re-ingest wrote bytes")
    if ratio < args.target:
        failures.append(f"ingest reached {ratio:.0%} of the limit, target {args.target:.0%}")
    if max(rss_kib, rss2_kib) / 1024 > args.max_rss_mib:
        failures.append(f"RSS grew by more than {args.max_rss_mib} MiB")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0
