"""Shared fixtures: a migrated database on SQLite and on PostgreSQL for every test that asks.

``db_url`` is parametrized over both backends. Each backend is migrated once per test session
into a template (a file for SQLite, a template database for PostgreSQL); each test then gets a
fresh copy, so tests are isolated and the migrations themselves run on both backends.

PostgreSQL runs whenever 127.0.0.1:5432 answers; with ``OXIDAV_REQUIRE_PG=1`` (set by .ci/run)
an unreachable server fails the run instead of skipping those tests. ``OXIDAV_TEST_BACKENDS``
(default ``sqlite,pg``) narrows the run to one backend, as the tox envs ``py`` and ``pg`` do.
"""

from __future__ import annotations

import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from oxidav.db import Database, make_engine
from oxidav.db.migrate import upgrade
from tests.support.live import LiveServer, in_process_server, make_settings
from tests.support.postgres import (
    fresh_pg_database,
    pg_admin_execute,
    pg_reachable,
    pg_url,
)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    engine = make_engine(f"sqlite:///{path}")
    upgrade(engine)
    engine.dispose()
    return path


@pytest.fixture(scope="session")
def pg_template() -> Iterator[str]:
    if not pg_reachable():
        if os.environ.get("OXIDAV_REQUIRE_PG") == "1":
            pytest.fail(
                "PostgreSQL is required (OXIDAV_REQUIRE_PG=1) but 127.0.0.1:5432 does not answer"
            )
        pytest.skip("PostgreSQL is not reachable on 127.0.0.1:5432")
    name = f"oxidav_test_{uuid.uuid4().hex[:10]}_tpl"
    pg_admin_execute(f'CREATE DATABASE "{name}"')
    engine = make_engine(pg_url(name))
    upgrade(engine)
    engine.dispose()
    yield name
    pg_admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


BACKENDS = os.environ.get("OXIDAV_TEST_BACKENDS", "sqlite,pg").split(",")
_BACKEND_PARAMS = [
    pytest.param(name, marks=[pytest.mark.pg] if name == "pg" else [])
    for name in ("sqlite", "pg")
    if name in BACKENDS
]


@pytest.fixture(params=_BACKEND_PARAMS)
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The URL of a freshly migrated, empty database: SQLite, then PostgreSQL."""
    if request.param == "sqlite":
        path = tmp_path / "oxidav.db"
        shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
        yield f"sqlite:///{path}"
    else:
        yield from fresh_pg_database(request.getfixturevalue("pg_template"))


@pytest.fixture
def database(db_url: str) -> Iterator[Database]:
    """A ``Database`` on a fresh migrated database (both backends)."""
    db = Database.from_url(db_url)
    yield db
    db.dispose()


@pytest.fixture
def live_server(db_url: str, tmp_path: Path) -> Iterator[LiveServer]:
    """oxidav served in-process on a free port (both backends), users alice and bob ("secret")."""
    settings = make_settings(tmp_path / "data", db_url)
    with in_process_server(settings) as server:
        yield server
