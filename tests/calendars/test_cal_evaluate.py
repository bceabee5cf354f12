"""calendar-query filter evaluation (RFC 4791 §9.7-9.9): one case per rule of the RFC tables."""

from __future__ import annotations

from zoneinfo import ZoneInfo

import icalendar
import pytest

from oxidav.calendars.evaluate import FilterEvaluator
from tests.support.calendar_samples import make_filter, make_ics

NY = ZoneInfo("America/New_York")


def check(component: str, inner: str, floating=None, extra: str = "") -> bool:
    calendar = icalendar.Calendar.from_ical(make_ics(component, extra=extra))
    evaluator = FilterEvaluator(floating) if floating else FilterEvaluator()
    return evaluator.matches(calendar, make_filter(inner))


def tr(start: str | None, end: str | None, comp: str = "VEVENT") -> str:
    attrs = (f' start="{start}"' if start else "") + (f' end="{end}"' if end else "")
    return f'<C:comp-filter name="{comp}"><C:time-range{attrs}/></C:comp-filter>'


EV = """BEGIN:VEVENT
UID:e1
DTSTAMP:20260101T000000Z
{props}
END:VEVENT"""


def ev(*props: str) -> str:
    return EV.format(props="\n".join(props))


# -- VEVENT (§9.9 first table) ------------------------------------------------------------------

TIMED = ev("DTSTART:20260105T100000Z", "DTEND:20260105T110000Z", "SUMMARY:Team meeting")


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("20260105T110000Z", "20260105T120000Z", False),  # range starts at DTEND
        ("20260105T105959Z", "20260105T120000Z", True),
        ("20260105T090000Z", "20260105T100000Z", False),  # range ends at DTSTART
        ("20260105T090000Z", "20260105T100001Z", True),
        ("20260105T103000Z", None, True),
        (None, "20260105T100000Z", False),
        (None, "20260105T100001Z", True),
        ("20260105T110000Z", None, False),
    ],
)
def test_event_with_dtend(start, end, expected) -> None:
    assert check(TIMED, tr(start, end)) is expected


@pytest.mark.parametrize(
    "props",
    [
        ("DTSTART:20260105T100000Z", "DTEND:20260105T100000Z"),
        ("DTSTART:20260105T100000Z",),
        ("DTSTART:20260105T100000Z", "DURATION:PT0S"),
    ],
)
def test_zero_duration_event_matches_at_range_start(props) -> None:
    component = ev(*props)
    assert check(component, tr("20260105T100000Z", "20260105T110000Z"))
    assert not check(component, tr("20260105T090000Z", "20260105T100000Z"))
    assert not check(component, tr("20260105T100001Z", "20260105T110000Z"))


def test_event_with_duration() -> None:
    component = ev("DTSTART:20260105T100000Z", "DURATION:PT90M")
    assert check(component, tr("20260105T112959Z", "20260105T120000Z"))
    assert not check(component, tr("20260105T113000Z", "20260105T120000Z"))


def test_all_day_event_is_read_in_the_floating_zone() -> None:
    component = ev("DTSTART;VALUE=DATE:20260105")
    assert check(component, tr("20260105T230000Z", "20260106T000000Z"))
    assert not check(component, tr("20260106T000000Z", "20260106T010000Z"))
    # In New York the day runs from 05:00Z to 05:00Z the next day.
    assert check(component, tr("20260106T010000Z", "20260106T020000Z"), floating=NY)
    assert not check(component, tr("20260105T000000Z", "20260105T050000Z"), floating=NY)


def test_multi_day_all_day_event() -> None:
    component = ev("DTSTART;VALUE=DATE:20260105", "DTEND;VALUE=DATE:20260108")
    assert check(component, tr("20260107T120000Z", "20260107T130000Z"))
    assert not check(component, tr("20260108T000000Z", "20260109T000000Z"))


def test_zoned_event_is_compared_in_utc() -> None:
    component = ev(
        "DTSTART;TZID=Europe/Berlin:20260105T100000", "DTEND;TZID=Europe/Berlin:20260105T110000"
    )
    assert check(component, tr("20260105T090000Z", "20260105T093000Z"))
    assert not check(component, tr("20260105T100000Z", "20260105T110000Z"))


