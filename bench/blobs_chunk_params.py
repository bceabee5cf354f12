"""FastCDC parameter sets compared in one run: ingest speed on the store's disk against dedup cost.

For each parameter set (min/avg/max; pyfastcdc's mean chunk is about avg + min):

1. Ingest of ``--mib`` random bytes from a file into a fresh local store + SQLite, and the limit
   (the same file through ``ChunkedContent`` with the same parameters: FastCDC + BLAKE3 only),
   back to back in each round; the sets run in a rotating order, figures are medians over
   ``--rounds``. Reported: ingest MB/s, ingest / limit, chunk files written, peak RSS growth.
2. Dedup cost on ``--dedup-mib`` random bytes: the bytes an ingest of the edited content would
   write on top of the original (chunks whose BLAKE3 the original does not have), after
   (a) a 1-byte insert near the start, (b) a 1-byte change in the middle, (c) 1 MiB appended.
   Deterministic: computed from the chunk lists, with no store in between.
3. Peak RSS growth of one ingest per set, each in a fresh interpreter.

Every ingest must read back to the limit's content hash and write exactly ``--mib`` bytes.
Exits 1 unless the ``--choose`` set (default: the defaults in ``oxidav.blobs.chunking``) reaches
``--target`` of its limit and its dedup cost per edit stays within 2 chunks of ``max`` each.

    python -m bench blobs_chunk_params [--mib 512] [--dir /tmp] [--rounds 3]
        [--sets 64K/256K/1M,128K/512K/2M,256K/1M/4M] [--dedup-mib 64] [--target 0.5]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bench._memory import random_file, reset_peak, status_kib
from oxidav.blobs import LocalBlobStore
from oxidav.blobs.chunking import DEFAULT_CHUNK_PARAMS, ChunkedContent, ChunkParams, chunk_bytes
from oxidav.blobs.ingest import Ingest
from oxidav.db import Database
from oxidav.db.migrate import upgrade

SETS = "64K/256K/1M,128K/512K/2M,256K/1M/4M"
EDITS = ("insert 1 byte at 1000", "change 1 byte in the middle", "append 1 MiB")


def parse_size(text: str) -> int:
    units = {"K": 10, "M": 20}
    text = text.strip().upper()
    if text[-1:] in units:
        return int(text[:-1]) << units[text[-1]]
    return int(text)


def parse_params(text: str) -> ChunkParams:
    low, avg, high = (parse_size(part) for part in text.split("/"))
    return ChunkParams(low, avg, high)


@dataclass
class Figures:
    params: ChunkParams
    limits: list[float] = field(default_factory=list)
    ingests: list[float] = field(default_factory=list)
    chunks: list[int] = field(default_factory=list)
    rss_kib: list[int] = field(default_factory=list)
    dedup: list[tuple[int, int]] = field(default_factory=list)  # (new chunks, new bytes) per edit

    @property
    def ratio(self) -> float:
        return statistics.median(self.ingests) / statistics.median(self.limits)


def limit_run(path: Path, size: int, params: ChunkParams) -> tuple[float, str]:
    started = time.perf_counter()
    with open(path, "rb", buffering=0) as fh:
        content = ChunkedContent(fh, size, params=params)
        for _chunk in content:
            pass
    return size / (time.perf_counter() - started) / 1e6, content.content_hash


def ingest_run(root: Path, path: Path, size: int, params: ChunkParams) -> tuple[float, int, int]:
    """(MB/s, chunk files written, peak RSS growth KiB) of one ingest into a fresh store."""
    root.mkdir()
    db = Database.from_url(f"sqlite:///{root / 'oxidav.db'}")
    upgrade(db.engine)
    store = LocalBlobStore(root / "blobs")
    try:
        reset_peak()
        base = status_kib("VmRSS")
        run = Ingest(db, store, params)
        started = time.perf_counter()
        with open(path, "rb", buffering=0) as fh:
            run.run(fh, expected_length=size)
        elapsed = time.perf_counter() - started
        rss = status_kib("VmHWM") - base
        if run.written_bytes != size:
            raise SystemExit(f"FAIL: {params} wrote {run.written_bytes} bytes, expected {size}")
        return size / elapsed / 1e6, run.written_chunks, rss
    finally:
        store.close()
        db.dispose()
        shutil.rmtree(root)


def fresh_rss_kib(root: Path, path: Path, size: int, params: ChunkParams) -> int:
    """Peak RSS growth of one ingest in a fresh interpreter (the in-process figures of later
    sets profit from the heap the earlier ones grew)."""
    code = (
        "import sys; from pathlib import Path; "
        "from bench.blobs_chunk_params import ingest_run, parse_params; "
        "print(ingest_run(Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3]), "
        "parse_params(sys.argv[4]))[2])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(root), str(path), str(size), str(params)],
        check=True,
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    ).stdout
    return int(out.split()[-1])


def dedup_costs(data: bytes, params: ChunkParams) -> list[tuple[int, int]]:
    """(new chunks, new bytes) an ingest of each edit of ``data`` writes after ``data``."""
    known = {chunk.digest for chunk in chunk_bytes(data, params)}
    middle = len(data) // 2
    edited = (
        data[:1000] + b"!" + data[1000:],
        data[:middle] + bytes([data[middle] ^ 0xFF]) + data[middle + 1 :],
        data + os.urandom(1 << 20),
    )
    costs = []
    for content in edited:
        new = {c.digest: len(c.data) for c in chunk_bytes(content, params) if c.digest not in known}
        costs.append((len(new), sum(new.values())))
    return costs


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench blobs_chunk_params")
    parser.add_argument("--mib", type=int, default=512, help="ingest content size (MiB)")
    parser.add_argument("--dir", type=Path, default=None, help="where the stores go")
    parser.add_argument("--rounds", type=int, default=3, help="rounds; medians are reported")
    parser.add_argument("--sets", default=SETS, help="comma-separated min/avg/max sets")
    parser.add_argument("--dedup-mib", type=int, default=64, help="dedup test content (MiB)")
    parser.add_argument("--target", type=float, default=0.5, help="ingest / limit to reach")
    parser.add_argument("--choose", default=str(DEFAULT_CHUNK_PARAMS), help="the set gated")
    args = parser.parse_args(argv)
    size = args.mib << 20
    figures = [Figures(parse_params(text)) for text in args.sets.split(",")]
    chosen = parse_params(args.choose)
    if chosen not in [f.params for f in figures]:
        figures.append(Figures(chosen))

    data = os.urandom(args.dedup_mib << 20)
    for fig in figures:
        fig.dedup = dedup_costs(data, fig.params)
    del data

    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        source = root / "source.bin"
        random_file(source, size)
        _speed, content_hash = limit_run(source, size, figures[0].params)  # warm-up
        for i in range(args.rounds):
            shift = i % len(figures)
            for fig in figures[shift:] + figures[:shift]:
                speed, digest = limit_run(source, size, fig.params)
                if digest != content_hash:
                    print(f"FAIL: {fig.params} read a different content")
                    return 1
                fig.limits.append(speed)
                mb_s, chunks, _rss = ingest_run(root / f"r{i}", source, size, fig.params)
                fig.ingests.append(mb_s)
                fig.chunks.append(chunks)
        for fig in figures:
            fig.rss_kib = [fresh_rss_kib(root / "rss", source, size, fig.params)]

    print(
        f"{args.mib} MiB random bytes, local store + SQLite in {args.dir or tempfile.gettempdir()}"
        f", {args.rounds} rounds (rotating order), medians; load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    print(
        f"{'min/avg/max':14} {'limit':>7} {'ingest':>7} {'ratio':>6} {'per round':>10} "
        f"{'files':>6} {'RSS+':>6}   dedup cost on {args.dedup_mib} MiB: new chunks / KiB"
    )
    for fig in figures:
        ratios = [i / lim for i, lim in zip(fig.ingests, fig.limits, strict=True)]
        dedup = "  ".join(f"{n} / {b >> 10:5d}" for n, b in fig.dedup)
        print(
            f"{fig.params!s:14} {statistics.median(fig.limits):7.0f} "
            f"{statistics.median(fig.ingests):7.0f} {fig.ratio:6.0%} "
            f"{min(ratios):4.0%}-{max(ratios):4.0%} {statistics.median(fig.chunks):6.0f} "
            f"{max(fig.rss_kib) / 1024:5.1f}M   {dedup}"
        )
    print(f"dedup edits: {'; '.join(EDITS)}")

    gated = next(fig for fig in figures if fig.params == chosen)
    failures = []
    if gated.ratio < args.target:
        failures.append(f"{chosen} ingest reached {gated.ratio:.0%} of the limit")
    bound = 2 * chosen.max_size
    for edit, (_n, new_bytes) in zip(EDITS, gated.dedup, strict=True):
        extra = (1 << 20) if edit.startswith("append") else 0
        if new_bytes > bound + extra:
            failures.append(f"{chosen} {edit}: {new_bytes} new bytes > {bound + extra}")
    for failure in failures:
        print(f"FAIL: {failure}")
    return 1 if failures else 0
