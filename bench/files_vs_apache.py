"""oxidav (``oxidav serve`` as a user starts it) against Apache mod_dav, side by side in one run.

The file rows of issue 30's table, same data on both; both servers run at once and each
figure is measured on one and then the other, the order swapped every round
(``run_side_by_side``; ``--rounds``: medians over that many):

- PROPFIND Depth:1 of folders of 5000 and 500 files (1 KiB each), four named props and
  allprop: median of ``--runs`` requests on one keep-alive connection;
- a depth-1 walk of 100 folders x 100 files (the root, then each folder): median of 3 walks;
- GET of 2000 files of 4 KiB with 8 clients (requests/s);
- PUT of 2000 new files of 4 KiB with 8 clients (files/s; oxidav durable as configured);
- PUT and GET of one 512 MiB file (MB/s; its content random, so oxidav's CDC + BLAKE3 run);
- 1000 random 64 KiB ranges of it with 8 clients (requests/s).

Every answer is checked (listed names and lengths, GET bodies, the large file's BLAKE3, each
range's bytes). Memory: oxidav's worker processes' RSS when idle (after a first request) and
the highest peak (VmHWM) of any worker over the whole run; Apache's the same over its
children. Each figure is printed with the ratio to Apache and the issue's target; the run
exits 1 when a target is missed (an honest report, not a speed gate: speed changes carry their
own BEFORE/AFTER gates).

    python -m bench files_vs_apache [--runs 10] [--rounds 1] [--large-mib 512] [--workers N]
"""

from __future__ import annotations

import argparse
import hashlib
import os
import random
import shutil
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import blake3

from bench._apache import apache_available, apache_server
from bench._files_servers import Client, Server, add_alice, alice_tree, oxidav_env, oxidav_server
from bench.files_large import get as get_large
from bench.files_large import make_source
from bench.files_large import put as put_large
from bench.files_propfind import BODIES, CONTENT, listing, measure
from bench.files_put import put_all, verify

SMALL = 4096
GET_FILES = 2000
CLIENTS = 8
RANGE = 64 * 1024
RANGES = 1000
WALK_FOLDERS = 100
WALK_FILES = 100