def test_zoned_event_with_vtimezone_of_unknown_name() -> None:
    vtimezone = """BEGIN:VTIMEZONE
TZID:My Zone
BEGIN:STANDARD
DTSTART:19700101T000000
TZOFFSETFROM:+0300
TZOFFSETTO:+0300
END:STANDARD
END:VTIMEZONE
"""
    component = ev("DTSTART;TZID=My Zone:20260105T100000", "DURATION:PT1H")
    assert check(component, tr("20260105T070000Z", "20260105T071000Z"), extra=vtimezone)
    assert not check(component, tr("20260105T090000Z", "20260105T100000Z"), extra=vtimezone)


def test_floating_event_uses_the_floating_zone() -> None:
    component = ev("DTSTART:20260105T100000", "DTEND:20260105T110000")
    assert check(component, tr("20260105T100000Z", "20260105T103000Z"))
    assert not check(component, tr("20260105T150000Z", "20260105T153000Z"))
    assert check(component, tr("20260105T150000Z", "20260105T153000Z"), floating=NY)


# -- recurrence ---------------------------------------------------------------------------------

WEEKLY = """BEGIN:VEVENT
UID:r1
DTSTAMP:20260101T000000Z
DTSTART;TZID=Europe/Berlin:20260105T100000
DTEND;TZID=Europe/Berlin:20260105T110000
RRULE:FREQ=WEEKLY;COUNT=10
EXDATE;TZID=Europe/Berlin:20260119T100000
RDATE;TZID=Europe/Berlin:20260107T150000
SUMMARY:Weekly
END:VEVENT
BEGIN:VEVENT
UID:r1
DTSTAMP:20260101T000000Z
RECURRENCE-ID;TZID=Europe/Berlin:20260126T100000
DTSTART;TZID=Europe/Berlin:20260127T140000
DTEND;TZID=Europe/Berlin:20260127T150000
SUMMARY:Moved
END:VEVENT"""


@pytest.mark.parametrize(
    ("start", "end", "expected"),
    [
        ("20260112T090000Z", "20260112T093000Z", True),  # second instance (Berlin = UTC+1)
        ("20260119T080000Z", "20260119T120000Z", False),  # EXDATE
        ("20260107T140000Z", "20260107T141500Z", True),  # RDATE
        ("20260126T080000Z", "20260126T120000Z", False),  # overridden slot is empty
        ("20260127T130000Z", "20260127T131500Z", True),  # the moved instance
        ("20260309T090000Z", "20260309T093000Z", True),  # 10th instance
        ("20260316T080000Z", "20260316T120000Z", False),  # after COUNT
        ("20260104T000000Z", "20260105T085959Z", False),  # before the first
    ],
)
def test_recurring_event_instances(start, end, expected) -> None:
    assert check(WEEKLY, tr(start, end)) is expected


def test_recurrence_follows_dst() -> None:
    # 2026-03-30 is after the switch to CEST: 10:00 Berlin = 08:00Z.
    component = ev(
        "DTSTART;TZID=Europe/Berlin:20260323T100000",
        "DURATION:PT30M",
        "RRULE:FREQ=WEEKLY",
    )
    assert check(component, tr("20260330T080000Z", "20260330T081000Z"))
    assert not check(component, tr("20260330T090000Z", "20260330T093000Z"))


def test_infinite_rule_matches_far_future_and_open_ranges() -> None:
    component = ev("DTSTART:20200101T100000Z", "DURATION:PT1H", "RRULE:FREQ=DAILY")
    assert check(component, tr("20290615T103000Z", "20290615T103100Z"))
    assert check(component, tr("20290615T103000Z", None))
    assert not check(component, tr(None, "20200101T100000Z"))
    assert not check(component, tr("20290615T113000Z", "20290616T095959Z"))


