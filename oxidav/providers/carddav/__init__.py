"""The CardDAV provider (RFC 6352) on the contact store of ``oxidav.contacts``.

``provider`` (URLs below ``/remote.php/dav/addressbooks/``), ``context`` (backend, path
grammar, names, errors), ``resources`` (home, address books, cards), ``reports``
(addressbook-query, multiget, sync-collection), ``props`` (what a report asks to see),
``writes`` (PUT and DELETE of cards, extended MKCOL of books).
"""
