"""Password hashing as a weapon: a flood of logins with fresh user names from one address.

For BEFORE (``--before``, default ``main``) and AFTER (this checkout), an ``oxidav serve``
process on SQLite: the logged-in user (``admin``, credential cached by one request) sends
PROPFINDs one after another while ``--rounds`` waves of ``--concurrency`` requests with fresh,
unknown user names arrive at once. Reported per side: the server's RSS before and at its peak
(sampled from /proc every 10 ms), the statuses of the flood, and the latency of the logged-in
user's requests during it. The run fails unless every logged-in request got 207 on AFTER and
AFTER's RSS growth is smaller than BEFORE's and within issue 24's target (``TARGET_GROWTH_MIB``).

    python -m bench auth_flood [--concurrency 24] [--rounds 3] [--before main]
"""

from __future__ import annotations

import argparse
import base64
import http.client
import os
import statistics
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from bench._revisions import REPO, add_side_options, before_source
from tests.support.live import start_server_process

PASSWORD = "flood-bench-secret"
#: Issue 24's target: the server's RSS grows by at most this much under the flood.
TARGET_GROWTH_MIB = 32
BODY = (
    b'<?xml version="1.0"?><d:propfind xmlns:d="DAV:"><d:prop>'
    b"<d:current-user-principal/></d:prop></d:propfind>"
)


@dataclass
class Figures:
    rss_before_mib: float = 0.0
    rss_peak_mib: float = 0.0
    rss_after_mib: float = 0.0
    flood: Counter[int] = field(default_factory=Counter)
    user_statuses: Counter[int] = field(default_factory=Counter)
    user_latencies: list[float] = field(default_factory=list)


def rss_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def propfind(port: int, user: str, password: str) -> tuple[int, float]:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    headers = {"Authorization": f"Basic {token}", "Depth": "0", "Content-Type": "application/xml"}
    started = time.perf_counter()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        conn.request("PROPFIND", "/remote.php/dav/", body=BODY, headers=headers)
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - started
    finally:
        conn.close()


def run_side(source: Path, tmp: Path, concurrency: int, rounds: int) -> Figures:
    env = {
        "PYTHONPATH": str(source),
        "OXIDAV_ADMIN_PASSWORD": PASSWORD,
        "OXIDAV_THREADS": str(max(32, concurrency + 8)),
    }
    server = start_server_process(["--data-dir", str(tmp / "data"), "--port", "0"], env, cwd=tmp)
    figures = Figures()
    try:
        port = int(server.base_url.rsplit(":", 1)[1])
        pid = server.process.pid
        status, _ = propfind(port, "admin", PASSWORD)  # cached from now on
        assert status == 207, status
        figures.rss_before_mib = figures.rss_peak_mib = rss_mib(pid)
        done = threading.Event()

        def sample() -> None:
            while not done.is_set():
                figures.rss_peak_mib = max(figures.rss_peak_mib, rss_mib(pid))
                done.wait(0.01)

        def logged_in_user() -> None:
            while not done.is_set():
                status, seconds = propfind(port, "admin", PASSWORD)
                figures.user_statuses[status] += 1
                figures.user_latencies.append(seconds)

        watchers = [threading.Thread(target=sample), threading.Thread(target=logged_in_user)]
        for thread in watchers:
            thread.start()
        with ThreadPoolExecutor(max_workers=concurrency) as pool:
            for wave in range(rounds):
                names = [f"ghost-{wave}-{i}" for i in range(concurrency)]
                for status, _ in pool.map(lambda name: propfind(port, name, "guess"), names):
                    figures.flood[status] += 1
        done.set()
        for thread in watchers:
            thread.join()
        figures.rss_after_mib = rss_mib(pid)
    finally:
        server.stop()
    return figures


def report(name: str, figures: Figures) -> None:
    latencies = sorted(figures.user_latencies)
    flood = ", ".join(f"{status}: {count}" for status, count in sorted(figures.flood.items()))
    users = ", ".join(f"{s}: {c}" for s, c in sorted(figures.user_statuses.items()))
    print(
        f"{name}: RSS {figures.rss_before_mib:.0f} → peak {figures.rss_peak_mib:.0f} MiB "
        f"(+{figures.rss_peak_mib - figures.rss_before_mib:.0f}), after "
        f"{figures.rss_after_mib:.0f} MiB; flood {flood}; logged-in user {users}, latency "
        f"median {statistics.median(latencies) * 1000:.0f} ms, "
        f"max {latencies[-1] * 1000:.0f} ms"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench auth_flood")
    parser.add_argument("--concurrency", type=int, default=24)
    parser.add_argument("--rounds", type=int, default=3)
    add_side_options(parser, before="main")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        before_src = before_source(args, tmp)
        after_src = args.after_src.resolve() if args.after_src else REPO
        sides = {}
        for side, source in (("BEFORE", before_src), ("AFTER", after_src)):
            (tmp / side).mkdir()
            sides[side] = run_side(source, tmp / side, args.concurrency, args.rounds)
            report(side, sides[side])
    after = sides["AFTER"]
    growth = {k: v.rss_peak_mib - v.rss_before_mib for k, v in sides.items()}
    ok = (
        set(after.user_statuses) == {207}
        and growth["AFTER"] < growth["BEFORE"]
        and growth["AFTER"] <= TARGET_GROWTH_MIB
    )
    print(f"MALLOC_ARENA_MAX={os.environ.get('MALLOC_ARENA_MAX', 'unset')}")
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
