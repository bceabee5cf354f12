"""Driving rclone against a live server with no config file (TESTING.md): a remote named
``ox`` defined by environment variables."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.support.live import LiveServer


def rclone_runner(
    server: LiveServer, tmp_path: Path, *, vendor: str, user: str = "alice", timeout: int = 300
) -> Callable[..., str]:
    """A function that runs ``rclone ARGS`` against ``ox:`` (alice's files), asserts exit 0
    and returns what rclone printed."""
    obscured = subprocess.run(
        ["rclone", "obscure", server.users[user]], capture_output=True, text=True, check=True
    ).stdout.strip()
    env = {
        **os.environ,
        "RCLONE_CONFIG": str(tmp_path / "rclone.conf"),
        "RCLONE_CONFIG_OX_TYPE": "webdav",
        "RCLONE_CONFIG_OX_URL": f"{server.base_url}/remote.php/dav/files/{user}/",
        "RCLONE_CONFIG_OX_VENDOR": vendor,
        "RCLONE_CONFIG_OX_USER": user,
        "RCLONE_CONFIG_OX_PASS": obscured,
    }

    def rclone(*args: str) -> str:
        done = subprocess.run(
            ["rclone", *args], env=env, capture_output=True, text=True, timeout=timeout
        )
        assert done.returncode == 0, (args, done.stderr[-3000:])
        return done.stdout + done.stderr

    return rclone
