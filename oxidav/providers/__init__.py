"""WsgiDAV providers and resources that adapt oxidav's rooms to DAV.

- ``dav/``: the generic core every provider builds on — the request server and resolver
  (WsgiDAV's methods plus REPORT, SEARCH, MKCALENDAR, extended MKCOL; ``DavExtensions`` lists
  the reports and search an application answers), the one parser of client XML
  (``xml_input``: bounded, no DTDs), streamed multistatus answers, PROPFIND and its enrichment,
  sync-collection, the store contract of CalDAV and CardDAV with their shared collections,
  reports and writes, and the DAV root (discovery).
- ``files/``: every user's file tree (``FilesProvider``, ``DbLockStorage``).
- ``caldav/``, ``carddav/``: calendars and address books on ``oxidav.calendars`` and
  ``oxidav.contacts``.
- ``principals``: the user principals that lead clients to their homes.

The core imports none of the providers; a provider imports the core, never another provider
(``docs/architecture.md``). Each provider is usable on its own in any WsgiDAV configuration
(``examples/embed.py``).
"""
