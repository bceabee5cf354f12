"""Optional backends and the extra that installs each.

``pip install oxidav`` is the embedded default: SQLite and blobs on local disk. PostgreSQL
(``psycopg2``) and S3 (``boto3``) come with the extras ``postgres`` and ``s3``. A setting that
names a backend whose package is missing stops start-up with ``MissingBackendError``, one line
naming the setting and the command that installs it (a ``SettingsError``: exit code 2):
``load_settings`` looks for the package (``oxidav.settings.check_installed``, with the error
and its message, so the settings import nothing of the rooms that use them), and the places that
import it (``oxidav.db.engine``, ``oxidav.blobs.urls``) say the same if it is missing all the same.
"""

from __future__ import annotations

from oxidav.settings import MissingBackendError, check_installed, missing_backend

#: extra -> the top-level modules it provides.
EXTRA_MODULES = {"postgres": ("psycopg2",), "s3": ("boto3", "botocore", "s3transfer")}


def is_missing(exc: ModuleNotFoundError, extra: str) -> bool:
    """Whether ``exc`` is the absence of a module the extra ``extra`` installs."""
    top = (exc.name or "").split(".", 1)[0]
    return top in EXTRA_MODULES[extra]


__all__ = [
    "EXTRA_MODULES",
    "MissingBackendError",
    "check_installed",
    "is_missing",
    "missing_backend",
]
