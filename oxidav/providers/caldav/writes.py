"""The CalDAV writes oxidav handles itself: PUT, DELETE, COPY and MOVE of calendar objects.

The request plumbing is ``dav_writes``'s; the conditions are checked in the same transaction
as the write (``CalendarStore``), and every refusal carries its RFC 4791 precondition
(§5.3.2.1) in a 403/409 body, never a 500. A write into a calendar shared with the user is
authorized first (``authorize_write``, ``authorize_transfer``): the grant decides, through
``oxidav.authz.grants.collections``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_CONFLICT,
    HTTP_NOT_FOUND,
    DAVError,
)

from oxidav.authz.grants.roles import Action
from oxidav.calendars.errors import (
    CalendarError,
    NotFound,
    PreconditionFailed,
    ResourceTooLarge,
    UnsupportedCalendarData,
)
from oxidav.providers.caldav.context import dav_error
from oxidav.providers.caldav.resources import CalendarCollection, SharedCalendarCollection
from oxidav.providers.dav.writes import (
    StartResponse,
    check_put,
    empty_response,
    entity_tags,
    media_type,
    read_body,
)

#: Media types a PUT may declare: iCalendar (RFC 5545 §8.1), or none more specific.
ACCEPTED_TYPES = ("text/calendar", "text/plain", "application/octet-stream", "")


def authorize_write(
    environ: dict[str, Any], calendar: CalendarCollection | None, name: str
) -> None:
    """For a PUT or DELETE of ``name`` in a shared calendar: refuse (403 need-privileges, or
    404) unless the recipient's grant allows it. Own calendars need no question."""
    if not isinstance(calendar, SharedCalendarCollection):
        return
    if environ["REQUEST_METHOD"] == "DELETE":
        calendar.require(Action.DELETE, str(calendar.get_href()))
    elif calendar.load_row(name) is None:
        calendar.require(Action.CREATE, str(calendar.get_href()))
    else:
        calendar.require(Action.WRITE, calendar.member_href(name))


def authorize_transfer(
    environ: dict[str, Any],
    source: tuple[CalendarCollection | None, str],
    target: tuple[CalendarCollection | None, str],
) -> None:
    """COPY / MOVE touching a shared calendar: MOVE deletes from the source, and the target
    gets a new or replaced object."""
    calendar, _ = source
    if isinstance(calendar, SharedCalendarCollection) and environ["REQUEST_METHOD"] == "MOVE":
        calendar.require(Action.DELETE, str(calendar.get_href()))
    target_calendar, target_name = target
    if isinstance(target_calendar, SharedCalendarCollection):
        environ_put = {**environ, "REQUEST_METHOD": "PUT"}
        authorize_write(environ_put, target_calendar, target_name)


def put_object(
    environ: dict[str, Any],
    start_response: StartResponse,
    calendar: CalendarCollection | None,
    name: str,
) -> Iterable[bytes]:
    """PUT of ``name`` into ``calendar`` (RFC 4791 §5.3.2): 201 or 204 with the ETag (the
    stored bytes are the bytes sent, so the ETag is always the stored one)."""
    calendar = check_put(environ, calendar, name, container="calendar", member="object")
    store = calendar.backend.store
    try:
        media, _ = media_type(environ.get("CONTENT_TYPE") or "")
        if media not in ACCEPTED_TYPES:
            raise UnsupportedCalendarData(f"{media} is not iCalendar")
        body = read_body(environ, store.max_resource_bytes, ResourceTooLarge)
        result = store.put_object(
            calendar.info,
            name,
            body,
            if_match=entity_tags(environ.get("HTTP_IF_MATCH")),
            if_none_match=entity_tags(environ.get("HTTP_IF_NONE_MATCH")),
        )
    except (CalendarError, PreconditionFailed) as exc:
        raise dav_error(exc, calendar.member_href) from None
    except ValueError as exc:
        raise DAVError(HTTP_BAD_REQUEST, str(exc)) from None
    status = "201 Created" if result.created else "204 No Content"
    return empty_response(start_response, status, [("ETag", f'"{result.etag}"')])


def delete_object(
    environ: dict[str, Any],
    start_response: StartResponse,
    calendar: CalendarCollection | None,
    name: str,
) -> Iterable[bytes]:
    """DELETE of an object; ``If-Match`` on a missing object is 412, not 404 (RFC 9110
    §13.1.1)."""
    if_match = entity_tags(environ.get("HTTP_IF_MATCH"))
    if calendar is None:
        if if_match is not None:
            raise DAVError(412, "If-Match on a missing resource")
        raise DAVError(HTTP_NOT_FOUND)
    try:
        calendar.backend.store.delete_object(calendar.info.id, name, if_match=if_match)
    except NotFound:
        raise DAVError(HTTP_NOT_FOUND) from None
    except PreconditionFailed as exc:
        raise dav_error(exc) from None
    return empty_response(start_response, "204 No Content")


def transfer_object(
    environ: dict[str, Any],
    start_response: StartResponse,
    source: CalendarCollection | None,
    name: str,
    target: CalendarCollection | None,
    target_name: str,
) -> Iterable[bytes]:
    """COPY or MOVE of a calendar object to another name or calendar of the same user
    (RFC 4918 §9.8-9.9): 201 for a new resource, 204 for an overwritten one. The target must
    accept the component and must not hold its UID yet (RFC 4791 §5.3.2.1)."""
    if source is None:
        raise DAVError(HTTP_NOT_FOUND)
    if target is None:
        raise DAVError(HTTP_CONFLICT, "the destination calendar does not exist")
    overwrite = environ.get("HTTP_OVERWRITE", "T").strip().upper()
    if overwrite not in ("T", "F"):
        raise DAVError(HTTP_BAD_REQUEST, "invalid Overwrite header")
    try:
        result = source.backend.store.transfer(
            source.info,
            name,
            target.info,
            target_name,
            move=environ["REQUEST_METHOD"] == "MOVE",
            overwrite=overwrite == "T",
        )
    except (CalendarError, PreconditionFailed) as exc:
        raise dav_error(exc, target.member_href) from None
    except NotFound:
        raise DAVError(HTTP_NOT_FOUND) from None
    except ValueError as exc:
        raise DAVError(403, str(exc)) from None
    status = "201 Created" if result.created else "204 No Content"
    return empty_response(start_response, status)
