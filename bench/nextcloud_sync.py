"""nextcloudcmd's first sync of a 1000-file tree, with bulk upload advertised vs not.

Each variant gets its own fresh ``oxidav serve`` process (SQLite, local blobs) on 127.0.0.1;
only the ``nextcloud_bulk_upload`` setting differs (``OXIDAV_NEXTCLOUD_BULK_UPLOAD``), which
switches ``dav.bulkupload`` in the capabilities (with ``nextcloud_bulk_min_desktop=0`` so the
installed 3.7.3 is offered it: the tree holds no empty file). The tree is the acceptance tree
of issue 4 (``tests.nextcloud.nc_sync.make_tree``: 980 files under 1 MB, 18 of 1 to 10 MB, two over
10 MB, 40 folders, Unicode names). Wall seconds of ``nextcloudcmd`` are measured per round
(best of ``--rounds``); after each run LOCALDIR must still hold the generated tree and the
server tree must be byte-equal to it.

A measurement, not a speed gate: it reports both times and the ratio, and exits 0 when every
sync succeeds with byte-equal trees, whichever variant is faster; it exits 1 only when a
``nextcloudcmd`` run fails or a tree differs.

    python -m bench nextcloud_sync [--rounds 1] [--small 980]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from bench._files_servers import add_alice, oxidav_env, oxidav_server
from tests.support.nextcloud_sync import TreeShape, local_files, make_tree


def _server_digest(port: int, paths: list[str]) -> dict[str, str]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    auth = "Basic " + base64.b64encode(b"alice:secret").decode()
    digests: dict[str, str] = {}
    try:
        for path in paths:
            conn.request(
                "GET", "/remote.php/dav/files/alice/" + quote(path), headers={"Authorization": auth}
            )
            response = conn.getresponse()
            body = response.read()
            if response.status == 200:
                digests[path] = hashlib.sha256(body).hexdigest()
    finally:
        conn.close()
    return digests


class SyncFailed(Exception):
    """A ``nextcloudcmd`` run failed, or a tree after it differs from the generated one."""


def _one_sync(work: Path, tree: Path, bulk: bool, expected: dict[str, str]) -> float:
    data = work / ("data-bulk" if bulk else "data-plain")
    env = oxidav_env(data)
    env["OXIDAV_NEXTCLOUD_BULK_UPLOAD"] = "true" if bulk else "false"
    env["OXIDAV_NEXTCLOUD_BULK_MIN_DESKTOP"] = "0"
    add_alice(env)
    local = work / ("local-bulk" if bulk else "local-plain")
    subprocess.run(["cp", "-a", str(tree), str(local)], check=True)
    with oxidav_server(env) as server:
        started = time.perf_counter()
        done = subprocess.run(
            [
                "nextcloudcmd",
                "--non-interactive",
                "-u",
                "alice",
                "-p",
                "secret",
                str(local),
                f"http://127.0.0.1:{server.port}",
            ],
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        if done.returncode != 0:
            raise SyncFailed(f"nextcloudcmd failed: {done.stderr[-2000:]}")
        here = _digests(local)
        if here != expected:
            raise SyncFailed("LOCALDIR differs from the generated tree after the sync")
        if _server_digest(server.port, sorted(here)) != here:
            raise SyncFailed("the server tree differs from LOCALDIR")
    subprocess.run(["rm", "-rf", str(local), str(data)], check=True)
    return seconds


def _digests(root: Path) -> dict[str, str]:
    return {p: hashlib.sha256(b).hexdigest() for p, b in local_files(root).items()}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench nextcloud_sync")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--small", type=int, default=980)
    args = parser.parse_args(argv)
    shape = TreeShape(small=args.small, medium=18, large=2, folders=40)
    with tempfile.TemporaryDirectory(prefix="bench-nc-") as tmp:
        work = Path(tmp)
        tree = work / "tree"
        make_tree(tree, shape)
        files = local_files(tree)
        total = sum(len(b) for b in files.values())
        print(f"tree: {len(files)} files, {total / 1e6:.1f} MB, {shape}")
        expected = {p: hashlib.sha256(b).hexdigest() for p, b in files.items()}
        best: dict[bool, float] = {}
        for round_ in range(args.rounds):
            for bulk in (False, True):
                label = "bulk upload" if bulk else "no bulk (PUT each)"
                try:
                    seconds = _one_sync(work, tree, bulk, expected)
                except SyncFailed as exc:
                    print(f"round {round_ + 1}: {label}: FAILED: {exc}")
                    return 1
                best[bulk] = min(best.get(bulk, seconds), seconds)
                print(f"round {round_ + 1}: {label:20s} {seconds:7.2f} s")
    print(
        f"best: no bulk {best[False]:.2f} s, bulk {best[True]:.2f} s, "
        f"speed-up x{best[False] / best[True]:.2f}"
    )
    return 0
