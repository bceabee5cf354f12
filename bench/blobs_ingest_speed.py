"""BEFORE/AFTER gate of the ingest speed-up on a local store (issue 3: ingest vs CDC+BLAKE3).

Two changes, both kept here as verbatim BEFORE copies so that one run compares them:

1. Store write path (``_BeforeLocalStore``). BEFORE: each chunk went to a temporary file in
   ``<root>/.tmp`` (named with ``secrets.token_hex``, a ``getrandom`` call) and was renamed into
   its shard folder (a cross-directory rename); the sync sweep submitted one pool task per file
   and per folder, each opening an absolute path. AFTER (``LocalBlobStore``): an unnamed file in
   the shard folder (``O_TMPFILE``) linked under its key (``linkat``) — still atomic, one syscall
   and one directory entry fewer, no random name, nothing left behind by a crash; the sweep gives
   each fsync thread one slice of the batch and resolves names against a root descriptor.
2. Ingest write-ahead (``_BeforeWriter``). BEFORE: at most 8 chunks (~2.5 MiB) in flight, so
   handing over a 16 MiB batch blocked the chunking thread until most of that batch was written —
   chunking and writing took turns. AFTER: up to ``WRITE_AHEAD_BYTES`` (16 MiB, one batch) in
   flight, so the writers drain a batch while the next one is chunked (peak RSS grows by about
   one batch, still independent of the content length).

Three arms ingest the same random content through ``Ingest`` (SQLite) in rotating order, each
round into a fresh store and database: BEFORE (1 and 2 as they were), STORE (the new store with
the old writer, for the split) and AFTER. Equivalence: identical manifest and content hashes,
identical chunk rows (hash, size, refcount), identical chunk files (each re-hashed against its
name), nothing left in ``.tmp``. Peak RSS growth is measured once per arm in a fresh
interpreter (a process reuses the heap of earlier rounds). Exits 1 unless the AFTER median time
is lower than BEFORE's.

    python -m bench blobs_ingest_speed [--mib 512] [--rounds 5] [--dir /tmp]
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import multiprocessing
import os
import secrets
import shutil
import statistics
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import blake3
from sqlalchemy import select

from bench._memory import random_file, status_kib
from oxidav.blobs.ingest import SYNC_EVERY, Ingest, StoredContent
from oxidav.blobs.local import LocalBlobStore
from oxidav.blobs.store import BlobNotFoundError, BlobStore, shard_of
from oxidav.db import Database
from oxidav.db.migrate import upgrade
from oxidav.db.models.blobs import BlobChunk

# ---- BEFORE: the local store's write path and sync sweep as they were (verbatim copy) ----

_SYNC_PARALLEL_MIN = 16


def _fsync_path(path: str | Path, directory: bool = False) -> None:
    flags = os.O_RDONLY | (os.O_DIRECTORY if directory else 0)
    fd = os.open(path, flags)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


class _BeforeLocalStore(LocalBlobStore):
    """BEFORE: temporary file in ``.tmp`` + rename; one sync task per file and folder."""

    def _write(self, key: str, data: bytes, durable: bool) -> None:
        final = self.path(key)
        tmp = self._tmp / f"{key}.{secrets.token_hex(6)}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            try:
                _write_all(fd, data)
                if durable:
                    os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(tmp, final)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        if durable:
            _fsync_path(final.parent, directory=True)

    def sync(self, keys: Sequence[str]) -> None:
        paths = [self.path(key) for key in keys]
        shards = sorted({self.root / shard_of(key) for key in keys})
        if len(paths) < _SYNC_PARALLEL_MIN:
            for path in paths:
                self._fsync_file(path)
            for shard in shards:
                _fsync_path(shard, directory=True)
            return
        pool = self._sync_pool()
        list(pool.map(self._fsync_file, paths))
        list(pool.map(lambda shard: _fsync_path(shard, directory=True), shards))

    @staticmethod
    def _fsync_file(path: Path) -> None:
        try:
            _fsync_path(path)
        except FileNotFoundError:
            raise BlobNotFoundError(path.name) from None


class _BeforeWriter:
    """BEFORE: ``oxidav.blobs.ingest._Writer`` as it was (at most 4 x workers chunks in flight)."""

    def __init__(self, store: BlobStore) -> None:
        self._store = store
        # At least two: one slow file creation (or request) must not stall the next write.
        self._workers = max(2, store.concurrency)
        self._max_in_flight = 4 * self._workers
        self._pool: ThreadPoolExecutor | None = None
        self._syncer: ThreadPoolExecutor | None = None
        self._pending: collections.deque[Future[None]] = collections.deque()
        self._sweeps: list[Future[None]] = []
        self._unsynced: list[str] = []
        self.written = 0
        self.written_bytes = 0

    def submit(self, key: str, data: bytes) -> None:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self._workers, thread_name_prefix="oxidav-blob-put")
        while len(self._pending) >= self._max_in_flight:
            self._pending.popleft().result()
        self._pending.append(self._pool.submit(self._store.put_unsynced, key, data))
        self._note(key, data)
        if len(self._unsynced) >= SYNC_EVERY:
            self._sweep()

    def write_inline(self, items: dict[str, bytes]) -> None:
        for key, data in items.items():
            self._store.put_unsynced(key, data)
            self._note(key, data)

    def _note(self, key: str, data: bytes) -> None:
        self._unsynced.append(key)
        self.written += 1
        self.written_bytes += len(data)

    def _sweep(self) -> None:
        # A sweep that already failed stops the ingest now, not at the end.
        for done in [sweep for sweep in self._sweeps if sweep.done()]:
            done.result()
            self._sweeps.remove(done)
        keys, self._unsynced = self._unsynced, []
        if not keys:
            return
        writes = list(self._pending)
        if self._syncer is None:
            self._syncer = ThreadPoolExecutor(1, thread_name_prefix="oxidav-blob-sync")
        self._sweeps.append(self._syncer.submit(self._sync_after, writes, keys))

    def _sync_after(self, writes: Sequence[Future[None]], keys: list[str]) -> None:
        for write in writes:
            write.result()
        self._store.sync(keys)

    def finish(self) -> None:
        """Wait for every write and sweep; raise the first failure."""
        while self._pending:
            self._pending.popleft().result()
        if self._syncer is None and self._unsynced:
            keys, self._unsynced = self._unsynced, []
            self._store.sync(keys)
        else:
            self._sweep()
        for sweep in self._sweeps:
            sweep.result()
        self.close()

    def close(self) -> None:
        for pool in (self._pool, self._syncer):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
        self._pool = self._syncer = None


class _BeforeIngest(Ingest):
    """``Ingest`` with the BEFORE writer (everything else is the shipped code)."""

    def __init__(self, db: Database, store: BlobStore) -> None:
        super().__init__(db, store)
        self._writer = _BeforeWriter(store)  # type: ignore[assignment]


# ---- the run ---------------------------------------------------------------------------


def _ingest(
    ingest: type[Ingest], store: LocalBlobStore, db: Database, source: Path, size: int
) -> tuple[float, int, StoredContent]:
    """(seconds, peak RSS growth in KiB, result) of one ingest."""
    with open("/proc/self/clear_refs", "w") as fh:
        fh.write("5")  # reset VmHWM
    base = status_kib("VmRSS")
    run = ingest(db, store)
    started = time.perf_counter()
    with open(source, "rb", buffering=0) as fh:
        stored = run.run(fh, expected_length=size)
    return time.perf_counter() - started, status_kib("VmHWM") - base, stored


Snapshot = tuple[StoredContent, list[tuple[str, int, int]], list[str]]


def _snapshot(store: LocalBlobStore, db: Database, stored: StoredContent) -> Snapshot:
    """(result, chunk rows, stored keys) — every stored file re-hashed against its name."""
    with db.read() as session:
        rows = sorted(
            (row.hash, row.size, row.refcount)
            for row in session.execute(select(BlobChunk.hash, BlobChunk.size, BlobChunk.refcount))
        )
    keys = sorted(store.iter_keys())
    for key in keys:
        if blake3.blake3(store.get(key)).hexdigest() != key:
            raise SystemExit(f"FAIL: chunk file {key} does not hold its content")
    return stored, rows, keys


def _fresh_rss_kib(name: str, source: Path, size: int, where: Path) -> int:
    """Peak RSS growth of one ingest by arm ``name``, run in a spawned interpreter."""
    store_cls, ingest_cls = ARMS[name]
    db = Database.from_url(f"sqlite:///{where}.db")
    upgrade(db.engine)
    store = store_cls(where)
    try:
        return _ingest(ingest_cls, store, db, source, size)[1]
    finally:
        store.close()
        db.dispose()
        shutil.rmtree(where)
        os.unlink(f"{where}.db")


#: name -> (store class, ingest class)
ARMS: dict[str, tuple[type[LocalBlobStore], type[Ingest]]] = {
    "BEFORE": (_BeforeLocalStore, _BeforeIngest),
    "STORE": (LocalBlobStore, _BeforeIngest),
    "AFTER": (LocalBlobStore, Ingest),
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench blobs_ingest_speed")
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", type=Path, default=None, help="where stores go (default: TMPDIR)")
    args = parser.parse_args(argv)
    size = args.mib << 20
    names = list(ARMS)
    times: dict[str, list[float]] = {name: [] for name in names}
    fresh_rss: dict[str, int] = {}
    snapshots: dict[str, Snapshot] = {}
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        root = Path(tmp)
        source = root / "source.bin"
        random_file(source, size)
        for i in range(args.rounds):
            order = names[i % len(names) :] + names[: i % len(names)]  # rotate who goes first
            for name in order:
                store_cls, ingest_cls = ARMS[name]
                where = root / f"{name}{i}"
                db = Database.from_url(f"sqlite:///{where}.db")
                upgrade(db.engine)
                store = store_cls(where)
                try:
                    seconds, _rss, stored = _ingest(ingest_cls, store, db, source, size)
                    times[name].append(seconds)
                    if i == 0:  # equivalence, from the first round of each arm
                        snapshots[name] = _snapshot(store, db, stored)
                        leftovers = os.listdir(where / ".tmp")
                        if leftovers:
                            print(f"FAIL: {name} left temporary files: {leftovers[:3]}")
                            return 1
                finally:
                    store.close()
                    db.dispose()
                    shutil.rmtree(where)
                    os.unlink(f"{where}.db")
        with multiprocessing.get_context("spawn").Pool(1, maxtasksperchild=1) as pool:
            for name in names:
                fresh_rss[name] = pool.apply(
                    _fresh_rss_kib, (name, source, size, root / f"rss-{name}")
                )
    if any(snapshots[name] != snapshots["BEFORE"] for name in names):
        print("FAIL: the arms stored different manifests, chunk rows or chunk files")
        return 1
    stored, rows, keys = snapshots["AFTER"]
    print(
        f"content: {args.mib} MiB random, {len(keys)} chunks, stores in {tmp} "
        f"(load average {os.getloadavg()[0]:.1f}); {args.rounds} rounds, order rotating"
    )
    print(
        f"equivalent: manifest {stored.manifest_hash[:16]}..., content {stored.content_hash[:16]}"
        f"..., {len(rows)} chunk rows, {len(keys)} chunk files"
    )
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name in names:
        runs = ", ".join(f"{v:.3f}" for v in times[name])
        print(
            f"{name:6s} median {medians[name]:.3f} s = {size / medians[name] / 1e6:5.0f} MB/s"
            f"  peak RSS +{fresh_rss[name] / 1024:4.1f} MiB   runs [{runs}] s"
        )
    print(
        f"AFTER / BEFORE throughput: {medians['BEFORE'] / medians['AFTER']:.2f}x "
        f"(store path alone: {medians['BEFORE'] / medians['STORE']:.2f}x), medians"
    )
    if medians["AFTER"] >= medians["BEFORE"]:
        print("GATE FAIL: AFTER is not faster than BEFORE - roll back")
        return 1
    return 0
