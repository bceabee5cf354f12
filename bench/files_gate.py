"""BEFORE/AFTER gate for the files provider's speed work (issue 8): one run, three servers.

BEFORE is ``oxidav serve`` run from an exported older revision (``--before``, default the
commit the speed work started from; ``git archive`` into a temporary folder, nothing in the
checkout changes), AFTER is the working tree, and WsgiDAV's FilesystemProvider runs beside them
so every figure is also a ratio to it. Rounds rotate the order of the servers; medians are
reported.

``propfind``: per round fresh servers holding folders of 500 and 5000 files
(``files_propfind``'s workload: Depth:1 PROPFIND, four named properties and allprop, and the
Nextcloud desktop client's listing, ``files_propfind.NEXTCLOUD``) and a folder of 500 folders
(four named properties: a folder has no length, answered in a 404 propstat); the three servers
run at once and each timed run sends one PROPFIND to each of them in turn, so all are timed over
the same stretch of the shared machine's load, over several connections each; figures are
PROPFINDs per second (the inverse of the median time, the median over rounds), every server must
list the same names and lengths, and BEFORE and AFTER must answer the Nextcloud listing with the
same properties, statuses and values (but those that differ between installations,
``files_propfind.VOLATILE``).
``put``: ``--files`` distinct 4 KiB PUTs with 1 client and with 8 concurrent clients per round
(``files_put``'s workload); afterwards every file is read back from every server and must be
byte-equal to what was sent. ``large``: per round fresh servers, a ``--mib`` MiB PUT (into
recycled memory, ``files_large.put``), ``--gets`` GETs (default 1; the median of all rounds' GETs
is reported) each checked by BLAKE3 and ``--ranges`` random 64 KiB
Range GETs each checked against the source (``files_large``'s workload); peak RSS is the
highest VmHWM of a round. The servers' CPU time per GET and per Range GET is shown too (lower
is better; not part of the verdict): on the shared machine it moves less than the rates do.

Exits 1 unless AFTER beats BEFORE on every throughput figure (and, for ``large``, its peak RSS
is not higher than BEFORE's plus 5 MB), or when any answer differs. ``--decide FIGURE``
(repeatable) names the figures a change is made for: only they (and peak RSS) decide, the
others are still shown — so a change to one path is not judged on paths it does not touch,
which move ±5 % from run to run with the machine. A change made for memory decides on
``peak RSS MB``: AFTER's peak must then be lower than BEFORE's by more than the 5 MB slack.

    python -m bench files_gate put [--rounds 3] [--files 1000] [--before REV]
    python -m bench files_gate propfind [--rounds 3] [--before REV]
    python -m bench files_gate large [--rounds 3] [--mib 512] [--ranges 1000] [--gets 1]
        [--before REV]
        [--decide "64 KiB ranges req/s"]

``--before-src DIR`` runs BEFORE from a folder holding an ``oxidav`` package instead (e.g. a
copy of the working tree with only one's own files put back to their committed text), and
``--after-src DIR`` runs AFTER from such a folder (a snapshot of the working tree), so one
change is measured while others are still uncommitted and changing in the same checkout.

``--pg ADMIN_URL`` runs BEFORE and AFTER on PostgreSQL instead of SQLite: each gets a new
database per round (created through ``ADMIN_URL``, e.g. ``postgresql://postgres@127.0.0.1/
postgres``, and dropped at the end).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from pathlib import Path

from sqlalchemy import create_engine, text

from bench import files_large, files_propfind, files_put
from bench._files_servers import (
    Server,
    filesystem_server,
    median_ms,
    oxidav_env,
    oxidav_server,
)
from bench._revisions import add_side_options, before_source
from oxidav.db.engine import database_url

PROPFIND_SIZES = (500, 5000)
#: The folder of folders the ``propfind`` workload also lists (named properties only).
PROPFIND_FOLDERS = 500
#: Timed PROPFINDs per server, size and body in each round (``interleaved_propfinds``), and
#: the connections they take turns over.
PROPFIND_RUNS = 20
PROPFIND_CONNECTIONS = 5
#: The revision the speed work started from.
BEFORE_REV = "18fa247ee377bc0a9f566283423a7395069f15cc"
RSS_SLACK_MB = 5.0
#: Server CPU figures (``large``): shown to read a run on a busy machine, where wall-clock
#: rates swing with other processes; they do not decide the gate.
CPU_GET = "server CPU ms per GET"
CPU_RANGE = "server CPU ms per range"
INFORMATIONAL = (CPU_GET, CPU_RANGE)
#: The PROPFIND bodies of the ``propfind`` workload.
PROPFIND_BODIES = {**files_propfind.BODIES, "nextcloud": files_propfind.NEXTCLOUD}
#: The figures of each workload that can decide the verdict (``--decide``).
DECIDING = {
    "put": ("1 client", "8 client"),
    "large": ("PUT MB/s", "GET MB/s", "64 KiB ranges req/s", "peak RSS MB"),
    "propfind": (
        *(f"PROPFIND {size} {label} /s" for size in PROPFIND_SIZES for label in PROPFIND_BODIES),
        f"PROPFIND {PROPFIND_FOLDERS} folders named4 /s",
    ),
}

Factory = Callable[[], AbstractContextManager[Server]]
#: AFTER's source folder (``--after-src``); None: the working tree.
after_src: Path | None = None
#: ``--pg``: the PostgreSQL server's admin URL; None: SQLite.
pg_admin: str | None = None
#: The databases this run created (dropped at the end).
pg_databases: list[str] = []


def add_alice(env: dict[str, str], source: Path | None) -> None:
    # A new installation: made here, as ``--init`` would (older revisions lack the flag).
    Path(env["OXIDAV_DATA_DIR"]).mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "oxidav.cli", "user", "add", "alice", "--password", "secret"],
        env=env,
        cwd=source,
        check=True,
        stdout=subprocess.DEVNULL,
    )


def _pg_admin(statement: str) -> None:
    assert pg_admin is not None
    engine = create_engine(database_url(pg_admin), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            connection.execute(text(statement))
    finally:
        engine.dispose()


def fresh_pg_database(tag: str) -> str:
    """The URL of a new, empty PostgreSQL database (``--pg``)."""
    assert pg_admin is not None
    name = f"oxidav_gate_{os.getpid()}_{tag}".lower().replace("-", "_")
    _pg_admin(f'CREATE DATABASE "{name}"')
    pg_databases.append(name)
    return database_url(pg_admin).set(database=name).render_as_string(hide_password=False)


def drop_pg_databases() -> None:
    while pg_databases:
        _pg_admin(f'DROP DATABASE IF EXISTS "{pg_databases.pop()}" WITH (FORCE)')


def contenders(
    tmp: Path,
    before_src: Path,
    tag: str,
    fill_folder: Callable[[Path], None] | None = None,
    fill_oxidav: Callable[[dict[str, str]], None] | None = None,
) -> dict[str, Factory]:
    """Factories of the three servers, each with its own fresh data (filled by ``fill_*``)."""
    fs_root = tmp / f"fs-{tag}"
    fs_root.mkdir()
    if fill_folder is not None:
        fill_folder(fs_root)
    made: dict[str, Factory] = {"FilesystemProvider": lambda: filesystem_server(fs_root)}
    for name, source in (("BEFORE", before_src), ("AFTER", after_src)):
        db_url = fresh_pg_database(f"{name}_{tag}") if pg_admin else None
        env = oxidav_env(tmp / f"{name}-{tag}", db_url)
        add_alice(env, source)
        if fill_oxidav is not None:
            fill_oxidav(env)
        made[name] = functools.partial(oxidav_server, env, source, name)
    return made


def rotated(names: list[str], round_no: int) -> Iterator[str]:
    """The servers' order in round ``round_no``: rotated every second round and reversed every
    other one, so over each pair of rounds BEFORE runs right after AFTER as often as the other
    way round (a plain rotation put AFTER right behind BEFORE in two rounds of three, and the
    one that runs second starts on a machine still busy with the first one's work)."""
    shift = (round_no // 2) % len(names)
    order = names[shift:] + names[:shift]
    yield from reversed(order) if round_no % 2 else order


def run_put(tmp: Path, before_src: Path, rounds: int, files: int) -> dict[str, dict[str, float]]:
    rates: dict[str, dict[str, list[float]]] = {}
    factories = contenders(tmp, before_src, "put")
    for round_no in range(rounds):
        for name in rotated(list(factories), round_no):
            with factories[name]() as server:
                for clients in (1, 8):
                    run = f"r{round_no}c{clients}"
                    rate = files_put.put_all(server, files, clients, run)
                    rates.setdefault(name, {}).setdefault(f"{clients} client", []).append(rate)
                    if not files_put.verify(server, files, clients, run):
                        raise SystemExit(f"{name}: a file read back differs")
    return {n: {k: statistics.median(v) for k, v in m.items()} for n, m in rates.items()}


def run_large(
    tmp: Path, before_src: Path, rounds: int, mib: int, count: int, gets: int = 1
) -> dict[str, dict[str, float]]:
    source = tmp / "source.bin"
    expected = files_large.make_source(source, mib)
    figures: dict[str, dict[str, list[float]]] = {}
    for round_no in range(rounds):
        factories = contenders(tmp, before_src, f"large{round_no}")
        for name in rotated(list(factories), round_no):
            with factories[name]() as server:
                row = figures.setdefault(name, {})
                row.setdefault("PUT MB/s", []).append(files_large.put(server, source))
                for _ in range(gets):
                    cpu = server.cpu_seconds()
                    row.setdefault("GET MB/s", []).append(files_large.get(server, expected))
                    row.setdefault(CPU_GET, []).append((server.cpu_seconds() - cpu) * 1000)
                cpu = server.cpu_seconds()
                row.setdefault("64 KiB ranges req/s", []).append(
                    files_large.ranges(server, source, count)
                )
                cpu_ranges = server.cpu_seconds() - cpu
                row.setdefault("peak RSS MB", []).append(server.rss_kb("VmHWM") / 1024)
                row.setdefault(CPU_RANGE, []).append(cpu_ranges * 1000 / count)
    result = {n: {k: statistics.median(v) for k, v in m.items()} for n, m in figures.items()}
    for name, row in figures.items():
        result[name]["peak RSS MB"] = max(row["peak RSS MB"])
    return result


def interleaved_propfinds(
    servers: dict[str, Server], order: list[str], folder: str, body: bytes
) -> dict[str, tuple[float, bytes]]:
    """``{server: (median ms, last answer)}`` of ``PROPFIND_RUNS`` Depth:1 PROPFINDs of
    ``folder`` per server, one server after the other in ``order``, reversed every other run
    (what a server still does after its answer delays the next one in line): all three are
    timed over the same stretch of the machine's load. Each server's runs take turns over
    ``PROPFIND_CONNECTIONS`` keep-alive connections (each warmed up by one request first): the
    same code answers one connection markedly slower than another, connection after connection
    (bench/RESULTS.md), so one connection's luck must not decide a round."""
    headers = {"Depth": "1", "Content-Type": "application/xml"}
    clients = {
        name: [servers[name].client() for _ in range(PROPFIND_CONNECTIONS)] for name in order
    }
    samples: dict[str, list[float]] = {name: [] for name in order}
    answers: dict[str, bytes] = {}
    try:
        for run in range(-PROPFIND_CONNECTIONS, PROPFIND_RUNS):
            for name in order if run % 2 else reversed(order):
                client = clients[name][run % PROPFIND_CONNECTIONS]
                started = time.perf_counter()
                status, answer, _ = client.request("PROPFIND", folder, body or None, headers)
                elapsed = time.perf_counter() - started
                if status != 207:
                    raise SystemExit(f"{name}: PROPFIND {folder} answered {status}")
                if run >= 0:  # the first request of each connection warms it up
                    samples[name].append(elapsed)
                answers[name] = answer
    finally:
        for connections in clients.values():
            for client in connections:
                client.close()
    return {name: (median_ms(samples[name]), answers[name]) for name in order}


def run_propfind(tmp: Path, before_src: Path, rounds: int) -> dict[str, dict[str, float]]:
    sizes = list(PROPFIND_SIZES)
    figures: dict[str, dict[str, list[float]]] = {}
    for round_no in range(rounds):
        factories = contenders(
            tmp,
            before_src,
            f"propfind{round_no}",
            lambda root: files_propfind.populate_filesystem(root, sizes, PROPFIND_FOLDERS),
            lambda env: files_propfind.populate_oxidav(env, sizes, PROPFIND_FOLDERS),
        )
        answers: dict[str, dict[int, dict[str, str]]] = {}
        nextcloud: dict[str, dict[int, files_propfind.Propstats]] = {}
        with contextlib.ExitStack() as stack:
            servers = {name: stack.enter_context(make()) for name, make in factories.items()}
            for size in sizes:
                for label, body in PROPFIND_BODIES.items():
                    order = list(rotated(list(servers), round_no))
                    timed = interleaved_propfinds(servers, order, f"f{size}/", body)
                    for name, (ms, answer) in timed.items():
                        key = f"PROPFIND {size} {label} /s"
                        figures.setdefault(name, {}).setdefault(key, []).append(1000 / ms)
                        if label == "named4":
                            listed = files_propfind.listing(answer)
                            lengths = {k: v for k, v in listed.items() if v}
                            answers.setdefault(name, {})[size] = lengths
                        if label == "nextcloud":
                            stats = files_propfind.propstats(answer)
                            nextcloud.setdefault(name, {})[size] = stats
            order = list(rotated(list(servers), round_no))
            named = files_propfind.BODIES["named4"]
            timed = interleaved_propfinds(servers, order, f"d{PROPFIND_FOLDERS}/", named)
            for name, (ms, answer) in timed.items():
                key = f"PROPFIND {PROPFIND_FOLDERS} folders named4 /s"
                figures.setdefault(name, {}).setdefault(key, []).append(1000 / ms)
                listed = sorted(files_propfind.listing(answer))
                answers.setdefault(name, {})[-PROPFIND_FOLDERS] = dict.fromkeys(listed, "")
        seen_folders = [answers[name][-PROPFIND_FOLDERS] for name in factories]
        if any(other != seen_folders[0] for other in seen_folders):
            raise SystemExit("the servers list the folder of folders differently")
        if len(seen_folders[0]) != PROPFIND_FOLDERS + 1:
            raise SystemExit(f"the folder of folders lists {len(seen_folders[0])} members")
        for size in sizes:
            seen = [answers[name][size] for name in factories]
            if any(other != seen[0] for other in seen) or len(seen[0]) != size:
                raise SystemExit(f"the servers list the {size}-file folder differently")
            if nextcloud["BEFORE"][size] != nextcloud["AFTER"][size]:
                raise SystemExit(f"BEFORE and AFTER answer the {size}-file Nextcloud listing apart")
    return {n: {k: statistics.median(v) for k, v in m.items()} for n, m in figures.items()}


def report(figures: dict[str, dict[str, float]], decide: list[str] | None = None) -> bool:
    fs, before, after = figures["FilesystemProvider"], figures["BEFORE"], figures["AFTER"]
    print("| figure | FilesystemProvider | BEFORE | AFTER | AFTER/BEFORE | BEFORE/FS | AFTER/FS |")
    print("|---|---|---|---|---|---|---|")
    ok = True
    for key in after:
        b, a, f = before[key], after[key], fs[key]
        digits = 3 if key == CPU_RANGE else 1 if key.startswith("PROPFIND") else 0
        print(
            f"| {key} | {f:.{digits}f} | {b:.{digits}f} | {a:.{digits}f} | {a / b:.2f} "
            f"| {b / f:.2f} | {a / f:.2f} |"
        )
        if key in INFORMATIONAL or (decide and key not in decide and key != "peak RSS MB"):
            continue
        if key == "peak RSS MB" and decide and key in decide:
            if a >= b - RSS_SLACK_MB:
                print(f"GATE FAIL: {key}: AFTER {a:.0f} is not below BEFORE {b:.0f} - 5")
                ok = False
        elif key == "peak RSS MB":
            if a > b + RSS_SLACK_MB:
                print(f"GATE FAIL: {key}: AFTER {a:.0f} > BEFORE {b:.0f}")
                ok = False
        elif a <= b:
            print(f"GATE FAIL: {key}: AFTER {a:.0f} does not beat BEFORE {b:.0f} — roll back")
            ok = False
    return ok


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench files_gate")
    parser.add_argument("workload", choices=["put", "large", "propfind"])
    add_side_options(parser, BEFORE_REV)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--mib", type=int, default=512)
    parser.add_argument("--ranges", type=int, default=1000)
    parser.add_argument("--gets", type=int, default=1, help="large: GETs per round (median)")
    parser.add_argument(
        "--decide", action="append", help="a figure that decides the verdict (default: all)"
    )
    parser.add_argument("--pg", metavar="ADMIN_URL", help="run BEFORE and AFTER on PostgreSQL")
    args = parser.parse_args(argv)
    unknown = set(args.decide or ()) - set(DECIDING[args.workload])
    if unknown:
        parser.error(f"--decide: {args.workload} has no figure {', '.join(sorted(unknown))}")
    global after_src, pg_admin
    after_src = None if args.after_src is None else args.after_src.resolve()
    pg_admin = args.pg
    with tempfile.TemporaryDirectory() as name, contextlib.ExitStack() as cleanup:
        cleanup.callback(drop_pg_databases)
        tmp = Path(name)
        before_src = before_source(args, tmp)
        print(f"BEFORE: {args.before_src or args.before}")
        if args.workload == "put":
            figures = run_put(tmp, before_src, args.rounds, args.files)
        elif args.workload == "propfind":
            figures = run_propfind(tmp, before_src, args.rounds)
        else:
            figures = run_large(tmp, before_src, args.rounds, args.mib, args.ranges, args.gets)
    ok = report(figures, args.decide)
    print("GATE PASS" if ok else "GATE FAIL")
    return 0 if ok else 1
