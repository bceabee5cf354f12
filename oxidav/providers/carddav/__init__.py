"""The CardDAV provider (RFC 6352) on the contact store of ``oxidav.contacts``.

``provider`` (URLs below ``/remote.php/dav/addressbooks/``), ``context`` (backend, path
grammar, names, errors), ``resources`` (home, address books, cards), ``reports``
(addressbook-query, multiget, sync-collection), ``props`` (what a report asks to see),
``writes`` (PUT and DELETE of cards, extended MKCOL of books).

``make_app`` wires this room through ``oxidav.providers.dav.deferred``: it is imported by
the first request below its mount point. This module imports nothing; ``REPORT_NAMES`` are
the names of ``reports.REPORTS``, in their order.
"""

REPORT_NAMES = (
    "{urn:ietf:params:xml:ns:carddav}addressbook-query",
    "{urn:ietf:params:xml:ns:carddav}addressbook-multiget",
    "{DAV:}sync-collection",
)
