"""Fuzzed iCalendar and vCard bodies PUT to a calendar and an address book; whatever is
accepted must read back (GET, PROPFIND, a calendar-query or addressbook-query REPORT).
Properties: see tests/fuzz/conftest.py."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from tests.support.fuzz import BOOK, CALENDAR, Fuzz
from tests.support.raw_http import build_request, exchange

_fresh = itertools.count()
_values = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=30)
_stamps = st.sampled_from(
    [
        "20240101T100000Z",
        "20240101T100000",
        "20240101",
        "18000101T000000Z",
        "99991231T235959Z",
        "2024-01-01",
        "garbage",
        "",
        "20241340T990000Z",
        "TZID=Nowhere/City:20240101T100000",
    ]
)
_rules = st.sampled_from(
    [
        "",
        "FREQ=DAILY;COUNT=3",
        "FREQ=WEEKLY;UNTIL=20240301T000000Z",
        "FREQ=MONTHLY;BYDAY=-1FR;COUNT=4",
        "FREQ=YEARLY;COUNT=2",
        "FREQ=BOGUS",
        "COUNT=-1",
        "FREQ=DAILY;INTERVAL=0;COUNT=2",
        "FREQ=DAILY;COUNT=99999999999999999999",
        "FREQ=WEEKLY;BYDAY=XX;COUNT=2",
        "garbage",
    ]
)


@st.composite
def _ical(draw: st.DrawFn) -> bytes:
    uid = draw(st.sampled_from(["u1", "u2", "", "seed-event"]) | _values)
    comp = draw(st.sampled_from(["VEVENT", "VTODO", "VJOURNAL", "VFREEBUSY", "VBOGUS"]))
    lines = [
        "BEGIN:VCALENDAR",
        "VERSION:2.0",
        "PRODID:-//fuzz//EN",
        f"BEGIN:{comp}",
        f"UID:{uid}",
        f"DTSTAMP:{draw(_stamps)}",
        f"DTSTART:{draw(_stamps)}",
    ]
    if draw(st.booleans()):
        lines.append(f"DTEND:{draw(_stamps)}")
    else:
        lines.append(f"DURATION:{draw(st.sampled_from(['PT1H', 'P1D', '-PT1H', 'P', 'x']))}")
    rule = draw(_rules)
    if rule:
        lines.append(f"RRULE:{rule}")
    for _ in range(draw(st.integers(0, 3))):
        name = draw(
            st.sampled_from(
                [
                    "SUMMARY",
                    "EXDATE",
                    "RDATE",
                    "RECURRENCE-ID",
                    "X-FUZZ",
                    "ATTENDEE",
                    'ORGANIZER;CN="x"',
                    "DESCRIPTION",
                ]
            )
        )
        lines.append(f"{name}:{draw(_values)}")
    if draw(st.booleans()):
        lines += [
            "BEGIN:VALARM",
            "ACTION:DISPLAY",
            f"TRIGGER:{draw(st.sampled_from(['-PT15M', 'x', '']))}",
            "END:VALARM",
        ]
    lines += [f"END:{comp}", "END:VCALENDAR"]
    if draw(st.booleans()):
        del lines[draw(st.integers(0, len(lines) - 1))]
    return ("\r\n".join(lines) + "\r\n").encode("utf-8", "surrogateescape")


@st.composite
def _vcard(draw: st.DrawFn) -> bytes:
    version = draw(st.sampled_from(["3.0", "4.0", "2.1", "", "9"]))
    lines = [
        "BEGIN:VCARD",
        f"VERSION:{version}",
        f"UID:{draw(st.sampled_from(['c1', '', 'seed-card']) | _values)}",
        f"FN:{draw(_values)}",
    ]
    for _ in range(draw(st.integers(0, 4))):
        name = draw(
            st.sampled_from(
                [
                    "N",
                    "EMAIL",
                    "TEL;TYPE=cell",
                    "PHOTO;ENCODING=b",
                    "ADR",
                    "BDAY",
                    "X-FUZZ",
                    "item1.EMAIL",
                    "CATEGORIES",
                    "KEY;ENCODING=BASE64",
                ]
            )
        )
        lines.append(f"{name}:{draw(_values)}")
    lines.append("END:VCARD")
    if draw(st.booleans()):
        del lines[draw(st.integers(0, len(lines) - 1))]
    return ("\r\n".join(lines) + "\r\n").encode("utf-8", "surrogateescape")


def _mutate(body: bytes) -> st.SearchStrategy[bytes]:
    return st.tuples(st.integers(0, len(body)), st.binary(max_size=6)).map(
        lambda cut: body[: cut[0]] + cut[1] + body[cut[0] :]
    )


_CALENDAR_QUERY = (
    b'<C:calendar-query xmlns:D="DAV:" xmlns:C="urn:ietf:params:xml:ns:caldav"><D:prop>'
    b'<D:getetag/><C:calendar-data/></D:prop><C:filter><C:comp-filter name="VCALENDAR">'
    b'<C:comp-filter name="VEVENT"><C:time-range start="20230101T000000Z" end="20260101T000000Z"/>'
    b"</C:comp-filter></C:comp-filter></C:filter></C:calendar-query>"
)
_CARD_QUERY = (
    b'<A:addressbook-query xmlns:D="DAV:" xmlns:A="urn:ietf:params:xml:ns:carddav"><D:prop>'
    b'<D:getetag/><A:address-data/></D:prop><A:filter><A:prop-filter name="FN"><A:text-match>'
    b"a</A:text-match></A:prop-filter></A:filter></A:addressbook-query>"
)


def _reads_back(fuzz: Fuzz, path: str, report_on: str, report: bytes) -> None:
    for request, method in (
        (build_request("GET", path), "GET"),
        (build_request("REPORT", report_on, {"Depth": "1"}, report), "REPORT"),
    ):
        answer = exchange(fuzz.port, request, method)
        assert answer.status < 500, (method, answer.status, answer.body[:300])


@given(body=_ical().flatmap(lambda b: st.one_of(st.just(b), _mutate(b))))
def test_put_icalendar(fuzz: Fuzz, body: bytes) -> None:
    path = f"{CALENDAR}/fuzz-{next(_fresh)}.ics"
    request = build_request("PUT", path, {"Content-Type": "text/calendar"}, body)
    fuzz.send(request, "PUT", reads=(CALENDAR + "/",))
    _reads_back(fuzz, path, CALENDAR + "/", _CALENDAR_QUERY)


@given(body=_vcard().flatmap(lambda b: st.one_of(st.just(b), _mutate(b))))
def test_put_vcard(fuzz: Fuzz, body: bytes) -> None:
    path = f"{BOOK}/fuzz-{next(_fresh)}.vcf"
    fuzz.send(
        build_request("PUT", path, {"Content-Type": "text/vcard"}, body), "PUT", reads=(BOOK + "/",)
    )
    _reads_back(fuzz, path, BOOK + "/", _CARD_QUERY)
