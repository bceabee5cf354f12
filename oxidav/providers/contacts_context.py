"""Shared pieces of the CardDAV provider: the backend, the URL grammar, XML names, errors.

``ContactsBackend`` holds what lives as long as the process (the ``ContactStore``, the settings,
a short user-id cache). ``CardDavPath`` parses a path below the provider's mount point
(``/users/<user>/<book>/<card>``). ``dav_error`` turns a contacts-room error into the WsgiDAV
error whose body is the RFC 6352 precondition element.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from lxml import etree
from sqlalchemy import select
from wsgidav.dav_error import DAVError, DAVErrorCondition

from oxidav.contacts import ContactsError, ContactStore, UidConflictError
from oxidav.db import Database
from oxidav.db.models.users import User
from oxidav.settings import Settings

CARDDAV_NS = "urn:ietf:params:xml:ns:carddav"
CALSERVER_NS = "http://calendarserver.org/ns/"
C = f"{{{CARDDAV_NS}}}"
CS = f"{{{CALSERVER_NS}}}"

ADDRESSBOOK = C + "addressbook"
ADDRESSBOOK_DESCRIPTION = C + "addressbook-description"
ADDRESS_DATA = C + "address-data"
SUPPORTED_ADDRESS_DATA = C + "supported-address-data"
MAX_RESOURCE_SIZE = C + "max-resource-size"
ADDRESSBOOK_HOME_SET = C + "addressbook-home-set"
GETCTAG = CS + "getctag"
SYNC_TOKEN = "{DAV:}sync-token"
GETETAG = "{DAV:}getetag"
DISPLAYNAME = "{DAV:}displayname"
RESOURCETYPE = "{DAV:}resourcetype"
SUPPORTED_REPORT_SET = "{DAV:}supported-report-set"
CURRENT_USER_PRIVILEGE_SET = "{DAV:}current-user-privilege-set"
CURRENT_USER_PRINCIPAL = "{DAV:}current-user-principal"
OWNER = "{DAV:}owner"

#: Privileges of an owner on everything below their address-book home (RFC 3744 §3).
OWNER_PRIVILEGES = (
    "read",
    "write",
    "write-properties",
    "write-content",
    "bind",
    "unbind",
    "read-current-user-privilege-set",
)
USER_CACHE_SECONDS = 30.0
CARD_CONTENT_TYPE = "text/vcard; charset=utf-8"
MAX_CARD_NAME = 255


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


class ContactsBackend:
    """The contacts store and user lookups of one provider instance."""

    def __init__(self, db: Database, settings: Settings) -> None:
        self.db = db
        self.settings = settings
        self.store = ContactStore(db, max_resource_bytes=settings.max_resource_bytes)
        self._users: dict[str, tuple[float, int | None]] = {}
        self._homes_ready: set[int] = set()
        self._lock = threading.Lock()

    def prepare_home(self, user_id: int) -> None:
        """Give a user the default ``contacts`` book the first time this process sees their
        home (DESIGN §4), before anything else happens there: a client whose first request is
        an MKCOL still finds ``contacts`` next to its own book."""
        if user_id in self._homes_ready:
            return
        self.store.ensure_default_book(user_id)
        with self._lock:
            self._homes_ready.add(user_id)

    def user_id(self, username: str) -> int | None:
        """The id of user ``username`` (None if there is none), cached for a few seconds."""
        now = time.monotonic()
        with self._lock:
            cached = self._users.get(username)
        if cached is not None and now - cached[0] < USER_CACHE_SECONDS:
            return cached[1]
        with self.db.read() as session:
            found = session.execute(
                select(User.id).where(User.username == username)
            ).scalar_one_or_none()
        user_id = None if found is None else int(found)
        with self._lock:
            if len(self._users) > 10_000:
                self._users.clear()
            self._users[username] = (now, user_id)
        return user_id


def condition(clark_name: str, href: str | None = None) -> DAVErrorCondition:
    """A ``DAV:error`` body naming ``clark_name``, with an optional ``DAV:href`` inside."""
    cond = DAVErrorCondition(clark_name)
    if href is not None:
        # DAVErrorCondition.add_href only admits lock conditions; the list itself is generic.
        cond.hrefs.append(href)
    return cond


def dav_error(exc: ContactsError, href_of: Any = None) -> DAVError:
    """The DAVError for a contacts-room error; ``href_of(name)`` builds the href of the card
    named in a ``no-uid-conflict`` (RFC 6352 §6.3.2.1)."""
    if not exc.condition:
        return DAVError(exc.status, exc.message)
    href = None
    if isinstance(exc, UidConflictError) and href_of is not None:
        href = href_of(exc.existing_name)
    return DAVError(exc.status, exc.message, err_condition=condition(exc.clark_condition, href))


def href_element(tag: str, href: str) -> etree._Element:
    element = etree.Element(tag)
    etree.SubElement(element, "{DAV:}href").text = href
    return element


def privilege_set() -> etree._Element:
    """DAV:current-user-privilege-set of an owner (RFC 3744 §5.4)."""
    element = etree.Element(CURRENT_USER_PRIVILEGE_SET)
    for name in OWNER_PRIVILEGES:
        privilege = etree.SubElement(element, "{DAV:}privilege")
        etree.SubElement(privilege, "{DAV:}" + name)
    return element


def supported_address_data() -> etree._Element:
    """CARDDAV:supported-address-data (RFC 6352 §6.2.2): vCard 3.0 and 4.0."""
    element = etree.Element(SUPPORTED_ADDRESS_DATA, nsmap={"C": CARDDAV_NS})
    for version in ("3.0", "4.0"):
        etree.SubElement(
            element, C + "address-data-type", {"content-type": "text/vcard", "version": version}
        )
    return element
