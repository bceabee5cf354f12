"""Fixtures of the authz tests: a world of three users and a small tree of alice's."""

from __future__ import annotations

import pytest

from oxidav.db import Database
from tests.support.grants import World, make_world


@pytest.fixture
def world(database: Database) -> World:
    return make_world(database)
