"""The CalDAV provider (RFC 4791) on the calendar store of ``oxidav.calendars``.

``provider`` (URLs below ``/remote.php/dav/calendars/``), ``context`` (backend, path grammar,
names, errors), ``resources`` (home, calendars, objects), ``reports`` (calendar-query,
multiget, free-busy, sync-collection), ``props`` (what a report asks to see; MKCALENDAR
properties), ``writes`` (PUT, DELETE, COPY, MOVE of objects).
"""
