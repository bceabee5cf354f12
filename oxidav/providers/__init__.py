"""WsgiDAV providers and resources that adapt oxidav's rooms to DAV.

- ``DavRootProvider`` (``/remote.php/dav/``): discovery.
- ``request_server.OxiRequestServer`` + ``resolver.OxiRequestResolver``: WsgiDAV's request
  handling plus REPORT (and, from the CalDAV room, MKCALENDAR and extended MKCOL); reports are
  added with ``request_server.register_report``. Every XML request body is read and parsed by
  ``xml_input`` (bounded, no DTDs) before a handler sees it; stored client XML goes through it.
- ``urls``: the URL layout.
- The generic DAV core the CalDAV (``calendar*``) and CardDAV (``addressbook*``, ``contacts_*``)
  providers and ``principals`` are built on: ``dav_collections`` (owned collections, object
  collections, text objects), ``dav_reports`` (REPORT props, multiget, limits),
  ``dav_writes`` (body reading and conditional headers of object writes), ``dav_users``
  (user lookups, first-use homes), ``dav_xml`` (DAV names and elements), ``sync_report``.
  To add a kind of object collection, subclass ``dav_collections.ObjectCollection``.

Each provider is usable on its own in any WsgiDAV config (see ``examples/embed.py``).
"""