def test_property_filters_apply_to_the_component_an_instance_comes_from() -> None:
    moved = (
        '<C:comp-filter name="VEVENT"><C:time-range start="{}" end="{}"/>'
        '<C:prop-filter name="SUMMARY"><C:text-match>moved</C:text-match></C:prop-filter>'
        "</C:comp-filter>"
    )
    assert check(WEEKLY, moved.format("20260127T000000Z", "20260128T000000Z"))
    assert not check(WEEKLY, moved.format("20260112T000000Z", "20260113T000000Z"))


def test_all_day_recurrence_with_exdate() -> None:
    component = ev(
        "DTSTART;VALUE=DATE:20260101",
        "RRULE:FREQ=YEARLY",
        "EXDATE;VALUE=DATE:20280101",
    )
    assert check(component, tr("20270101T120000Z", "20270101T130000Z"))
    assert not check(component, tr("20280101T000000Z", "20280102T000000Z"))
    assert check(component, tr("20290101T000000Z", "20290102T000000Z"))


def test_recurrence_with_until_in_utc() -> None:
    component = ev(
        "DTSTART;TZID=America/New_York:20260105T090000",
        "DURATION:PT1H",
        "RRULE:FREQ=DAILY;UNTIL=20260107T140000Z",
    )
    assert check(component, tr("20260107T140000Z", "20260107T141000Z"))
    assert not check(component, tr("20260108T140000Z", "20260108T141000Z"))


# -- VTODO (§9.9 second table) ------------------------------------------------------------------

TD = """BEGIN:VTODO
UID:t1
DTSTAMP:20260101T000000Z
{props}
END:VTODO"""


def todo(*props: str) -> str:
    return TD.format(props="\n".join(props))


def ttr(start: str | None, end: str | None) -> str:
    return tr(start, end, "VTODO")


def test_todo_with_start_and_duration() -> None:
    component = todo("DTSTART:20260105T100000Z", "DURATION:PT1H")
    assert check(component, ttr("20260105T110000Z", "20260105T120000Z"))  # start <= S+D
    assert not check(component, ttr("20260105T110001Z", "20260105T120000Z"))
    assert not check(component, ttr("20260105T090000Z", "20260105T100000Z"))
    assert check(component, ttr("20260105T090000Z", "20260105T100001Z"))


def test_todo_with_start_and_due() -> None:
    component = todo("DTSTART:20260105T100000Z", "DUE:20260105T110000Z")
    assert check(component, ttr("20260105T103000Z", "20260105T104000Z"))
    assert not check(component, ttr("20260105T110000Z", "20260105T120000Z"))
    assert not check(component, ttr("20260105T090000Z", "20260105T100000Z"))


def test_todo_with_start_only() -> None:
    component = todo("DTSTART:20260105T100000Z")
    assert check(component, ttr("20260105T100000Z", "20260105T100001Z"))
    assert not check(component, ttr("20260105T100001Z", "20260105T110000Z"))


def test_todo_with_due_only() -> None:
    component = todo("DUE:20260105T100000Z")
    assert check(component, ttr("20260105T090000Z", "20260105T100000Z"))  # end >= DUE
    assert not check(component, ttr("20260105T100000Z", "20260105T110000Z"))  # start < DUE


def test_todo_with_completed_and_created() -> None:
    component = todo("CREATED:20260101T100000Z", "COMPLETED:20260110T100000Z")
    assert check(component, ttr("20260105T000000Z", "20260106T000000Z"))
    assert check(component, ttr("20260110T100000Z", "20260111T000000Z"))
    assert not check(component, ttr("20260111T000000Z", "20260112T000000Z"))
    assert not check(component, ttr("20251201T000000Z", "20260101T095959Z"))


def test_todo_with_completed_only() -> None:
    component = todo("COMPLETED:20260110T100000Z")
    assert check(component, ttr("20260110T100000Z", "20260110T110000Z"))
    assert check(component, ttr("20260110T090000Z", "20260110T100000Z"))
    assert not check(component, ttr("20260110T100001Z", "20260110T110000Z"))


def test_todo_with_created_only() -> None:
    component = todo("CREATED:20260110T100000Z")
    assert check(component, ttr("20300101T000000Z", "20300102T000000Z"))
    assert not check(component, ttr("20260101T000000Z", "20260110T100000Z"))


