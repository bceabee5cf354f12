"""Typed errors of the contacts room, each naming the RFC 6352 precondition it violates.

The DAV layer turns a ``ContactsError`` into an HTTP error whose body carries the
``{urn:ietf:params:xml:ns:carddav}<condition>`` element (RFC 6352 §6.3.2.1, §8.6, §8.7), so a
client learns *why* a request was refused instead of seeing a 500.
"""

from __future__ import annotations

CARDDAV_NS = "urn:ietf:params:xml:ns:carddav"


class ContactsError(Exception):
    """Base class. ``condition`` is the local name of the precondition element; ``namespace``
    its XML namespace; ``status`` the HTTP status the DAV layer answers with."""

    condition: str = ""
    namespace: str = CARDDAV_NS
    status: int = 403

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    @property
    def clark_condition(self) -> str:
        """The precondition element as a Clark name, e.g. ``{urn:…:carddav}valid-address-data``."""
        return f"{{{self.namespace}}}{self.condition}"


class InvalidCardError(ContactsError):
    """The body is not one valid vCard with a UID and an FN (RFC 6352 §6.3.2.1
    ``CARDDAV:valid-address-data``, §5.1: exactly one vCard per address object resource)."""

    condition = "valid-address-data"


class UnsupportedCardError(ContactsError):
    """The body is not a media type / vCard version this server stores (RFC 6352 §6.3.2.1
    ``CARDDAV:supported-address-data``): only ``text/vcard`` 3.0 and 4.0 are accepted."""

    condition = "supported-address-data"


class CardTooLargeError(ContactsError):
    """The vCard is larger than ``Settings.max_resource_bytes`` (RFC 6352 §6.3.2.1
    ``CARDDAV:max-resource-size``)."""

    condition = "max-resource-size"


class UidConflictError(ContactsError):
    """Another card of the same address book already has this UID (RFC 6352 §6.3.2.1
    ``CARDDAV:no-uid-conflict``). ``existing_name`` is that card's resource name: the DAV
    layer reports its href inside the condition element."""

    condition = "no-uid-conflict"

    def __init__(self, message: str, existing_name: str) -> None:
        super().__init__(message)
        self.existing_name = existing_name


class PreconditionFailedError(ContactsError):
    """``If-Match`` / ``If-None-Match`` did not hold against the current state (RFC 9110
    §13.1.1, §13.1.2): HTTP 412, no body condition."""

    condition = ""
    status = 412


class UnsupportedFilterError(ContactsError):
    """An addressbook-query filter uses something this server does not support (RFC 6352
    §8.6, ``CARDDAV:supported-filter``), or is malformed."""

    condition = "supported-filter"


class UnsupportedCollationError(ContactsError):
    """A text-match names a collation this server does not support (RFC 6352 §8.3,
    ``CARDDAV:supported-collation``)."""

    condition = "supported-collation"


class UnsupportedAddressDataError(ContactsError):
    """An ``address-data`` request asks for a media type or version this server cannot
    produce (RFC 6352 §10.4, ``CARDDAV:supported-address-data-conversion``)."""

    condition = "supported-address-data-conversion"


class BookExistsError(ContactsError):
    """An address book with this URI already exists for the owner (RFC 5689 §3: MKCOL on an
    existing resource is 405; the DAV layer maps it)."""

    condition = "resource-must-be-null"
    namespace = "DAV:"
    status = 405


class BookNotFoundError(ContactsError):
    """No such address book (HTTP 404)."""

    condition = ""
    status = 404


class CardNotFoundError(ContactsError):
    """No such card (HTTP 404), e.g. the source of a COPY or MOVE."""

    condition = ""
    status = 404


class BadRequestError(ContactsError):
    """A request body is malformed in a way no precondition names (HTTP 400)."""

    condition = ""
    status = 400
