"""``oxidav uploads purge``: stale chunked-upload sessions and their chunk references go."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.live import LiveServer

UP = "/remote.php/dav/uploads/alice"


def test_uploads_purge_command(live_server: LiveServer) -> None:
    s = live_server
    assert s.request("MKCOL", f"{UP}/stale").status == 201
    assert s.request("PUT", f"{UP}/stale/00001", body=b"chunk").status == 201
    env = {
        **os.environ,
        "OXIDAV_DATABASE_URL": s.settings.resolved_database_url,
        "OXIDAV_DATA_DIR": str(s.settings.data_dir),
    }

    def purge(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "oxidav.cli", "uploads", "purge", *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "purged 0 stale upload session(s)" in purge()  # default: idle for 24 h
    assert s.request("PROPFIND", f"{UP}/stale/", headers={"Depth": "0"}).status == 207
    assert "purged 1 stale upload session(s)" in purge("--older-than", "0")
    assert s.request("PROPFIND", f"{UP}/stale/", headers={"Depth": "0"}).status == 404
