"""The generic DAV core every provider builds on; it imports none of them.

``request_server`` and ``resolver`` (WsgiDAV's methods plus REPORT, SEARCH, MKCALENDAR and
extended MKCOL; ``DavExtensions``), ``xml_input`` (the one parser of client XML, bounded),
``multistatus`` and ``propfind`` (streamed answers), ``enrichment`` (PROPFIND plug-ins),
``sync_report`` (RFC 6578), ``store`` (the ``CollectionStore`` contract of CalDAV and CardDAV),
``users`` and ``home`` (user lookups, homes with their default and shared collections),
``collections``, ``reports``, ``writes`` and ``shared`` (what object collections have in
common), ``share_overrides``, ``xml`` (DAV names and builders), ``root`` (discovery).
"""
