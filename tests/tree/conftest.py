"""Fixtures of the tree tests."""

from __future__ import annotations

import pytest

from oxidav.db import Database
from tests.support.tree import CountingRefs, add_user


@pytest.fixture
def refs() -> CountingRefs:
    return CountingRefs()


@pytest.fixture
def user(database: Database) -> int:
    return add_user(database)
