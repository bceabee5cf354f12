"""The process-wide objects the Nextcloud layer works with: services and the blob chain.

The middleware and the providers of this room are built from the app's ``Services`` and use
its one ``BlobChain`` (``Services.blobs``).
"""

from __future__ import annotations

from dataclasses import dataclass

from oxidav.blobs import BlobChain
from oxidav.db import Database
from oxidav.services import Services
from oxidav.settings import Settings

#: Where the domain controller leaves the authenticated ``Principal``.


@dataclass(frozen=True)
class NextcloudContext:
    services: Services

    @property
    def chain(self) -> BlobChain:
        return self.services.blobs

    @property
    def db(self) -> Database:
        return self.services.db

    @property
    def settings(self) -> Settings:
        return self.services.settings


def nextcloud_context(services: Services) -> NextcloudContext:
    return NextcloudContext(services)