def small(i: int) -> bytes:
    seed = hashlib.sha256(f"get/{i}".encode()).digest()
    return (seed * (SMALL // len(seed) + 1))[:SMALL]


def populate_apache(root: Path, sizes: list[int]) -> None:
    for size in sizes:
        folder = root / f"f{size}"
        folder.mkdir(parents=True)
        for i in range(size):
            (folder / f"file{i:05d}.txt").write_bytes(CONTENT)
    for f in range(WALK_FOLDERS):
        folder = root / "walk" / f"d{f:03d}"
        folder.mkdir(parents=True)
        for i in range(WALK_FILES):
            (folder / f"file{i:03d}.txt").write_bytes(CONTENT)
    (root / "get").mkdir()
    for i in range(GET_FILES):
        (root / "get" / f"g{i:04d}.bin").write_bytes(small(i))


def populate_oxidav(env: dict[str, str], sizes: list[int]) -> None:
    """The same tree, straight through the tree API (PUT speed is measured on its own)."""
    from oxidav.tree import make_folder, write_file

    with alice_tree(env) as (db, chain, user_id):
        one_kib = chain.ingest([CONTENT])
        contents = [chain.ingest([small(i)]) for i in range(GET_FILES)]  # not inside a write
        with db.write() as session:
            for size in sizes:
                make_folder(session, user_id, f"/f{size}")
                for i in range(size):
                    write_file(session, chain, user_id, f"/f{size}/file{i:05d}.txt", one_kib)
            make_folder(session, user_id, "/walk")
            for f in range(WALK_FOLDERS):
                make_folder(session, user_id, f"/walk/d{f:03d}")
                for i in range(WALK_FILES):
                    path = f"/walk/d{f:03d}/file{i:03d}.txt"
                    write_file(session, chain, user_id, path, one_kib)
            make_folder(session, user_id, "/get")
            for i in range(GET_FILES):
                write_file(session, chain, user_id, f"/get/g{i:04d}.bin", contents[i])


def side_copies(tmp: Path, sizes: list[int]) -> dict[str, dict[str, str]]:
    """A gate's two data folders (``BEFORE``, ``AFTER``) under ``tmp``: copies of one folder
    with alice and the tree of ``populate_oxidav(sizes)``; the ``oxidav serve`` environment of
    each."""
    template = oxidav_env(tmp / "template")
    add_alice(template)
    populate_oxidav(template, sizes)
    envs = {}
    for name in ("BEFORE", "AFTER"):
        shutil.copytree(tmp / "template", tmp / name)
        envs[name] = oxidav_env(tmp / name)
    return envs


def worker_memory(server: Server, field: str) -> float:
    """The largest ``field`` (VmRSS, VmHWM) of the serving processes, in MiB."""
    return server.rss_kb(field) / 1024


def walk(server: Server) -> float:
    client = server.client()
    headers = {"Depth": "1", "Content-Type": "application/xml"}
    started = time.perf_counter()
    status, body, _ = client.request("PROPFIND", "walk/", BODIES["named4"], headers)
    assert status == 207
    folders = sorted(name for name in listing(body) if name.startswith("d"))
    assert len(folders) == WALK_FOLDERS, (server.name, len(folders))
    for folder in folders:
        status, body, _ = client.request("PROPFIND", f"walk/{folder}/", BODIES["named4"], headers)
        assert status == 207 and len(listing(body)) == WALK_FILES + 1, server.name
    elapsed = time.perf_counter() - started
    client.close()
    return elapsed


def parallel(server: Server, count: int, one: Callable[[Server, Client, int], None]) -> float:
    """``one(server, client, i)`` for i < count over ``CLIENTS`` connections; requests/s."""
    errors: list[BaseException] = []

    def worker(c: int) -> None:
        client = server.client()
        try:
            for i in range(c, count, CLIENTS):
                one(server, client, i)
        except BaseException as exc:  # reported below
            errors.append(exc)
        finally:
            client.close()

    threads = [threading.Thread(target=worker, args=(c,)) for c in range(CLIENTS)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    if errors:
        raise SystemExit(f"{server.name}: {errors[0]!r}")
    return count / elapsed


def get_small(server: Server, client: Client, i: int) -> None:
    status, body, _ = client.request("GET", f"get/g{i:04d}.bin")
    if status != 200 or body != small(i):
        raise AssertionError(f"GET g{i}: {status}")


def range_reader(source: Path) -> Callable[[Server, Client, int], None]:
    size = source.stat().st_size
    rng = random.Random(30)
    offsets = [rng.randrange(0, size - RANGE) for _ in range(RANGES)]
    with source.open("rb") as fh:
        expected = []
        for offset in offsets:
            fh.seek(offset)
            expected.append(blake3.blake3(fh.read(RANGE)).digest())

    def one(server: Server, client: Client, i: int) -> None:
        offset = offsets[i]
        status, body, _ = client.request(
            "GET", "big.bin", headers={"Range": f"bytes={offset}-{offset + RANGE - 1}"}
        )
        if status != 206 or blake3.blake3(body).digest() != expected[i]:
            raise AssertionError(f"range {i}: {status}")

    return one


#: One figure of one server in one round: ``(server, round number) -> value``.
Step = Callable[[Server, int], float]


def _propfind(size: int, body_name: str, runs: int) -> Step:
    def step(server: Server, _round: int) -> float:
        median, _before, _peak, answer = measure(server, f"f{size}/", BODIES[body_name], runs)
        names = listing(answer)
        assert len(names) == size + 1, (server.name, size, len(names))
        return median

    return step


def _put_small(server: Server, round_no: int) -> float:
    run = f"put{round_no}"
    rate = put_all(server, GET_FILES, CLIENTS, run)
    if not verify(server, GET_FILES, CLIENTS, run):
        raise SystemExit(f"{server.name}: PUT content differs")
    return rate


def steps(sizes: list[int], runs: int, source: Path, digest: str) -> dict[str, Step]:
    """Each figure's measurement, in the order they run (the GET and ranges of the large file
    need its PUT first)."""
    made: dict[str, Step] = {}
    for size in sizes:
        for body_name in BODIES:
            made[f"PROPFIND {size} {body_name} ms"] = _propfind(size, body_name, runs)
    made["walk 100x100 s"] = lambda server, _r: statistics.median(walk(server) for _ in range(3))
    made["GET 4KiB x8 req/s"] = lambda server, _r: parallel(server, GET_FILES, get_small)
    made["PUT 4KiB x8 files/s"] = _put_small
    made["PUT 512MiB MB/s"] = lambda server, _r: put_large(server, source)
    made["GET 512MiB MB/s"] = lambda server, _r: get_large(server, digest)
    reader = range_reader(source)
    made["ranges 64KiB x8 req/s"] = lambda server, _r: parallel(server, RANGES, reader)
    return made


def run_side_by_side(
    servers: dict[str, Server], rounds: int, measured: dict[str, Step]
) -> dict[str, dict[str, float]]:
    """Both servers run at once; each figure is measured on one, then on the other (the order
    swapped every round), so a figure's two sides are minutes closer than a whole run of each
    and meet the same load of the shared machine. Medians over ``rounds``; RSS idle after a
    first request, peak the highest VmHWM seen after any figure (PROPFIND's ``measure`` resets
    it for its own series)."""
    figures: dict[str, dict[str, list[float]]] = {name: {} for name in servers}
    peaks: dict[str, float] = {}
    result: dict[str, dict[str, float]] = {name: {} for name in servers}
    for name, server in servers.items():
        first = server.client()
        first.request("OPTIONS", "")  # the first request: the password check, caches warm
        first.close()
        result[name]["rss idle MiB"] = worker_memory(server, "VmRSS")
    for round_no in range(rounds):
        order = list(servers) if round_no % 2 == 0 else list(reversed(servers))
        for figure, step in measured.items():
            for name in order:
                figures[name].setdefault(figure, []).append(step(servers[name], round_no))
                peak = worker_memory(servers[name], "VmHWM")
                peaks[name] = max(peaks.get(name, 0.0), peak)
    for name in servers:
        result[name].update({k: statistics.median(v) for k, v in figures[name].items()})
        result[name]["rss peak MiB"] = peaks[name]
    return result


#: figure -> (target ratio oxidav / Apache, True if higher is better)
TARGETS = {
    "PROPFIND 5000 named4 ms": (1.0, False),
    "PROPFIND 5000 allprop ms": (1.0, False),
    "PROPFIND 500 named4 ms": (1.0, False),
    "PROPFIND 500 allprop ms": (1.0, False),
    "walk 100x100 s": (1.0, False),
    "GET 4KiB x8 req/s": (0.5, True),
    "PUT 4KiB x8 files/s": (1.2, True),
    "PUT 512MiB MB/s": (1.0, True),
    "GET 512MiB MB/s": (0.7, True),
    "ranges 64KiB x8 req/s": (0.8, True),
}
#: figure -> the most oxidav may use (MiB per worker)
MEMORY_LIMITS = {"rss idle MiB": 60.0, "rss peak MiB": 120.0}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench files_vs_apache")
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=1, help="medians over this many rounds")
    parser.add_argument("--sizes", default="5000,500")
    parser.add_argument("--large-mib", type=int, default=512)
    parser.add_argument("--workers", type=int, help="oxidav's --workers (default: its own)")
    args = parser.parse_args(argv)
    if not apache_available():
        print("apache2 with mod_dav_fs is not installed (apt-get install apache2)")
        return 2
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="bench-apache-") as tmp_name:
        tmp = Path(tmp_name)
        source = tmp / "source.bin"
        digest = make_source(source, args.large_mib)
        source.parent.chmod(0o755)
        apache_root = tmp / "apache" / "root"
        populate_apache(apache_root, sizes)
        env = oxidav_env(tmp / "oxidav")
        if args.workers:
            env["OXIDAV_WORKERS"] = str(args.workers)
        add_alice(env)
        populate_oxidav(env, sizes)
        with oxidav_server(env) as ours, apache_server(apache_root) as theirs:
            servers = {"oxidav": ours, "apache": theirs}
            measured = steps(sizes, args.runs, source, digest)
            results = run_side_by_side(servers, args.rounds, measured)
    ok = True
    print(f"{'figure':28} {'oxidav':>10} {'apache':>10} {'ratio':>7} {'target':>8}")
    for name, (target, higher) in TARGETS.items():
        if name not in results["oxidav"]:
            continue  # a folder size left out (``--sizes``)
        ours, theirs = results["oxidav"][name], results["apache"][name]
        ratio = ours / theirs
        met = ratio >= target if higher else ratio <= target
        ok &= met
        sign = ">=" if higher else "<="
        print(
            f"{name:28} {ours:10.2f} {theirs:10.2f} {ratio:7.2f} {sign}{target:<6} "
            f"{'met' if met else 'MISSED'}"
        )
    for name, limit in MEMORY_LIMITS.items():
        ours, theirs = results["oxidav"][name], results["apache"][name]
        met = ours <= limit
        ok &= met
        verdict = "met" if met else "MISSED"
        print(f"{name:28} {ours:10.1f} {theirs:10.1f} {'':7} <={limit:<5.0f} {verdict}")
    print(f"cores: {os.cpu_count()}; oxidav workers: {args.workers or 'default'}")
    return 0 if ok else 1
