"""The CardDAV provider (RFC 6352) on the contact store of ``oxidav.contacts``.

``provider`` (URLs below ``/remote.php/dav/addressbooks/``), ``context`` (backend, path
grammar, names, errors), ``resources`` (home, address books, cards), ``reports``
(addressbook-query, multiget, sync-collection), ``props`` (what a report asks to see),
``writes`` (PUT and DELETE of cards, extended MKCOL of books).
"""

#: The names of ``reports.REPORTS``, in order: ``make_app`` lists them before the first
#: request below the mount point imports the room (``oxidav.providers.dav.deferred``).
REPORT_NAMES = (
    "{urn:ietf:params:xml:ns:carddav}addressbook-query",
    "{urn:ietf:params:xml:ns:carddav}addressbook-multiget",
    "{DAV:}sync-collection",
)
