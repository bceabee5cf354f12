"""Database access: the declarative ``Base``, engines and sessions, table models, migrations.

Every room of oxidav keeps its tables in ``oxidav.db.models.<room>``; ``oxidav.db.models``
imports them all so that ``Base.metadata`` is complete for Alembic and for tests.
"""

from oxidav.db.base import Base, UTCDateTime, utcnow
from oxidav.db.engine import Database, Transaction, core, make_engine

__all__ = ["Base", "Database", "Transaction", "UTCDateTime", "core", "make_engine", "utcnow"]
