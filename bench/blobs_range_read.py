"""Gate for partial chunk reads: random 64 KiB Range reads of a 512 MiB content (local store).

``--mib`` random bytes are ingested once (default chunk sizes); then each round serves the same
``--ranges`` seeded random ranges of ``--range-kib``, each through a reader of its own and
``ContentReader.iter_range`` (what a Range GET runs), with BEFORE (a verbatim copy of the
previous ``iter_range`` and ``_entries``: every touched chunk read whole and BLAKE3-verified,
entries fetched a page of 256 at a time) and AFTER (less than half a chunk: only the bytes
asked; a few entries per query), in rotating order. Every answer of both arms is compared byte
by byte with the source file. The chunk files are read once before measuring, so both arms run
on a warm page cache. Exits 1 unless the AFTER median is faster.

    python -m bench blobs_range_read [--mib 512] [--ranges 1000] [--range-kib 64] [--rounds 5]
        [--dir /tmp] [--chunks 64K/256K/1M]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from bench._memory import random_file
from bench.blobs_chunk_params import parse_params
from oxidav.blobs import BlobChain, BlobIntegrityError, ContentReader, LocalBlobStore, catalog
from oxidav.blobs.chunking import DEFAULT_CHUNK_PARAMS
from oxidav.blobs.local import SHARDS
from oxidav.blobs.manifests import ManifestEntry
from oxidav.blobs.reader import DEFAULT_BLOCK, ENTRY_PAGE, fetch_chunk
from oxidav.db import Database
from oxidav.db.migrate import upgrade


class BeforeReader(ContentReader):
    """The previous ``iter_range`` (local store: no read-ahead) and ``_entries``, verbatim."""

    def iter_range(
        self, start: int, end_exclusive: int, block: int = DEFAULT_BLOCK
    ) -> Iterator[bytes]:
        self._check_open()
        if start < 0 or end_exclusive < start or block <= 0:
            raise ValueError(f"invalid range [{start}, {end_exclusive}) / block {block}")
        end = min(end_exclusive, self.size)
        if start >= end:
            return
        for entry in self._entries(start, end):
            data = fetch_chunk(self.store, entry)
            lo = max(start, entry.start) - entry.start
            hi = min(end, entry.start + entry.size) - entry.start
            view = memoryview(data)
            for offset in range(lo, hi, block):
                yield bytes(view[offset : min(hi, offset + block)])

    def _entries(self, start: int, end: int) -> Iterator[ManifestEntry]:
        position = start
        while position < end:
            with self.db.read() as session:
                page = catalog.entries_from(session, self.manifest_hash, position, ENTRY_PAGE)
            if not page:
                raise BlobIntegrityError(
                    f"manifest {self.manifest_hash} has no chunk for byte {position}"
                )
            for entry in page:
                if entry.start >= end:
                    return
                yield entry
                position = entry.start + entry.size


def serve(
    open_reader: Callable[[], ContentReader], ranges: list[tuple[int, int]]
) -> tuple[float, list[bytes]]:
    """Each range as a Range GET runs it: a reader opened for it (``BlobChain.open``: the
    manifest's size from the database), the range streamed, the reader closed."""
    answers = []
    started = time.perf_counter()
    for a, b in ranges:
        with open_reader() as reader:
            answers.append(b"".join(reader.iter_range(a, b, DEFAULT_BLOCK)))
    return time.perf_counter() - started, answers


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench blobs_range_read")
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--ranges", type=int, default=1000)
    parser.add_argument("--range-kib", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None)
    parser.add_argument("--chunks", default=str(DEFAULT_CHUNK_PARAMS), help="min/avg/max")
    args = parser.parse_args(argv)
    params = parse_params(args.chunks)
    size = args.mib << 20
    length = args.range_kib << 10
    rng = random.Random(64)
    ranges = [(a, a + length) for a in (rng.randrange(size - length) for _ in range(args.ranges))]
    times: dict[str, list[float]] = {"BEFORE": [], "AFTER": []}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        source = root / "source.bin"
        random_file(source, size)
        db = Database.from_url(f"sqlite:///{root / 'oxidav.db'}")
        upgrade(db.engine)
        store = LocalBlobStore(root / "blobs")
        chain = BlobChain(db, store, params)
        with open(source, "rb") as fh:
            stored = chain.ingest(fh, expected_length=size)
        chunks = 0
        for shard in SHARDS:  # the page cache warm for both arms, whatever the ingest left
            for name in os.listdir(store.root / shard):
                (store.root / shard / name).read_bytes()
                chunks += 1
        fd = os.open(source, os.O_RDONLY)
        expected = [os.pread(fd, b - a, a) for a, b in ranges]
        os.close(fd)
        manifest = stored.manifest_hash
        arms: dict[str, Callable[[], ContentReader]] = {
            "BEFORE": lambda: BeforeReader(db, store, manifest, chain.stat(manifest).size),
            "AFTER": lambda: chain.open(manifest),
        }
        names = list(arms)
        for i in range(args.rounds):
            for name in names[i % 2 :] + names[: i % 2]:
                elapsed, answers = serve(arms[name], ranges)
                if answers != expected:
                    print(f"FAIL: {name} served different bytes")
                    return 1
                times[name].append(elapsed)
        chain.close()
        db.dispose()
        shutil.rmtree(root / "blobs")
    before, after = (statistics.median(times[n]) for n in ("BEFORE", "AFTER"))
    print(
        f"{args.ranges} random {args.range_kib} KiB ranges of {args.mib} MiB ({chunks} chunks, "
        f"{params}), local store in {args.dir or tempfile.gettempdir()}, "
        f"{args.rounds} rounds, medians; load average {os.getloadavg()[0]:.1f}"
    )
    for name, value in (("BEFORE whole chunk + BLAKE3", before), ("AFTER partial read", after)):
        print(
            f"{name:28} {value * 1000:8.1f} ms  ({args.ranges / value:7.0f} ranges/s, "
            f"{value / args.ranges * 1e6:6.0f} us each)"
        )
    print(f"AFTER / BEFORE speed: {before / after:.2f}x")
    if after >= before:
        print("FAIL: partial reads are not faster")
        return 1
    return 0
