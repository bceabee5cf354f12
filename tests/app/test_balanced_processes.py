"""Three ``oxidav serve`` processes on one PostgreSQL database and one S3 endpoint (moto's
server mode), behind a real nginx doing round robin without stickiness.

rclone syncs a tree through nginx while one process is killed (SIGKILL) and started again;
the tree arrives whole. A change made through one process is seen through the others on the
next request: a file's ETag, a lock, a revoked link share. Not yet a changed password (strict
xfail: the credential cache is per process).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlencode

import boto3
import pytest
from moto.server import ThreadedMotoServer

from tests.support.cli import run_oxidav
from tests.support.live import LiveServer, ServerProcess, stable_port, start_server_process
from tests.support.nextcloud_sync import TreeShape, local_files, make_tree
from tests.support.nginx import nginx_available, nginx_proxy
from tests.support.postgres import fresh_pg_database
from tests.support.rclone import rclone_env
from tests.support.tls import self_signed

pytestmark = [
    pytest.mark.pg,
    pytest.mark.skipif(not nginx_available(), reason="nginx is not installed"),
]

AWS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing"}
FORM = {"OCS-APIRequest": "true", "Content-Type": "application/x-www-form-urlencoded"}
SHARES = "/ocs/v2.php/apps/files_sharing/api/v1/shares"


@pytest.fixture
def s3_url() -> Iterator[str]:
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        endpoint = f"http://{host}:{port}"
        boto3.client(
            "s3",
            endpoint_url=endpoint,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        ).create_bucket(Bucket="oxidav")
        yield f"s3://oxidav/blobs?endpoint_url={endpoint}&region=us-east-1"
    finally:
        server.stop()


@pytest.fixture
def pg_url(request: pytest.FixtureRequest) -> Iterator[str]:
    yield from fresh_pg_database(request.getfixturevalue("pg_template"))


def _cli(env: dict[str, str], *args: str) -> None:
    done = run_oxidav({**os.environ, **env}, *args, timeout=120)
    assert done.returncode == 0, done.stderr


class Cluster:
    """The processes, each reachable directly (``node(i)``) and all through nginx."""

    def __init__(self, tmp_path: Path, env: dict[str, str]) -> None:
        self.tmp_path = tmp_path
        self.env = env
        self.processes: list[ServerProcess] = []
        self.users = {"alice": "secret", "bob": "secret"}

    def start(self, index: int, port: int) -> ServerProcess:
        env = {**self.env, "OXIDAV_DATA_DIR": str(self.tmp_path / f"node{index}")}
        deadline = time.monotonic() + 60
        while True:
            try:
                process = start_server_process(["--port", str(port)], env=env)
                break
            except RuntimeError:
                # A restart on the old port: the port (from the ephemeral range) may be held
                # for a moment by some connection's local end; an operator's restart retries.
                if not port or time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        if index < len(self.processes):
            self.processes[index] = process
        else:
            self.processes.append(process)
        return process

    def node(self, index: int) -> LiveServer:
        server = LiveServer(self.processes[index].base_url, settings=None)  # type: ignore[arg-type]
        server.users = self.users
        return server

    def port(self, index: int) -> int:
        return self.node(index).port


@pytest.fixture
def cluster(tmp_path: Path, pg_url: str, s3_url: str) -> Iterator[Cluster]:
    env = {
        **AWS,
        "OXIDAV_DATABASE_URL": pg_url,
        "OXIDAV_BLOB_STORE": s3_url,
        "OXIDAV_TRUSTED_PROXIES": "127.0.0.1",
        "OXIDAV_TRUSTED_HOSTS": "localhost",
        "OXIDAV_SWEEP_INTERVAL_SECONDS": "0",
    }
    for name in ("alice", "bob"):
        _cli(
            {**env, "OXIDAV_DATA_DIR": str(tmp_path / "node0")},
            "user",
            "add",
            name,
            "--password",
            "secret",
            "--init",
        )
    nodes = Cluster(tmp_path, env)
    try:
        for index in range(3):
            nodes.start(index, port=stable_port())
        yield nodes
    finally:
        for process in nodes.processes:
            process.stop()


def _etag(server: LiveServer, path: str) -> str:
    response = server.request("HEAD", path)
    assert response.status == 200
    return response.headers["etag"]


def test_a_change_through_one_process_is_seen_through_the_others(cluster: Cluster) -> None:
    a, b, c = (cluster.node(i) for i in range(3))
    path = "/remote.php/dav/files/alice/e.txt"

    # ETags.
    assert a.request("PUT", path, b"one").status == 201
    first = _etag(a, path)
    assert _etag(b, path) == _etag(c, path) == first
    assert b.request("PUT", path, b"two").status == 204
    second = _etag(c, path)
    assert second != first and _etag(a, path) == second
    assert c.request("GET", path).body == b"two"

    # Locks.
    lock = a.request(
        "LOCK",
        path,
        '<?xml version="1.0"?><d:lockinfo xmlns:d="DAV:"><d:lockscope><d:exclusive/>'
        "</d:lockscope><d:locktype><d:write/></d:locktype></d:lockinfo>",
        headers={"Timeout": "Second-600"},
    )
    assert lock.status == 200
    token = lock.headers["lock-token"]
    assert b.request("PUT", path, b"three").status == 423
    assert c.request("PUT", path, b"three", headers={"If": f"({token})"}).status == 204
    assert b.request("UNLOCK", path, headers={"Lock-Token": token}).status == 204
    assert a.request("PUT", path, b"four").status == 204

    # A link share, revoked through another process.
    created = a.request(
        "POST", f"{SHARES}?format=json", urlencode({"path": "/e.txt", "shareType": 3}), headers=FORM
    )
    assert created.status == 200, created.text
    share = json.loads(created.body)["ocs"]["data"]
    page = f"/s/{share['token']}/download"
    assert b.request("GET", page, user=None).body == b"four"
    deleted = c.request("DELETE", f"{SHARES}/{share['id']}?format=json", headers=FORM)
    assert deleted.status == 200
    assert a.request("GET", page, user=None).status == 404
    assert b.request("GET", page, user=None).status == 404


def test_a_changed_password_stops_working_in_every_process_at_once(cluster: Cluster) -> None:
    nodes = [cluster.node(i) for i in range(3)]
    for node in nodes:  # each process has the credential cached now
        assert node.request("PROPFIND", "/remote.php/dav/", headers={"Depth": "0"}).status == 207
    _cli(
        {**cluster.env, "OXIDAV_DATA_DIR": str(cluster.tmp_path / "node0")},
        "user",
        "passwd",
        "alice",
        "--password",
        "changed",
    )
    for node in nodes:
        assert node.request("PROPFIND", "/remote.php/dav/", headers={"Depth": "0"}).status == 401
        ok = node.request(
            "PROPFIND", "/remote.php/dav/", headers={"Depth": "0"}, password="changed"
        )
        assert ok.status == 207


def test_failed_logins_through_every_process_throttle_them_all(cluster: Cluster) -> None:
    """Guesses spread over the processes (round robin, as a balancer sends them) count as many
    as through one: bob's tenth failure through any of them throttles him in all three."""
    nodes = [cluster.node(i) for i in range(3)]
    propfind = ("PROPFIND", "/remote.php/dav/")
    for attempt in range(10):  # auth_max_failures
        answer = nodes[attempt % 3].request(
            *propfind, headers={"Depth": "0"}, user="bob", password="guess"
        )
        assert answer.status == 401
    for node in nodes:
        refused = node.request(*propfind, headers={"Depth": "0"}, user="bob")
        assert refused.status == 429 and int(refused.headers["retry-after"]) > 0
    assert nodes[0].request(*propfind, headers={"Depth": "0"}).status == 207  # alice is not


