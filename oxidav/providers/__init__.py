"""WsgiDAV providers and resources that adapt oxidav's rooms to DAV.

- ``DavRootProvider`` (``/remote.php/dav/``): discovery.
- ``request_server.OxiRequestServer`` + ``resolver.OxiRequestResolver``: WsgiDAV's request
  handling plus REPORT (and, from the CalDAV room, MKCALENDAR and extended MKCOL); reports are
  added with ``request_server.register_report``.
- ``urls``: the URL layout.

Each provider is usable on its own in any WsgiDAV config (see ``examples/embed.py``).
"""
