"""The CalDAV provider (RFC 4791) on the calendar store of ``oxidav.calendars``.

``provider`` (URLs below ``/remote.php/dav/calendars/``), ``context`` (backend, path grammar,
names, errors), ``resources`` (home, calendars, objects), ``reports`` (calendar-query,
multiget, free-busy, sync-collection), ``props`` (what a report asks to see; MKCALENDAR
properties), ``writes`` (PUT, DELETE, COPY, MOVE of objects).

``make_app`` wires this room through ``oxidav.providers.dav.deferred``: it is imported by
the first request below its mount point. This module imports nothing; ``REPORT_NAMES`` are
the names of ``reports.REPORTS``, in their order.
"""

REPORT_NAMES = (
    "{urn:ietf:params:xml:ns:caldav}calendar-query",
    "{urn:ietf:params:xml:ns:caldav}calendar-multiget",
    "{urn:ietf:params:xml:ns:caldav}free-busy-query",
    "{DAV:}sync-collection",
)
