"""Optional backends and the extra that installs each.

``pip install oxidav`` is the embedded default: SQLite and blobs on local disk. PostgreSQL
(``psycopg2``) and S3 (``boto3``) come with the extras ``postgres`` and ``s3``. A setting that
names a backend whose package is missing stops start-up with ``MissingBackendError``, one line
naming the setting and the command that installs it (a ``SettingsError``: exit code 2):
``load_settings`` looks for the package (``check_installed``), and the places that import it
(``oxidav.db.engine``, ``oxidav.blobs.urls``) say the same if it is missing all the same.
"""

from __future__ import annotations

import importlib.util
from typing import TYPE_CHECKING

from oxidav.settings import SettingsError

if TYPE_CHECKING:
    from oxidav.settings import Settings

#: extra -> the top-level modules it provides.
EXTRA_MODULES = {"postgres": ("psycopg2",), "s3": ("boto3", "botocore", "s3transfer")}


class MissingBackendError(SettingsError):
    """A setting names a backend whose Python package is not installed."""


def is_missing(exc: ModuleNotFoundError, extra: str) -> bool:
    """Whether ``exc`` is the absence of a module the extra ``extra`` installs."""
    top = (exc.name or "").split(".", 1)[0]
    return top in EXTRA_MODULES[extra]


def missing_backend(setting: str, what: str, extra: str) -> MissingBackendError:
    return MissingBackendError(
        f"setting {setting!r} names {what}, whose Python package is not installed: "
        f"pip install 'oxidav[{extra}]'"
    )


def check_installed(settings: Settings) -> None:
    """Raise ``MissingBackendError`` if a setting names a backend that is not installed
    (looked up without importing it), before anything was opened or created."""
    scheme = settings.database_url.split(":", 1)[0].split("+")[0]
    if scheme in ("postgresql", "postgres") and importlib.util.find_spec("psycopg2") is None:
        raise missing_backend("database_url", "PostgreSQL", "postgres")
    if settings.blob_store.startswith("s3://") and importlib.util.find_spec("boto3") is None:
        raise missing_backend("blob_store", "an S3 bucket", "s3")


__all__ = [
    "EXTRA_MODULES",
    "MissingBackendError",
    "check_installed",
    "is_missing",
    "missing_backend",
]