def test_todo_without_dates_matches_every_range() -> None:
    assert check(todo("SUMMARY:someday"), ttr("19900101T000000Z", "19900102T000000Z"))


def test_recurring_todo() -> None:
    component = todo("DTSTART:20260105T100000Z", "DUE:20260105T110000Z", "RRULE:FREQ=MONTHLY")
    assert check(component, ttr("20260405T103000Z", "20260405T103100Z"))
    assert not check(component, ttr("20260406T103000Z", "20260406T103100Z"))


# -- VJOURNAL and VFREEBUSY ---------------------------------------------------------------------


def test_journal() -> None:
    dated = (
        "BEGIN:VJOURNAL\nUID:j\nDTSTAMP:20260101T000000Z\nDTSTART;VALUE=DATE:20260105\nEND:VJOURNAL"
    )
    timed = (
        "BEGIN:VJOURNAL\nUID:j\nDTSTAMP:20260101T000000Z\nDTSTART:20260105T100000Z\nEND:VJOURNAL"
    )
    undated = "BEGIN:VJOURNAL\nUID:j\nDTSTAMP:20260101T000000Z\nSUMMARY:x\nEND:VJOURNAL"
    assert check(dated, tr("20260105T230000Z", "20260106T000000Z", "VJOURNAL"))
    assert not check(dated, tr("20260106T000000Z", "20260107T000000Z", "VJOURNAL"))
    assert check(timed, tr("20260105T100000Z", "20260105T100001Z", "VJOURNAL"))
    assert not check(timed, tr("20260105T090000Z", "20260105T100000Z", "VJOURNAL"))
    assert not check(undated, tr("19000101T000000Z", "29000101T000000Z", "VJOURNAL"))


def test_freebusy_component() -> None:
    periods = (
        "BEGIN:VFREEBUSY\nUID:f\nDTSTAMP:20260101T000000Z\n"
        "FREEBUSY:20260105T100000Z/PT1H,20260106T100000Z/20260106T120000Z\nEND:VFREEBUSY"
    )
    bounded = (
        "BEGIN:VFREEBUSY\nUID:f\nDTSTAMP:20260101T000000Z\n"
        "DTSTART:20260105T000000Z\nDTEND:20260106T000000Z\nEND:VFREEBUSY"
    )
    assert check(periods, tr("20260106T110000Z", "20260106T113000Z", "VFREEBUSY"))
    assert not check(periods, tr("20260105T110000Z", "20260106T100000Z", "VFREEBUSY"))
    assert check(bounded, tr("20260106T000000Z", "20260106T010000Z", "VFREEBUSY"))  # <= DTEND
    assert not check(bounded, tr("20260106T000001Z", "20260106T010000Z", "VFREEBUSY"))


# -- VALARM -------------------------------------------------------------------------------------


def alarm_event(*alarm: str, props: tuple[str, ...] = ()) -> str:
    lines = [
        "BEGIN:VEVENT",
        "UID:a1",
        "DTSTAMP:20260101T000000Z",
        "DTSTART:20260105T100000Z",
        "DTEND:20260105T110000Z",
        *props,
        "BEGIN:VALARM",
        "ACTION:DISPLAY",
        "DESCRIPTION:x",
        *alarm,
        "END:VALARM",
        "END:VEVENT",
    ]
    return "\n".join(lines)


def alarm_range(start: str, end: str) -> str:
    return (
        '<C:comp-filter name="VEVENT"><C:comp-filter name="VALARM">'
        f'<C:time-range start="{start}" end="{end}"/></C:comp-filter></C:comp-filter>'
    )


def test_alarm_relative_to_start() -> None:
    component = alarm_event("TRIGGER:-PT15M")
    assert check(component, alarm_range("20260105T094500Z", "20260105T095000Z"))
    assert not check(component, alarm_range("20260105T095000Z", "20260105T100000Z"))
    assert not check(component, alarm_range("20260105T093000Z", "20260105T094500Z"))


