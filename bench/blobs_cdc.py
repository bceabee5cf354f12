"""Which compiled FastCDC to chunk with: ``fastcdc`` (BEFORE) or ``pyfastcdc`` (AFTER).

Both cut the same random bytes with min 64 KiB / avg 256 KiB / max 1 MiB, alone and followed by
BLAKE3 per chunk. Each must cover the input exactly with chunks inside the bounds (the two
implementations place boundaries differently, so the chunk lists themselves are not compared).
The run fails unless pyfastcdc, the one oxidav uses, is faster. pyfastcdc also has a streaming
``cut_stream`` (one reusable buffer); ``fastcdc`` needs the whole input in memory.

    python -m bench blobs_cdc [--mib 256] [--rounds 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable, Iterable

import blake3
from fastcdc import fastcdc
from pyfastcdc import FastCDC

from oxidav.blobs.chunking import CDC_AVG, CDC_MAX, CDC_MIN


def cut_fastcdc(data: bytes) -> Iterable[tuple[int, int]]:
    for chunk in fastcdc(memoryview(data), CDC_MIN, CDC_AVG, CDC_MAX):
        yield chunk.offset, chunk.length


def cut_pyfastcdc(data: bytes) -> Iterable[tuple[int, int]]:
    cdc = FastCDC(CDC_AVG, min_size=CDC_MIN, max_size=CDC_MAX)
    for chunk in cdc.cut_buf(data):
        yield chunk.offset, chunk.length


def check_cover(data: bytes, cuts: list[tuple[int, int]]) -> None:
    position = 0
    for offset, length in cuts:
        if offset != position or not 0 < length <= CDC_MAX:
            raise SystemExit(f"bad chunk at {offset} (+{length})")
        position += length
    if position != len(data):
        raise SystemExit("chunks do not cover the input")
    if any(length < CDC_MIN for _offset, length in cuts[:-1]):
        raise SystemExit("a chunk below the minimum")


def measure(
    data: bytes, cut: Callable[[bytes], Iterable[tuple[int, int]]], rounds: int, hashed: bool
) -> float:
    view = memoryview(data)
    times = []
    for _ in range(rounds):
        started = time.perf_counter()
        for offset, length in cut(data):
            if hashed:
                blake3.blake3(view[offset : offset + length]).digest()
        times.append(time.perf_counter() - started)
    return len(data) / statistics.median(times) / 1e6


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench blobs_cdc")
    parser.add_argument("--mib", type=int, default=256)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    data = os.urandom(args.mib << 20)
    results = {}
    for name, cut in (("fastcdc (BEFORE)", cut_fastcdc), ("pyfastcdc (AFTER)", cut_pyfastcdc)):
        cuts = list(cut(data))
        check_cover(data, cuts)
        alone = measure(data, cut, args.rounds, hashed=False)
        hashed = measure(data, cut, args.rounds, hashed=True)
        results[name] = hashed
        mean = len(data) / len(cuts) / 1024
        print(
            f"{name:18s} CDC {alone:6.0f} MB/s   CDC+BLAKE3 {hashed:6.0f} MB/s   "
            f"{len(cuts)} chunks, mean {mean:.0f} KiB"
        )
    before, after = results["fastcdc (BEFORE)"], results["pyfastcdc (AFTER)"]
    print(f"pyfastcdc / fastcdc (CDC+BLAKE3): {after / before:.2f}x")
    if after <= before:
        print("FAIL: pyfastcdc is not faster")
        return 1
    return 0
