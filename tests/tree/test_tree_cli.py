"""``oxidav trash purge --older-than``: with the real blob chain, through the real CLI."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import pytest

from oxidav.blobs import BlobChain
from oxidav.db import Database
from oxidav.settings import Settings
from oxidav.tree import resolve, trash_node, write_file
from oxidav.tree.cli import parse_age
from tests.support.tree import add_user


def test_parse_age():
    assert parse_age("90") == timedelta(seconds=90)
    assert parse_age("90m") == timedelta(minutes=90)
    assert parse_age("30d") == timedelta(days=30)
    assert parse_age("1.5h") == timedelta(minutes=90)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_age("soon")


def test_trash_purge_command(database: Database, db_url: str, tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, database_url=db_url)
    chain = BlobChain.from_settings(settings, database)
    user = add_user(database)
    stored = chain.ingest([b"to be purged"])
    kept = chain.ingest([b"still live"])
    with database.write() as s:
        write_file(s, chain, user, "/old", stored)
        write_file(s, chain, user, "/live", kept)
    with database.write() as s:
        trash_node(s, user, "/old")
    env = {**os.environ, "OXIDAV_DATABASE_URL": db_url, "OXIDAV_DATA_DIR": str(tmp_path)}

    def purge(age: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "oxidav.cli", "trash", "purge", "--older-than", age],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    assert "purged 0" in purge("1h")
    assert chain.refcount(stored.manifest_hash) == 1
    assert "purged 1" in purge("0")
    assert chain.refcount(stored.manifest_hash) == 0
    assert chain.refcount(kept.manifest_hash) == 1
    with database.read() as s:
        assert resolve(s, user, "/live") is not None
    chain.close()
