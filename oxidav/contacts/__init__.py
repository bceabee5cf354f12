"""Contacts: vCard logic and storage for CardDAV (RFC 6352), with no HTTP in it.

- ``vcard``: the content-line model (parse / serialize, raw values kept);
- ``validate``: one vCard with UID and FN, version 3.0 or 4.0, size limit -> ``ParsedCard``;
- ``convert``: vCard 3.0 <-> 4.0, photos intact;
- ``index``: the values the card index holds (folded by ``oxidav.collation``);
- ``filters``, ``evaluate``, ``prefilter``: the addressbook-query filter, its exact evaluation
  and its SQL pre-filter;
- ``address_data``: what a client asks to see (version, properties) and rendering it;
- ``store``: ``ContactStore``, address books and cards in the database;
- ``errors``: typed errors naming the CardDAV precondition they violate.

To serve contacts from elsewhere, use ``ContactStore``; the DAV adapter is
``oxidav.providers.carddav.provider``.
"""

from oxidav.contacts.address_data import AddressDataRequest, negotiate_accept, render
from oxidav.contacts.convert import convert
from oxidav.contacts.errors import (
    BadRequestError,
    BookExistsError,
    BookNotFoundError,
    CardNotFoundError,
    CardTooLargeError,
    ContactsError,
    InvalidCardError,
    PreconditionFailedError,
    UidConflictError,
    UnsupportedAddressDataError,
    UnsupportedCardError,
    UnsupportedCollationError,
    UnsupportedFilterError,
)
from oxidav.contacts.filters import Filter, parse_filter, parse_limit
from oxidav.contacts.store import (
    BookInfo,
    CardInfo,
    Conditions,
    ContactStore,
    PutResult,
    QueryResult,
    StoredCard,
)
from oxidav.contacts.validate import ParsedCard, parse_card

__all__ = [
    "AddressDataRequest",
    "BadRequestError",
    "BookExistsError",
    "BookInfo",
    "BookNotFoundError",
    "CardInfo",
    "CardNotFoundError",
    "CardTooLargeError",
    "Conditions",
    "ContactStore",
    "ContactsError",
    "Filter",
    "InvalidCardError",
    "ParsedCard",
    "PreconditionFailedError",
    "PutResult",
    "QueryResult",
    "StoredCard",
    "UidConflictError",
    "UnsupportedAddressDataError",
    "UnsupportedCardError",
    "UnsupportedCollationError",
    "UnsupportedFilterError",
    "convert",
    "negotiate_accept",
    "parse_card",
    "parse_filter",
    "parse_limit",
    "render",
]
