"""Driving rclone against a live server with no config file (TESTING.md): a remote named
``ox`` defined by environment variables."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.support.live import LiveServer


def rclone_env(
    tmp_path: Path,
    files_url: str,
    *,
    user: str = "alice",
    password: str = "secret",
    vendor: str = "nextcloud",
    ca_cert: Path | None = None,
) -> dict[str, str]:
    """The environment that defines the remote ``ox:`` as ``files_url`` (a user's files folder,
    ending in ``/``), logged in as ``user``; ``ca_cert`` verifies an HTTPS server."""
    obscured = subprocess.run(
        ["rclone", "obscure", password], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {
        **os.environ,
        "RCLONE_CONFIG": str(tmp_path / "rclone.conf"),
        "RCLONE_CONFIG_OX_TYPE": "webdav",
        "RCLONE_CONFIG_OX_URL": files_url,
        "RCLONE_CONFIG_OX_VENDOR": vendor,
        "RCLONE_CONFIG_OX_USER": user,
        "RCLONE_CONFIG_OX_PASS": obscured,
    }
    if ca_cert is not None:
        env["RCLONE_CA_CERT"] = str(ca_cert)
    return env


def rclone_runner(
    server: LiveServer, tmp_path: Path, *, vendor: str, user: str = "alice", timeout: int = 300
) -> Callable[..., str]:
    """A function that runs ``rclone ARGS`` against ``ox:`` (alice's files), asserts exit 0
    and returns what rclone printed."""
    env = rclone_env(
        tmp_path,
        f"{server.base_url}/remote.php/dav/files/{user}/",
        user=user,
        password=server.users[user],
        vendor=vendor,
    )

    def rclone(*args: str) -> str:
        done = subprocess.run(
            ["rclone", *args], env=env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, (args, done.stderr[-3000:])
        return done.stdout + done.stderr

    return rclone
