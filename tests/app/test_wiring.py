"""The wiring of ``make_app``: what an application answers is what it was given.

REPORTs, SEARCH, principal properties and share-type sources are handed to each application,
not registered in the process: an application built with fewer answers less, and the one
``make_app`` builds beside it in the same process is not changed by it."""

from __future__ import annotations

from typing import Any
from wsgiref.util import setup_testing_defaults

from wsgidav.wsgidav_app import WsgiDAVApp

from oxidav.app import (
    DAV_STACK,
    PUBLIC_DAV_STACK,
    addressbooks_room,
    calendars_room,
    dav_config,
    dav_extensions,
    make_app,
)
from oxidav.providers.dav.request_server import DavExtensions
from oxidav.providers.dav.resolver import DAV_EXTENSIONS, OxiRequestResolver
from tests.support.live import LiveServer

AUTH = "Basic YWxpY2U6c2VjcmV0"  # alice:secret
SYNC = "{DAV:}sync-collection"
REPORT_BODY = (
    b'<?xml version="1.0"?><C:calendar-query xmlns:D="DAV:" '
    b'xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop><D:getetag/></D:prop>'
    b'<C:filter><C:comp-filter name="VCALENDAR"/></C:filter></C:calendar-query>'
)


def call(app: Any, method: str, path: str, body: bytes = b"") -> tuple[str, dict[str, str]]:
    from io import BytesIO

    environ: dict[str, Any] = {}
    setup_testing_defaults(environ)
    environ.update(
        REQUEST_METHOD=method,
        PATH_INFO=path,
        QUERY_STRING="",
        HTTP_AUTHORIZATION=AUTH,
        CONTENT_LENGTH=str(len(body)),
        CONTENT_TYPE="application/xml",
        HTTP_DEPTH="1",
    )
    environ["wsgi.input"] = BytesIO(body)
    answer: list[tuple[str, dict[str, str]]] = []
    result = app(environ, lambda s, h, e=None: answer.append((s, dict(h))))
    try:
        b"".join(result)
    finally:
        getattr(result, "close", lambda: None)()
    return answer[0]


def test_the_stacks_read_in_request_order() -> None:
    assert DAV_STACK[-1] is OxiRequestResolver and PUBLIC_DAV_STACK[-1] is OxiRequestResolver
    assert len(set(DAV_STACK)) == len(DAV_STACK)


def test_reports_of_one_name_answer_for_their_own_resources(live_server: LiveServer) -> None:
    assert live_server.services is not None
    settings, services = live_server.settings, live_server.services
    extensions = dav_extensions(
        calendars_room(settings, services), addressbooks_room(settings, services)
    )
    assert SYNC in extensions.reports  # calendars and address books both answer it
    assert {"{urn:ietf:params:xml:ns:caldav}calendar-query", SYNC} <= set(extensions.reports)
    assert extensions.search is not None
    assert DavExtensions().reports == {} and DavExtensions().search is None


def test_an_app_given_no_extensions_answers_no_report_and_no_search(
    live_server: LiveServer,
) -> None:
    assert live_server.services is not None
    settings, services = live_server.settings, live_server.services
    bare = WsgiDAVApp({**dav_config(settings, services), DAV_EXTENSIONS: DavExtensions()})
    full = make_app(settings, services)
    home = "/remote.php/dav/calendars/alice/personal/"
    assert call(full, "PROPFIND", home)[0].startswith("207")  # the default calendar exists
    assert call(bare, "REPORT", home, REPORT_BODY)[0].startswith("403")
    assert call(full, "REPORT", home, REPORT_BODY)[0].startswith("207")
    bare_allow = call(bare, "OPTIONS", "/remote.php/dav/files/alice/")[1]["Allow"]
    full_allow = call(full, "OPTIONS", "/remote.php/dav/files/alice/")[1]["Allow"]
    assert "SEARCH" not in bare_allow and "SEARCH" in full_allow
    # building the bare app changed nothing in the full one, built after or before it
    assert call(make_app(settings, services), "REPORT", home, REPORT_BODY)[0].startswith("207")


def test_the_deferred_rooms_name_their_reports_in_order() -> None:
    """``make_app`` lists a room's REPORTs by the names its package gives, before importing
    it: they are exactly the names of the room's reports, in their order."""
    from oxidav.providers import caldav, carddav
    from oxidav.providers.caldav.reports import REPORTS as CALDAV_REPORTS
    from oxidav.providers.carddav.reports import REPORTS as CARDDAV_REPORTS

    assert tuple(report.name for report in CALDAV_REPORTS) == caldav.REPORT_NAMES
    assert tuple(report.name for report in CARDDAV_REPORTS) == carddav.REPORT_NAMES


def test_the_first_request_of_a_deferred_room_may_be_a_report(live_server: LiveServer) -> None:
    assert live_server.services is not None
    settings, services = live_server.settings, live_server.services
    app = make_app(settings, services)
    home = "/remote.php/dav/calendars/alice/personal/"
    assert call(app, "REPORT", home, REPORT_BODY)[0].startswith("207")
    assert call(app, "PROPFIND", home)[0].startswith("207")
    assert call(app, "REPORT", home, REPORT_BODY)[0].startswith("207")
