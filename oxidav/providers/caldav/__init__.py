"""The CalDAV provider (RFC 4791) on the calendar store of ``oxidav.calendars``."""
