"""Shared pieces of the CardDAV provider: the backend, the URL grammar, XML names, errors.

``ContactsBackend`` holds what lives as long as the process (the ``ContactStore`` next to the
user lookups of ``HomeBackend``). ``CardDavPath`` parses a path below the provider's mount point
(``/users/<user>/<book>/<card>``). ``dav_error`` turns a contacts-room error into the WsgiDAV
error whose body is the RFC 6352 precondition element.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from lxml import etree
from wsgidav.dav_error import DAVError

from oxidav.contacts import ContactsError, ContactStore, UidConflictError
from oxidav.db import Database
from oxidav.providers.dav.users import HomeBackend
from oxidav.providers.dav.xml import condition
from oxidav.settings import Settings

CARDDAV_NS = "urn:ietf:params:xml:ns:carddav"
C = f"{{{CARDDAV_NS}}}"

ADDRESSBOOK = C + "addressbook"
ADDRESSBOOK_DESCRIPTION = C + "addressbook-description"
ADDRESS_DATA = C + "address-data"
SUPPORTED_ADDRESS_DATA = C + "supported-address-data"
MAX_RESOURCE_SIZE = C + "max-resource-size"
ADDRESSBOOK_HOME_SET = C + "addressbook-home-set"
CARD_CONTENT_TYPE = "text/vcard; charset=utf-8"


@dataclass(frozen=True)
class CardDavPath:
    """A path below the provider's mount point, split into its parts.

    ``kind`` is "root" (``/``), "users" (``/users/``), "home" (``/users/<user>/``), "book"
    (``/users/<user>/<book>/``), "card" (``/users/<user>/<book>/<card>``) or "invalid".
    """

    kind: str
    user: str = ""
    book: str = ""
    card: str = ""

    @classmethod
    def parse(cls, path: str) -> CardDavPath:
        parts = [part for part in path.split("/") if part]
        if not parts:
            return cls("root")
        if parts[0] != "users" or len(parts) > 4:
            return cls("invalid")
        kinds = ("users", "home", "book", "card")
        values = [*parts[1:], "", "", ""][:3]
        return cls(kinds[len(parts) - 1], *values)

    @property
    def book_path(self) -> str:
        return f"/users/{self.user}/{self.book}/"


class ContactsBackend(HomeBackend[ContactStore]):
    """The contacts store and user lookups of one provider instance (a new home gets
    ``contacts``)."""

    def __init__(self, db: Database, settings: Settings) -> None:
        store = ContactStore(db, max_resource_bytes=settings.max_resource_bytes)
        super().__init__(db, settings, store)

    def user_id(self, username: str) -> int | None:
        """The id of user ``username`` (None if there is none), cached for a few seconds."""
        user = self.user(username)
        return None if user is None else user.id


def dav_error(exc: ContactsError, href_of: Any = None) -> DAVError:
    """The DAVError for a contacts-room error; ``href_of(name)`` builds the href of the card
    named in a ``no-uid-conflict`` (RFC 6352 §6.3.2.1)."""
    if not exc.condition:
        return DAVError(exc.status, exc.message)
    href = None
    if isinstance(exc, UidConflictError) and href_of is not None:
        href = href_of(exc.existing_name)
    return DAVError(exc.status, exc.message, err_condition=condition(exc.clark_condition, href))


def supported_address_data() -> etree._Element:
    """CARDDAV:supported-address-data (RFC 6352 §6.2.2): vCard 3.0 and 4.0."""
    element = etree.Element(SUPPORTED_ADDRESS_DATA, nsmap={"C": CARDDAV_NS})
    for version in ("3.0", "4.0"):
        etree.SubElement(
            element, C + "address-data-type", {"content-type": "text/vcard", "version": version}
        )
    return element
