"""BEFORE/AFTER gate of the server time a small PUT costs, without HTTP (issue 8).

``files_gate put`` times whole HTTP round trips with a client on the same 2-core machine: a
change worth 3 % of a PUT's CPU disappears in its ±20 % from one minute to the next. This gate
measures what such a change is made for: the CPU time one thread spends per 4 KiB PUT through
oxidav's WSGI app (the files provider, the Nextcloud and authz middleware, the SQLite commit),
called in-process. Each measurement is a fresh process on a fresh data folder
(``_put_cpu_worker``: ``--warmup`` untimed PUTs, then ``--files`` timed ones); BEFORE and AFTER
run in turn, ``--pairs`` times, alternating which goes first, and the verdict is the median of
the pairs' ratios BEFORE/AFTER, so a drift of the machine's speed hits both sides of a pair.
Every file is read back through the app, and both must return the same bytes and statuses.

``--workload caldav`` times event PUTs into a calendar that already holds ``--warmup`` events
instead of file PUTs (the CalDAV PUT path: parsing, validation, the index, the change log).

``--figure wall`` decides on the wall-clock time per PUT instead, for a change to what the
thread waits for rather than what it computes (the syncs of a SQLite checkpoint); the other
figure is shown too.

Exits 1 unless the median ratio is above 1.0 (AFTER spends less per PUT), or when the
answers differ.

    python -m bench files_put_cpu [--pairs 8] [--files 4000] [--warmup 500] [--figure wall]
        [--workload caldav] [--before REV | --before-src DIR] [--after-src DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench._revisions import REPO, add_side_options, before_source

#: The figures of a measurement, µs per PUT: the thread's CPU time, the wall-clock time.
FIGURES = ("cpu", "wall")
WORKER = Path(__file__).with_name("_put_cpu_worker.py")


def measure(
    source: Path, data_dir: Path, files: int, warmup: int, workload: str = "files"
) -> dict[str, object]:
    """One worker process on ``source``'s ``oxidav`` package and a new data folder."""
    env = {
        **os.environ,
        "PYTHONPATH": str(source),
        "OXIDAV_DATA_DIR": str(data_dir),
        "OXIDAV_LOG_LEVEL": "WARNING",
    }
    # A new installation: made here, as ``--init`` would (older revisions lack the flag).
    data_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [sys.executable, "-m", "oxidav.cli", "user", "add", "alice", "--password", "secret"],
        env=env,
        check=True,
        stdout=subprocess.DEVNULL,
    )
    done = subprocess.run(
        [sys.executable, str(WORKER), str(data_dir), str(files), str(warmup), workload],
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench files_put_cpu")
    add_side_options(parser)
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--files", type=int, default=4000)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--figure", choices=FIGURES, default="cpu", help="what decides")
    parser.add_argument("--workload", choices=("files", "caldav"), default="files")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(dir="/var/tmp") as name:
        tmp = Path(name)
        before = before_source(args, tmp)
        print(f"BEFORE: {args.before_src or args.before}")
        after = REPO if args.after_src is None else args.after_src.resolve()
        print(f"AFTER: {after}/oxidav")
        seen: dict[tuple[str, str], list[float]] = {
            (name, figure): [] for name in ("BEFORE", "AFTER") for figure in FIGURES
        }
        answers: set[object] = set()
        for pair in range(args.pairs):
            order = [("BEFORE", before), ("AFTER", after)]
            for name, source in order if pair % 2 == 0 else reversed(order):
                found = measure(
                    source, tmp / f"{name}-{pair}", args.files, args.warmup, args.workload
                )
                for figure in FIGURES:
                    seen[name, figure].append(float(str(found[figure])))
                answers.add(found["answers"])
            print(
                f"pair {pair}: "
                + ", ".join(
                    f"{figure} BEFORE {seen['BEFORE', figure][-1]:.0f} µs"
                    f" AFTER {seen['AFTER', figure][-1]:.0f} µs"
                    for figure in FIGURES
                ),
                flush=True,
            )
    if len(answers) != 1:
        print("GATE FAIL: BEFORE and AFTER read back different files")
        return 1
    what = "event PUT" if args.workload == "caldav" else "4 KiB PUT"
    print(f"| µs per {what} | BEFORE | AFTER | BEFORE/AFTER (median of pairs) |")
    print("|---|---|---|---|")
    ratios: dict[str, float] = {}
    for figure in FIGURES:
        before_figures, after_figures = seen["BEFORE", figure], seen["AFTER", figure]
        ratios[figure] = statistics.median(
            b / a for b, a in zip(before_figures, after_figures, strict=True)
        )
        print(
            f"| {figure} | {statistics.median(before_figures):.0f} "
            f"| {statistics.median(after_figures):.0f} | {ratios[figure]:.3f} |"
        )
    if ratios[args.figure] <= 1.0:
        print(f"GATE FAIL: AFTER does not spend less {args.figure} time per PUT — roll back")
        return 1
    print("GATE PASS")
    return 0
