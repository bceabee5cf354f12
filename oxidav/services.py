"""The long-lived objects one oxidav process shares between requests.

``Services`` is built once per process from ``Settings`` and handed to the app, the providers and
the CLI; nothing else holds global state.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property

from oxidav.authz.authn.authenticator import Authenticator
from oxidav.blobs import BlobChain
from oxidav.bootstrap import prepare_storage
from oxidav.db import Database
from oxidav.settings import Settings


@dataclass
class Services:
    settings: Settings
    db: Database
    authenticator: Authenticator

    @classmethod
    def open(cls, settings: Settings, db: Database | None = None) -> Services:
        db = db or Database.from_url(settings.resolved_database_url, settings.sqlite_synchronous)
        return cls(settings=settings, db=db, authenticator=Authenticator(db, settings))

    @cached_property
    def blobs(self) -> BlobChain:
        """The blob chain (file contents) configured by the settings, opened on first use."""
        return BlobChain.from_settings(self.settings, self.db)

    def close(self) -> None:
        if "blobs" in self.__dict__:
            self.blobs.close()
        self.db.dispose()


@contextmanager
def command_services(settings: Settings) -> Iterator[Services]:
    """``Services`` for one CLI command: storage prepared (a newer schema refused, an older one
    migrated) before, everything closed after."""
    services = Services.open(settings)
    try:
        prepare_storage(settings, services.db)
        yield services
    finally:
        services.close()
