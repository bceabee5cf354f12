"""PostgreSQL for the tests: the administration URL (``OXIDAV_TEST_PG``), whether the server
answers, and databases made from a migrated template and dropped after use."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

from sqlalchemy import create_engine, text

PG_ADMIN_URL = os.environ.get(
    "OXIDAV_TEST_PG", "postgresql+psycopg2://postgres@127.0.0.1:5432/postgres"
)


def pg_reachable() -> bool:
    try:
        engine = create_engine(PG_ADMIN_URL, connect_args={"connect_timeout": 3})
        with engine.connect():
            pass
        engine.dispose()
        return True
    except Exception:
        return False


def pg_admin_execute(sql: str) -> None:
    engine = create_engine(PG_ADMIN_URL, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(text(sql))
    engine.dispose()


def pg_url(name: str) -> str:
    return PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name


def fresh_pg_database(template: str) -> Iterator[str]:
    name = f"oxidav_test_{uuid.uuid4().hex[:12]}"
    pg_admin_execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    try:
        yield pg_url(name)
    finally:
        pg_admin_execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
