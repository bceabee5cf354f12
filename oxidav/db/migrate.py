"""Alembic migrations run from code: upgrade to head, and the schema-version guard.

The migration scripts live in ``oxidav/db/migrations``; no ``alembic.ini`` is needed because the
configuration is built here from the engine. ``oxidav db upgrade`` and ``oxidav serve`` both call
``upgrade``; ``serve`` first calls ``check_not_newer`` so that an old oxidav never runs against a
database that a newer oxidav has already migrated.

Alembic (with Mako and Pygments) adds ~11 MB to a process that keeps it imported for its
lifetime. A server almost always starts on a database that is already at the newest revision,
so both entry points first compare the ``alembic_version`` row with the head read from the
scripts' own ``revision`` / ``down_revision`` lines, and import Alembic only when the two differ
or anything is unclear (no version table, several rows, a chain that is not one line).

When there is work, the server does it in a child process (``upgrade_in_child``): Alembic is
imported there and goes with it, so a first start or an upgrade does not leave it in the
server and in every worker the server forks, for their whole lives. What the child reports
is raised in the server as it would have been there: ``SchemaTooNewError`` with its message,
anything else as ``MigrationFailedError`` after the child printed its traceback.
"""

from __future__ import annotations

import os
import re
import sys
import traceback
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Engine, text
from sqlalchemy.exc import SQLAlchemyError

if TYPE_CHECKING:
    from alembic.config import Config
    from alembic.script import ScriptDirectory

MIGRATIONS_DIR = Path(__file__).with_name("migrations")
_ASSIGNMENT = re.compile(
    r"^(down_revision|revision)\s*(?::[^=\n]*)?=\s*(?:None|\"([^\"\n]*)\"|'([^'\n]*)')\s*$",
    re.MULTILINE,
)


class SchemaTooNewError(RuntimeError):
    """The database was migrated by a newer oxidav than this one."""


class MigrationFailedError(RuntimeError):
    """Migrating the database failed in the child process (which printed why)."""


#: The child's exit code for ``SchemaTooNewError`` (its message comes through the pipe).
_TOO_NEW = 3


def alembic_config(engine: Engine) -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS_DIR))
    config.attributes["engine"] = engine
    return config


def current_revisions(engine: Engine) -> tuple[str, ...]:
    """The revisions the database is at (empty for a database never migrated)."""
    from alembic.runtime.migration import MigrationContext

    with engine.connect() as conn:
        return tuple(MigrationContext.configure(conn).get_current_heads())


@cache
def script_head() -> str | None:
    """The newest revision of the scripts, read from their text without Alembic; None unless
    every script names its revision and the scripts form one line."""
    revisions: set[str] = set()
    parents: set[str] = set()
    for path in (MIGRATIONS_DIR / "versions").glob("*.py"):
        found = {m[1]: m[2] or m[3] or None for m in _ASSIGNMENT.finditer(path.read_text())}
        revision = found.get("revision")
        if revision is None or "down_revision" not in found or revision in revisions:
            return None
        revisions.add(revision)
        parent = found["down_revision"]
        if parent is not None:
            if parent in parents:
                return None
            parents.add(parent)
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 and parents <= revisions else None


def at_head(engine: Engine) -> bool:
    """The database is at the scripts' newest revision (False when unsure)."""
    head = script_head()
    if head is None:
        return False
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).all()
    except SQLAlchemyError:
        return False  # no version table yet: a new database
    return [row[0] for row in rows] == [head]


def check_not_newer(engine: Engine) -> None:
    """Raise ``SchemaTooNewError`` if the database holds a revision this code does not know."""
    if at_head(engine):
        return
    from alembic.script import ScriptDirectory

    scripts = ScriptDirectory(str(MIGRATIONS_DIR))
    for current in current_revisions(engine):
        if not _known(scripts, current):
            raise SchemaTooNewError(
                f"database schema is at revision {current!r}, which this oxidav does not "
                f"know (its newest is {', '.join(scripts.get_heads())}); "
                "upgrade oxidav before serving this database"
            )


def _known(scripts: ScriptDirectory, revision: str) -> bool:
    return any(script.revision == revision for script in scripts.walk_revisions())


def upgrade(engine: Engine, revision: str = "head") -> None:
    """Migrate the database to ``revision`` (default: the newest)."""
    if revision == "head" and at_head(engine):
        return
    from alembic import command

    command.upgrade(alembic_config(engine), revision)


def upgrade_in_child(engine: Engine) -> None:
    """``check_not_newer`` and ``upgrade`` in a child process when the database is not at the
    newest revision (module docstring); returns once the child is done."""
    if at_head(engine):
        return
    sys.stdout.flush()
    sys.stderr.flush()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_end)
        code = 1
        try:
            engine.dispose(close=False)  # the parent's pooled connections stay the parent's
            check_not_newer(engine)
            upgrade(engine)
            code = 0
        except SchemaTooNewError as exc:
            os.write(write_end, str(exc).encode())
            code = _TOO_NEW
        except KeyboardInterrupt:  # Ctrl-C reached both: the parent says so, in one line
            code = 130
        except BaseException:
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)  # none of the parent's cleanups (atexit, pools) run in the child
    os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        message = pipe.read().decode(errors="replace")
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code == _TOO_NEW:
        raise SchemaTooNewError(message)
    if code != 0:
        raise MigrationFailedError(f"migrating the database failed (exit status {code})")
