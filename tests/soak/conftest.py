"""Fixture of the soak: the environment of an installation with user alice (password
"secret"), on the ``db_url`` backend, for ``oxidav`` processes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.support.soak.runner import oxidav


@pytest.fixture
def env(db_url: str, tmp_path: Path) -> dict[str, str]:
    result = {
        **os.environ,
        "OXIDAV_DATABASE_URL": db_url,
        "OXIDAV_DATA_DIR": str(tmp_path / "d"),
    }
    result.pop("OXIDAV_BLOB_STORE", None)
    added = oxidav(result, "user", "add", "alice", "--password", "secret", "--init")
    assert added.returncode == 0, added.stderr
    return result
