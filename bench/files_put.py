"""Many small PUTs: oxidav vs WsgiDAV's FilesystemProvider, 1 client and 8 concurrent clients.

Each client PUTs its share of ``--files`` distinct 4 KiB files on its own keep-alive connection
into its own folder; files per second are reported. Both servers run side by side for
``--rounds`` rounds (default 3), each round taking them in the other order, and each figure is
the median of its rounds: on this shared machine one server's rate moves by a third from one
minute to the next (the FilesystemProvider's CPU per PUT is ~1.0 ms in one minute and ~1.5 ms
in the next), and a single run of each compared two different minutes. Afterwards every file
is read back from both servers and must be byte-equal.

Before the timed rounds each server PUTs one untimed round (``--warmup``): on a freshly booted
machine the FilesystemProvider's first thousands of files grow the page cache into memory the
KVM host had taken back, and its rate rose from ~400 to ~1000 files/s within one run, while
oxidav's (whose WAL reuses its pages) stayed flat — the median then compared oxidav with a
FilesystemProvider slower than it is at its steady state (RESULTS.md, round 12).

Gate (issue 8): oxidav is at least 1.0x the FilesystemProvider with 1 and with 8 clients —
while keeping durability before visibility: a chunk in the blob store is synced before its
manifest and node rows commit, and a small content's one chunk (``blob_inline_max``, 16 KiB:
all of these files) is kept in its row and commits with them (``oxidav.blobs.inline``); exits
1 otherwise.

    python -m bench files_put [--files 2000] [--rounds 3] [--warmup 1] [--db-url URL]
"""

from __future__ import annotations

import argparse
import hashlib
import statistics
import tempfile
import threading
import time
from contextlib import ExitStack
from pathlib import Path

from bench._files_servers import Server, add_alice, filesystem_server, oxidav_env, oxidav_server

SIZE = 4096


def content(i: int, run: str) -> bytes:
    """File ``i`` of ``run``: every run PUTs new content (a repeated content would be
    deduplicated by oxidav, and its PUT would write no chunk at all)."""
    seed = hashlib.sha256(f"{run}/{i}".encode()).digest()
    return (seed * (SIZE // len(seed) + 1))[:SIZE]


def put_all(server: Server, files: int, clients: int, run: str) -> float:
    """PUT ``files`` files with ``clients`` concurrent connections; return files per second."""
    setup = server.client()
    setup.request("MKCOL", run)
    for c in range(clients):
        setup.request("MKCOL", f"{run}/c{c}")
    setup.close()
    errors: list[str] = []

    def worker(c: int) -> None:
        client = server.client()
        for i in range(c, files, clients):
            status, _, _ = client.request("PUT", f"{run}/c{c}/f{i}.bin", content(i, run))
            if status not in (201, 204):
                errors.append(f"{server.name} PUT {i}: {status}")
        client.close()

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(clients)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise SystemExit(errors[0])
    return files / elapsed


def verify(server: Server, files: int, clients: int, run: str) -> bool:
    client = server.client()
    try:
        for i in range(files):
            status, body, _ = client.request("GET", f"{run}/c{i % clients}/f{i}.bin")
            if status != 200 or body != content(i, run):
                print(f"{server.name}: {run} file {i} differs")
                return False
        return True
    finally:
        client.close()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench files_put")
    parser.add_argument("--files", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed rounds per server first")
    parser.add_argument("--db-url", default=None, help="an empty PostgreSQL database (optional)")
    args = parser.parse_args(argv)
    samples: dict[tuple[str, int], list[float]] = {}
    ok = True
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as servers:
        root = Path(tmp) / "fs"
        root.mkdir()
        env = oxidav_env(Path(tmp) / "oxidav", args.db_url)
        add_alice(env)
        both = [
            servers.enter_context(filesystem_server(root)),
            servers.enter_context(oxidav_server(env)),
        ]
        for warmup in range(args.warmup):
            for server in both:
                for clients in (1, 8):
                    put_all(server, args.files, clients, f"warmup{warmup}-{clients}")
        for round_no in range(args.rounds):
            for server in both if round_no % 2 == 0 else reversed(both):
                for clients in (1, 8):
                    run = f"round{round_no}-{clients}"
                    rate = put_all(server, args.files, clients, run)
                    samples.setdefault((server.name, clients), []).append(rate)
                    ok = verify(server, args.files, clients, run) and ok
    rates = {key: statistics.median(values) for key, values in samples.items()}
    print(
        "| clients | FilesystemProvider files/s | oxidav files/s | ratio | rounds (FS / oxidav) |"
    )
    print("|---|---|---|---|---|")
    for clients in (1, 8):
        fs, ox = rates[("FilesystemProvider", clients)], rates[("oxidav", clients)]
        each = " ".join(
            f"{a:.0f}/{b:.0f}"
            for a, b in zip(
                samples[("FilesystemProvider", clients)], samples[("oxidav", clients)], strict=True
            )
        )
        print(f"| {clients} | {fs:.0f} | {ox:.0f} | {ox / fs:.2f} | {each} |")
        if ox < fs:
            print(f"FAIL: {clients} client(s): oxidav is {ox / fs:.2f}x the FilesystemProvider")
            ok = False
    return 0 if ok else 1
