"""The CalDAV provider (RFC 4791) on the calendar store of ``oxidav.calendars``.

``provider`` (URLs below ``/remote.php/dav/calendars/``), ``context`` (backend, path grammar,
names, errors), ``resources`` (home, calendars, objects), ``reports`` (calendar-query,
multiget, free-busy, sync-collection), ``props`` (what a report asks to see; MKCALENDAR
properties), ``writes`` (PUT, DELETE, COPY, MOVE of objects).
"""

#: The names of ``reports.REPORTS``, in order: ``make_app`` lists them before the first
#: request below the mount point imports the room (``oxidav.providers.dav.deferred``).
REPORT_NAMES = (
    "{urn:ietf:params:xml:ns:caldav}calendar-query",
    "{urn:ietf:params:xml:ns:caldav}calendar-multiget",
    "{urn:ietf:params:xml:ns:caldav}free-busy-query",
    "{DAV:}sync-collection",
)
