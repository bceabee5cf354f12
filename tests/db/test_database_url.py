"""Database URLs: one that names no PostgreSQL driver gets the one oxidav installs."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from oxidav.db import Database
from oxidav.db.engine import POSTGRES_DRIVER, database_url


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_a_url_without_a_driver_gets_psycopg2(scheme: str) -> None:
    url = database_url(f"{scheme}://alice:pw@db.example.org:5433/oxidav?sslmode=require")
    assert url.drivername == POSTGRES_DRIVER
    assert (url.username, url.password, url.host, url.port, url.database) == (
        "alice",
        "pw",
        "db.example.org",
        5433,
        "oxidav",
    )
    assert url.query == {"sslmode": "require"}


@pytest.mark.parametrize(
    "given", ["postgresql+psycopg2://u@h/d", "postgresql+psycopg://u@h/d", "sqlite:///x.db"]
)
def test_a_url_that_names_its_driver_keeps_it(given: str) -> None:
    assert database_url(given).render_as_string() == given


def test_a_url_without_a_driver_connects(db_url: str) -> None:
    """The test run's database, named without a driver (what most people write)."""
    url = database_url(db_url)
    if url.get_backend_name() != "postgresql":
        pytest.skip("SQLite URLs name no driver anyway")
    plain = url.set(drivername="postgresql").render_as_string(False)
    assert plain.startswith("postgresql://")
    db = Database.from_url(plain)
    try:
        with db.read() as session:
            assert session.execute(text("SELECT 1")).scalar_one() == 1
    finally:
        db.dispose()
