"""Fixtures of the contacts tests: a store on a migrated database (SQLite and PostgreSQL)."""

from __future__ import annotations

import pytest

from oxidav.contacts.store import ContactStore
from oxidav.db import Database
from tests.support.contacts_samples import add_user


@pytest.fixture
def store(database: Database) -> ContactStore:
    return ContactStore(database, max_resource_bytes=64 * 1024)


@pytest.fixture
def user(database: Database) -> int:
    return add_user(database)
