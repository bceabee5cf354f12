"""Alembic environment: runs migrations on the engine handed over by ``oxidav.db.migrate``."""

from alembic import context

import oxidav.db.models  # noqa: F401  (registers every table on Base.metadata)
from oxidav.db.base import Base

engine = context.config.attributes["engine"]

with engine.connect() as connection:
    context.configure(
        connection=connection,
        target_metadata=Base.metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()
    connection.commit()