@pytest.mark.parametrize(
    "shape",
    [
        pytest.param(TreeShape(small=20, medium=1, large=0, folders=3), id="ci"),
        pytest.param(
            TreeShape(small=80, medium=6, large=2, folders=8), id="full", marks=pytest.mark.slow
        ),
    ],
)
def test_rclone_through_nginx_while_a_process_is_killed_and_restarted(
    cluster: Cluster, tmp_path: Path, shape: TreeShape
) -> None:
    cert = self_signed(tmp_path / "tls")
    upstreams = [f"127.0.0.1:{cluster.port(i)}" for i in range(3)]
    source = tmp_path / "source"
    make_tree(source, shape)
    with nginx_proxy(tmp_path / "nginx", upstreams, cert) as port:
        env = rclone_env(
            tmp_path, f"https://localhost:{port}/remote.php/dav/files/alice/", ca_cert=cert.cert
        )
        sync = subprocess.Popen(
            ["rclone", "copy", "--transfers", "4", "--bwlimit", "2M", str(source), "ox:tree"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        try:
            # Once the first files are in, kill one process and start it again on its port.
            _wait_for_folder(cluster, "/remote.php/dav/files/alice/tree/", sync)
            assert sync.poll() is None, "rclone finished before the kill"
            victim = cluster.processes[1]
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait(timeout=20)
            cluster.start(1, port=int(upstreams[1].rsplit(":", 1)[1]))
            output, _ = sync.communicate(timeout=300)
        finally:
            if sync.poll() is None:
                sync.kill()
        assert sync.returncode == 0, output[-3000:]
        for args in (
            ("check", str(source), "ox:tree"),
            ("copy", "ox:tree", str(tmp_path / "back")),
        ):
            done = subprocess.run(
                ["rclone", *args], env=env, capture_output=True, text=True, timeout=300
            )
            assert done.returncode == 0, (args, done.stderr[-3000:])
        assert local_files(tmp_path / "back") == local_files(source)


def _wait_for_folder(cluster: Cluster, path: str, client: subprocess.Popen[str]) -> None:
    """Until ``path`` exists (the client's first files are in), while the client still runs."""
    deadline = time.monotonic() + 120
    while cluster.node(0).request("PROPFIND", path, headers={"Depth": "0"}).status != 207:
        assert time.monotonic() < deadline and client.poll() is None
        time.sleep(0.1)


def _nextcloudcmd(local: Path, url: str) -> subprocess.Popen[str]:
    command = ["nextcloudcmd", "--non-interactive", "--trust", "-u", "alice", "-p", "secret"]
    return subprocess.Popen(
        [*command, str(local), url], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )


def test_nextcloudcmd_through_nginx_while_a_process_is_killed_and_restarted(
    cluster: Cluster, tmp_path: Path
) -> None:
    """The desktop client syncs through the balancer while one process dies. A request under
    way on the killed process fails (nginx does not send a non-idempotent request elsewhere),
    so the client may report that item failed; its next sync, as the desktop client runs one
    after every failure, completes: every file arrives, byte-exact, and a fresh client
    downloads exactly that tree."""
    cert = self_signed(tmp_path / "tls")
    upstreams = [f"127.0.0.1:{cluster.port(i)}" for i in range(3)]
    up = tmp_path / "nc-up"
    make_tree(up / "synced", TreeShape(small=60, medium=2, large=1, folders=4), seed=31)
    with nginx_proxy(tmp_path / "nginx", upstreams, cert) as port:
        url = f"https://localhost:{port}"
        sync = _nextcloudcmd(up, url)
        try:
            _wait_for_folder(cluster, "/remote.php/dav/files/alice/synced/", sync)
            victim = cluster.processes[2]
            victim.process.send_signal(signal.SIGKILL)
            victim.process.wait(timeout=20)
            cluster.start(2, port=int(upstreams[2].rsplit(":", 1)[1]))
            sync.communicate(timeout=600)
        finally:
            if sync.poll() is None:
                sync.kill()
        again = _nextcloudcmd(up, url)
        output, _ = again.communicate(timeout=600)
        assert again.returncode == 0, output[-3000:]
        down = tmp_path / "nc-down"
        down.mkdir()
        fresh = _nextcloudcmd(down, url)
        output, _ = fresh.communicate(timeout=600)
        assert fresh.returncode == 0, output[-3000:]
    got = {k: v for k, v in local_files(down).items() if k.startswith("synced/")}
    assert got == local_files(up)
