"""All table models, imported here so ``Base.metadata`` knows every table.

Each room of oxidav owns one module: ``users`` (authz), ``blobs``, ``tree``, ``calendars``,
``contacts``. Add a module here when a room gains tables, and an Alembic revision with it.
"""

from oxidav.db.models import (
    authz,
    blobs,
    calendars,
    contacts,
    links,
    mount_names,
    nextcloud,
    presence,
    share_overrides,
    sync,
    tree,
)
from oxidav.db.models.users import AppPassword, LoginFailure, User

__all__ = [
    "AppPassword",
    "LoginFailure",
    "User",
    "authz",
    "blobs",
    "calendars",
    "contacts",
    "links",
    "mount_names",
    "nextcloud",
    "presence",
    "share_overrides",
    "sync",
    "tree",
]