def test_alarm_relative_to_end_with_repeat() -> None:
    component = alarm_event("TRIGGER;RELATED=END:PT5M", "REPEAT:2", "DURATION:PT10M")
    assert check(component, alarm_range("20260105T112500Z", "20260105T112600Z"))  # 3rd
    assert not check(component, alarm_range("20260105T112600Z", "20260105T120000Z"))


def test_alarm_absolute() -> None:
    component = alarm_event("TRIGGER;VALUE=DATE-TIME:20260101T080000Z")
    assert check(component, alarm_range("20260101T080000Z", "20260101T080001Z"))
    assert not check(component, alarm_range("20260105T000000Z", "20260106T000000Z"))


def test_alarm_of_a_recurring_event() -> None:
    component = alarm_event("TRIGGER:-PT1H", props=("RRULE:FREQ=DAILY;COUNT=5",))
    assert check(component, alarm_range("20260108T090000Z", "20260108T090100Z"))
    assert not check(component, alarm_range("20260110T090000Z", "20260110T090100Z"))


def test_event_and_alarm_ranges_together() -> None:
    component = alarm_event("TRIGGER:-PT1H", props=("RRULE:FREQ=DAILY;COUNT=5",))
    both = (
        '<C:comp-filter name="VEVENT"><C:time-range start="{}" end="{}"/>'
        '<C:comp-filter name="VALARM"><C:time-range start="{}" end="{}"/></C:comp-filter>'
        "</C:comp-filter>"
    )
    # The alarm window holds the 3rd instance's alarm; the event window the 3rd instance.
    assert check(
        component,
        both.format("20260107T100000Z", "20260107T110000Z", "20260107T090000Z", "20260107T093000Z"),
    )
    # Event window on the 2nd instance, alarm window on the 3rd: no single instance matches.
    assert not check(
        component,
        both.format("20260106T100000Z", "20260106T110000Z", "20260107T090000Z", "20260107T093000Z"),
    )


def test_valarm_without_time_range() -> None:
    component = alarm_event("TRIGGER:-PT1H")
    exists = '<C:comp-filter name="VEVENT"><C:comp-filter name="VALARM"/></C:comp-filter>'
    missing = (
        '<C:comp-filter name="VEVENT"><C:comp-filter name="VALARM"><C:is-not-defined/>'
        "</C:comp-filter></C:comp-filter>"
    )
    assert check(component, exists)
    assert not check(component, missing)
    assert check(TIMED, missing)


# -- comp-filter / prop-filter / param-filter / text-match --------------------------------------


def prop(name: str, body: str = "") -> str:
    inner = f'<C:prop-filter name="{name}">{body}</C:prop-filter>'
    return f'<C:comp-filter name="VEVENT">{inner}</C:comp-filter>'


def text(value: str, collation: str | None = None, negate: bool = False) -> str:
    attrs = (f' collation="{collation}"' if collation else "") + (
        ' negate-condition="yes"' if negate else ""
    )
    return f"<C:text-match{attrs}>{value}</C:text-match>"


def test_comp_filter_presence_and_absence() -> None:
    assert check(TIMED, '<C:comp-filter name="VEVENT"/>')
    assert not check(TIMED, '<C:comp-filter name="VTODO"/>')
    assert check(TIMED, '<C:comp-filter name="VTODO"><C:is-not-defined/></C:comp-filter>')
    assert not check(TIMED, '<C:comp-filter name="VEVENT"><C:is-not-defined/></C:comp-filter>')


def test_text_match_collations() -> None:
    assert check(TIMED, prop("SUMMARY", text("MEETING")))  # i;ascii-casemap by default
    assert not check(TIMED, prop("SUMMARY", text("MEETING", "i;octet")))
    assert check(TIMED, prop("SUMMARY", text("meeting", "i;octet")))
    assert check(TIMED, prop("SUMMARY", text("TEAM MEET", "i;unicode-casemap")))
    assert not check(TIMED, prop("SUMMARY", text("MEETING", negate=True)))
    assert check(TIMED, prop("SUMMARY", text("lunch", negate=True)))


