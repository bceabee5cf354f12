"""``oxidav push`` against the other ways to seed a server, on one tree, in one run.

The tree is deterministic and shaped like the seed's (13,068 files, about 41 MB: nearly all
1-3 KiB, a few hundred 20-100 KiB, a dozen of 0.25-1 MiB; about 400 folders up to 4 deep,
Unicode names, 1 % empty). Each client gets a fresh default ``oxidav serve`` (SQLite, local
blobs) and runs three times: the seed, a re-run with nothing changed, and a delta (1 % of the
files edited, 20 new). After the seed and the delta the server tree must equal the local tree
(every file read back); a client that fails or leaves a difference fails the benchmark.

Clients: ``oxidav push`` (as a user runs it), ``nextcloudcmd`` with bulk upload off (the
installed 3.7 client fails bulk batches with empty files), ``rclone copy --transfers 8``
(``--peers`` chooses; rclone's seed takes minutes). Reported: wall seconds of each run, the
client's peak RSS, the server's peak RSS over the client's three runs.

Gate (issue 28): against nextcloudcmd in the same run, push's seed <= 0.1x, no-change re-run
<= 0.3x, delta <= 0.5x; push's client peak RSS and the server's peak RSS under push <= 150 MiB.
Exit 1 when a bar is missed, 2 when a run fails or a tree differs.

    python -m bench push_tree [--files 13068] [--peers nextcloudcmd,rclone]
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import http.client
import os
import random
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from bench._files_servers import Server, add_alice, oxidav_env, oxidav_server

NAMES = ("rapport", "été", "日本語", "naïve café", "Ωmega", "straße", "notes", "a  b", "проект")
MIB = 1 << 20


def make_tree(root: Path, files: int, seed: int = 13068) -> None:
    rng = random.Random(seed)
    folders = [root]
    root.mkdir(parents=True)
    for i in range(max(4, files // 33)):
        parents = [f for f in folders if len(f.relative_to(root).parts) < 4]
        folder = rng.choice(parents) / f"{NAMES[i % len(NAMES)]} {i}"
        folder.mkdir()
        folders.append(folder)
    for i in range(files):
        roll = rng.random()
        if roll < 0.01:
            size = 0
        elif roll < 0.011:
            size = rng.randint(256 << 10, 1 << 20)
        elif roll < 0.025:
            size = rng.randint(20 << 10, 100 << 10)
        else:
            size = rng.randint(1 << 10, 3 << 10)
        name = f"{NAMES[(i * 7) % len(NAMES)]} {i}.dat"
        (rng.choice(folders) / name).write_bytes(rng.randbytes(size))


def tree_files(root: Path) -> list[Path]:
    """The tree's files, without what a client keeps beside them (nextcloudcmd's journal)."""
    return sorted(
        p
        for p in root.rglob("*")
        if p.is_file() and not p.name.startswith((".sync_", "._sync_", ".nextcloudsync"))
    )


def edit_tree(root: Path, seed: int = 1) -> None:
    """1 % of the files rewritten (new bytes, same size), 20 new files."""
    rng = random.Random(seed)
    files = tree_files(root)
    for path in rng.sample(files, max(1, len(files) // 100)):
        path.write_bytes(rng.randbytes(max(1, path.stat().st_size)))
    folders = sorted({p.parent for p in files})
    for i in range(20):
        (rng.choice(folders) / f"new {i}.dat").write_bytes(rng.randbytes(rng.randint(1, 4096)))


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in tree_files(root)
    }


def server_matches(server: Server, expected: dict[str, str]) -> bool:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=120)
    auth = "Basic " + base64.b64encode(b"alice:secret").decode()
    try:
        for path, digest in expected.items():
            conn.request("GET", server.base + quote(path), headers={"Authorization": auth})
            response = conn.getresponse()
            body = response.read()
            if response.status != 200 or hashlib.sha256(body).hexdigest() != digest:
                print(f"  differs: {path} ({response.status})")
                return False
    finally:
        conn.close()
    return True


@dataclass
class Run:
    seconds: float
    client_peak_mib: float


def timed(command: list[str], env: dict[str, str]) -> Run:
    """Run ``command``; its output goes to a file (a pipe nobody reads would stall it)."""
    with tempfile.TemporaryFile() as output:
        started = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=output, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(process.pid, 0)
        seconds = time.perf_counter() - started
        if os.waitstatus_to_exitcode(status) != 0:
            output.seek(0)
            text = output.read().decode(errors="replace")
            raise RuntimeError(f"{command[0]} failed: {text[-2000:]}")
    return Run(seconds, usage.ru_maxrss / 1024)


Client = Callable[[Path, Server, Path], list[str]]


def push_command(local: Path, server: Server, work: Path) -> list[str]:
    return [
        str(Path(sys.executable).parent / "oxidav"), "push", str(local),
        f"http://127.0.0.1:{server.port}", "--user", "alice", "--state-dir", str(work / "state"),
    ]  # fmt: skip


def nextcloudcmd_command(local: Path, server: Server, work: Path) -> list[str]:
    return [
        "nextcloudcmd", "--non-interactive", "-u", "alice", "-p", "secret", str(local),
        f"http://127.0.0.1:{server.port}",
    ]  # fmt: skip


def rclone_command(local: Path, server: Server, work: Path) -> list[str]:
    return ["rclone", "copy", "--transfers", "8", str(local), "ox:"]


def client_env(name: str, server: Server, work: Path) -> dict[str, str]:
    env = {**os.environ, "OXIDAV_PUSH_PASSWORD": "secret"}
    if name == "rclone":
        obscured = subprocess.run(
            ["rclone", "obscure", "secret"], capture_output=True, text=True, check=True
        ).stdout.strip()
        env.update(
            RCLONE_CONFIG=str(work / "rclone.conf"),
            RCLONE_CONFIG_OX_TYPE="webdav",
            RCLONE_CONFIG_OX_URL=f"http://127.0.0.1:{server.port}{server.base}",
            RCLONE_CONFIG_OX_VENDOR="nextcloud",
            RCLONE_CONFIG_OX_USER="alice",
            RCLONE_CONFIG_OX_PASS=obscured,
        )
    return env


CLIENTS: dict[str, Client] = {
    "push": push_command,
    "nextcloudcmd": nextcloudcmd_command,
    "rclone": rclone_command,
}


def run_client(name: str, tree: Path, work: Path) -> tuple[dict[str, Run], float]:
    """Seed, no-change and delta runs of client ``name``; the server's peak RSS in MiB."""
    base = work / name
    base.mkdir()
    local = base / "local"
    subprocess.run(["cp", "-a", str(tree), str(local)], check=True)
    env = oxidav_env(base / "data")
    env["OXIDAV_NEXTCLOUD_BULK_UPLOAD"] = "false"
    add_alice(env)
    runs: dict[str, Run] = {}
    with oxidav_server(env) as server:
        command = CLIENTS[name](local, server, base)
        cenv = client_env(name, server, base)
        runs["seed"] = timed(command, cenv)
        if not server_matches(server, digests(local)):
            raise RuntimeError(f"{name}: the server tree differs after the seed")
        runs["no change"] = timed(command, cenv)
        edit_tree(local)
        runs["delta"] = timed(command, cenv)
        if not server_matches(server, digests(local)):
            raise RuntimeError(f"{name}: the server tree differs after the delta")
        server_peak = server.rss_kb("VmHWM") / 1024
    subprocess.run(["rm", "-rf", str(base)], check=True)
    return runs, server_peak


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench push_tree")
    parser.add_argument("--files", type=int, default=13068)
    parser.add_argument("--peers", default="nextcloudcmd", help="nextcloudcmd,rclone")
    args = parser.parse_args(argv)
    peers = [p for p in args.peers.split(",") if p]
    with tempfile.TemporaryDirectory(prefix="bench-push-") as tmp:
        work = Path(tmp)
        tree = work / "tree"
        make_tree(tree, args.files)
        sizes = [p.stat().st_size for p in tree.rglob("*") if p.is_file()]
        folders = sum(1 for p in tree.rglob("*") if p.is_dir())
        print(f"tree: {len(sizes)} files, {sum(sizes) / 1e6:.1f} MB, {folders} folders")
        results: dict[str, tuple[dict[str, Run], float]] = {}
        for name in ["push", *peers]:
            try:
                results[name] = run_client(name, tree, work)
            except RuntimeError as exc:
                print(f"{name}: FAILED: {exc}")
                return 2
            runs, server_peak = results[name]
            line = ", ".join(f"{k} {v.seconds:.2f} s" for k, v in runs.items())
            client_peak = max(v.client_peak_mib for v in runs.values())
            print(
                f"{name:13s} {line}; client peak {client_peak:.0f} MiB, "
                f"server peak {server_peak:.0f} MiB"
            )
    push_runs, push_server = results["push"]
    failed = []
    if "nextcloudcmd" in results:
        peer = results["nextcloudcmd"][0]
        for phase, bar in (("seed", 0.1), ("no change", 0.3), ("delta", 0.5)):
            ratio = push_runs[phase].seconds / peer[phase].seconds
            ok = ratio <= bar
            print(
                f"{phase}: push / nextcloudcmd = {ratio:.3f} (bar {bar}) {'ok' if ok else 'MISSED'}"
            )
            if not ok:
                failed.append(phase)
    client_peak = max(v.client_peak_mib for v in push_runs.values())
    for label, value in (("push client peak RSS", client_peak), ("server peak RSS", push_server)):
        ok = value <= 150
        print(f"{label}: {value:.0f} MiB (bar 150) {'ok' if ok else 'MISSED'}")
        if not ok:
            failed.append(label)
    return 1 if failed else 0
