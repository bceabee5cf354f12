"""What durability costs on this disk: the floors under the files provider's PUT figures.

WsgiDAV's FilesystemProvider never fsyncs: its PUT is done when the bytes are in the page
cache. oxidav's PUT answers only once the content is on stable storage (docs/architecture.md#blobs),
so its PUT figures cannot beat what the disk itself does durably. This measures that, in the folder
given (default: a temporary folder in the current one, i.e. the disk the data dir is on):

- ``large``: ``--mib`` MiB of random bytes written in 4 MiB blocks to a new file, then one
  fsync (after ``os.sync()``, so no one else's dirty pages are in the way): MB/s durable,
  and the same write without the fsync (page cache only) for comparison;
- ``small``: new 4 KiB files made durable the way the local blob store does it (an unnamed
  file, written, fsynced, linked, its folder fsynced), one after another: files/s and ms
  per file — the floor under one client's durable small PUTs, before any HTTP or database.

Compare them with the FilesystemProvider's figures of ``files_large`` / ``files_put`` run on
the same machine. A measurement, not a gate: exits 0.

    python -m bench disk_floor [--mib 512] [--files 500] [--dir DIR]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

BLOCK = 4 << 20
SMALL = 4096


def large_write(folder: Path, mib: int, durable: bool) -> float:
    """MB/s of writing ``mib`` MiB to a new file (then fsync, if ``durable``)."""
    block = os.urandom(BLOCK)
    target = folder / f"large-{durable}"
    os.sync()
    started = time.perf_counter()
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for _ in range(mib * (1 << 20) // BLOCK):
            os.write(fd, block)
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    elapsed = time.perf_counter() - started
    target.unlink()
    os.sync()
    return mib * (1 << 20) / 1e6 / elapsed


def small_files(folder: Path, files: int) -> list[float]:
    """Seconds per durable new 4 KiB file, one after another (unnamed file, fsync, link,
    folder fsync — ``LocalBlobStore``'s durable write)."""
    shard = folder / "ab"
    shard.mkdir()
    data = os.urandom(SMALL)
    times: list[float] = []
    root = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i in range(files):
            started = time.perf_counter()
            fd = os.open(shard, os.O_TMPFILE | os.O_WRONLY, 0o644)
            try:
                os.write(fd, data)
                os.fsync(fd)
                # A dir_fd makes CPython call linkat, which honours follow_symlinks.
                os.link(f"/proc/self/fd/{fd}", f"ab/f{i}", dst_dir_fd=root, follow_symlinks=True)
            finally:
                os.close(fd)
            dir_fd = os.open(shard, os.O_RDONLY | os.O_DIRECTORY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)
            times.append(time.perf_counter() - started)
    finally:
        os.close(root)
    return times


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench disk_floor")
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--dir", type=Path, default=Path.cwd())
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir=args.dir, prefix="disk-floor-") as tmp:
        folder = Path(tmp)
        cached = large_write(folder, args.mib, durable=False)
        durable = large_write(folder, args.mib, durable=True)
        times = small_files(folder, args.files)
    median_ms = statistics.median(times) * 1000
    print(f"| figure ({args.dir}) | value |")
    print("|---|---|")
    print(f"| {args.mib} MiB write, page cache only | {cached:.0f} MB/s |")
    print(f"| {args.mib} MiB write + fsync (durable) | {durable:.0f} MB/s |")
    print(f"| durable new 4 KiB file, 1 writer | {len(times) / sum(times):.0f} files/s |")
    print(f"| durable new 4 KiB file, median | {median_ms:.2f} ms |")
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
