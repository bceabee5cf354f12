"""oxidav behind a real nginx (Debian's package) that terminates TLS and serves it under a
path prefix (``base_path = /cloud``): rclone, nextcloudcmd, ``oxidav push`` and python-caldav
(discovering from the host's ``/.well-known/caldav``) sync through it, and the URLs oxidav
generates (login flow v2) are the public ``https://…/cloud`` ones nginx was reached at, since
nginx is a trusted proxy. (SQLite: what is under test is the HTTP path;
``test_balanced_processes`` runs behind nginx without a prefix, on PostgreSQL.)
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import caldav
import pytest

from oxidav.push import PushOptions, push_tree
from tests.support.cli import run_oxidav
from tests.support.live import start_server_process
from tests.support.nextcloud_sync import TreeShape, local_files, make_tree
from tests.support.nginx import nginx_available, nginx_proxy
from tests.support.rclone import rclone_env as ox_remote_env
from tests.support.tls import self_signed

pytestmark = pytest.mark.skipif(not nginx_available(), reason="nginx is not installed")


def _cli(*args: str, env: dict[str, str]) -> None:
    done = run_oxidav({**os.environ, **env}, *args, timeout=120)
    assert done.returncode == 0, done.stderr


def _curl(url: str, cert: Path, *args: str) -> dict[str, object]:
    done = subprocess.run(
        ["curl", "-sS", "--fail", "--cacert", str(cert), *args, url],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    data: dict[str, object] = json.loads(done.stdout)
    return data


BASE = "/cloud"
EVENT = (
    "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//t//t//EN\r\nBEGIN:VEVENT\r\n"
    "UID:proxied-1\r\nDTSTAMP:20261201T100000Z\r\nDTSTART:20261201T100000Z\r\n"
    "DTEND:20261201T110000Z\r\nSUMMARY:behind nginx\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"
)


def test_rclone_nextcloudcmd_and_caldav_through_nginx_with_tls_and_a_prefix(
    tmp_path: Path,
) -> None:
    cert = self_signed(tmp_path / "tls")
    env = {
        "OXIDAV_DATA_DIR": str(tmp_path / "data"),
        "OXIDAV_TRUSTED_PROXIES": "127.0.0.1",
        "OXIDAV_TRUSTED_HOSTS": "localhost",
        "OXIDAV_BASE_PATH": BASE,
    }
    _cli("user", "add", "alice", "--password", "secret", "--init", env=env)
    server = start_server_process(["--port", "0"], env=env)
    try:
        upstream = server.base_url.removeprefix("http://")
        with nginx_proxy(tmp_path / "nginx", [upstream], cert, BASE) as port:
            host = f"https://localhost:{port}"
            public = host + BASE

            # Generated URLs: what the client reached, https, not oxidav's own http address.
            flow = _curl(f"{public}/index.php/login/v2", cert.cert, "-X", "POST")
            poll = flow["poll"]
            assert isinstance(poll, dict)
            assert poll["endpoint"] == f"{public}/index.php/login/v2/poll"
            assert str(flow["login"]).startswith(f"{public}/index.php/login/v2/flow/")

            # rclone round trip, verifying nginx's certificate.
            source = tmp_path / "source"
            make_tree(source, TreeShape(small=8, medium=1, large=0, folders=3))
            rclone_env = ox_remote_env(
                tmp_path, f"{public}/remote.php/dav/files/alice/", ca_cert=cert.cert
            )
            for args in (
                ("copy", str(source), "ox:rclone"),
                ("check", str(source), "ox:rclone"),
                ("copy", "ox:rclone", str(tmp_path / "back")),
            ):
                done = subprocess.run(
                    ["rclone", *args], env=rclone_env, capture_output=True, text=True, timeout=300
                )
                assert done.returncode == 0, (args, done.stderr[-3000:])
            assert local_files(tmp_path / "back") == local_files(source)

            # nextcloudcmd: upload a tree (a chunked upload among it), then a fresh client
            # downloads exactly that tree.
            up = tmp_path / "nc-up"
            make_tree(up, TreeShape(small=6, medium=1, large=1, folders=3), seed=11)
            down = tmp_path / "nc-down"
            down.mkdir()
            for local in (up, down):
                done = subprocess.run(
                    [
                        "nextcloudcmd",
                        "--non-interactive",
                        "--trust",
                        "-u",
                        "alice",
                        "-p",
                        "secret",
                        str(local),
                        public,
                    ],
                    capture_output=True,
                    text=True,
                    timeout=600,
                )
                assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            got = {k: v for k, v in local_files(down).items() if not k.startswith("rclone/")}
            assert got == {k: v for k, v in local_files(up).items() if not k.startswith("rclone/")}

            # oxidav push, through the proxy's TLS and prefix.
            pushed = tmp_path / "pushed"
            shape = TreeShape(small=12, medium=1, large=0, folders=3)
            make_tree(pushed / "via push", shape, seed=29)
            report = push_tree(
                pushed,
                public,
                "alice",
                "secret",
                PushOptions(state_dir=tmp_path / "push-state", ca_file=str(cert.cert)),
            )
            assert report.ok and report.files_committed == len(local_files(pushed)), report

            # python-caldav, given only the host: the well-known redirect, then discovery.
            with caldav.DAVClient(
                f"{host}/.well-known/caldav",
                username="alice",
                password="secret",
                ssl_verify_cert=str(cert.cert),
            ) as client:
                principal = client.principal()
                assert str(principal.url).startswith(f"{public}/remote.php/dav/principals/")
                calendar = principal.make_calendar(name="Proxied", cal_id="proxied")
                calendar.save_event(EVENT)
                assert "SUMMARY:behind nginx" in calendar.event_by_uid("proxied-1").data
                assert str(calendar.url).startswith(f"{public}/remote.php/dav/calendars/alice/")
    finally:
        assert server.stop() == 0
