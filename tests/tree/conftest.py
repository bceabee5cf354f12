"""Fixtures of the tree tests."""

from __future__ import annotations

import pytest
from tree_helpers import CountingRefs, add_user

from oxidav.db import Database


@pytest.fixture
def refs() -> CountingRefs:
    return CountingRefs()


@pytest.fixture
def user(database: Database) -> int:
    return add_user(database)