def test_unicode_casemap_folds_beyond_ascii() -> None:
    component = ev("DTSTART:20260105T100000Z", "SUMMARY:Straße Café")
    assert check(component, prop("SUMMARY", text("STRASSE", "i;unicode-casemap")))
    assert check(component, prop("SUMMARY", text("CAFÉ", "i;unicode-casemap")))
    assert not check(component, prop("SUMMARY", text("CAFÉ")))  # ASCII folding only


def test_text_match_on_escaped_text() -> None:
    component = ev("DTSTART:20260105T100000Z", "SUMMARY:a\\, b\\; c")
    assert check(component, prop("SUMMARY", text("a, b; c", "i;octet")))


def test_prop_presence_and_is_not_defined() -> None:
    assert check(TIMED, prop("SUMMARY"))
    assert not check(TIMED, prop("LOCATION"))
    assert check(TIMED, prop("LOCATION", "<C:is-not-defined/>"))
    assert not check(TIMED, prop("SUMMARY", "<C:is-not-defined/>"))
    # A text test on a missing property fails, negated or not.
    assert not check(TIMED, prop("LOCATION", text("x", negate=True)))


ATTENDEES = ev(
    "DTSTART:20260105T100000Z",
    "ATTENDEE;PARTSTAT=ACCEPTED;CN=Alice:mailto:alice@example.com",
    "ATTENDEE;PARTSTAT=NEEDS-ACTION:mailto:bob@example.com",
    "CATEGORIES:Work,Travel",
    "CATEGORIES:Urgent",
)


def test_multiple_property_instances() -> None:
    assert check(ATTENDEES, prop("ATTENDEE", text("bob@")))
    # Negation holds for the instance that lacks the text.
    assert check(ATTENDEES, prop("ATTENDEE", text("bob@", negate=True)))
    assert not check(ATTENDEES, prop("ATTENDEE", text("example.com", negate=True)))
    assert check(ATTENDEES, prop("CATEGORIES", text("travel")))
    assert check(ATTENDEES, prop("CATEGORIES", text("urgent")))


def test_param_filters() -> None:
    accepted_bob = text("bob") + (
        f'<C:param-filter name="PARTSTAT">{text("ACCEPTED")}</C:param-filter>'
    )
    assert not check(ATTENDEES, prop("ATTENDEE", accepted_bob))
    accepted_alice = text("alice") + (
        f'<C:param-filter name="PARTSTAT">{text("accepted")}</C:param-filter>'
    )
    assert check(ATTENDEES, prop("ATTENDEE", accepted_alice))
    no_cn = text("bob") + '<C:param-filter name="CN"><C:is-not-defined/></C:param-filter>'
    assert check(ATTENDEES, prop("ATTENDEE", no_cn))
    has_cn = text("bob") + '<C:param-filter name="CN"/>'
    assert not check(ATTENDEES, prop("ATTENDEE", has_cn))


def test_prop_filter_time_range() -> None:
    body = '<C:time-range start="20260105T000000Z" end="20260106T000000Z"/>'
    assert check(TIMED, prop("DTSTART", body))
    assert not check(TIMED, prop("DTSTAMP", body))
    assert not check(TIMED, prop("SUMMARY", body))


def test_vcalendar_prop_filter() -> None:
    assert check(
        TIMED, '<C:prop-filter name="PRODID"><C:text-match>test</C:text-match></C:prop-filter>'
    )
    assert not check(TIMED, '<C:prop-filter name="METHOD"/>')


def test_filters_are_anded() -> None:
    both = (
        '<C:comp-filter name="VEVENT">'
        '<C:time-range start="20260105T000000Z" end="20260106T000000Z"/>'
        '<C:prop-filter name="SUMMARY"><C:text-match>team</C:text-match></C:prop-filter>'
        '<C:prop-filter name="UID"><C:text-match>{}</C:text-match></C:prop-filter></C:comp-filter>'
    )
    assert check(TIMED, both.format("e1"))
    assert not check(TIMED, both.format("zz"))


def test_empty_vcalendar_filter_matches_everything() -> None:
    assert check(TIMED, "")
