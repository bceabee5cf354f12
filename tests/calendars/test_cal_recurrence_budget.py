"""Recurrence under a budget (issue 24, case 3), at the unit level: the work counter stops a
rule that never occurs, rules jumped close to a far window give exactly the instances a
straightforward expansion gives, the PUT-time limits, and the parsed-object cache bound."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import icalendar
import pytest
import recurring_ical_events
from dateutil.rrule import rrulestr
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from oxidav.calendars.cache import ParsedCache
from oxidav.calendars.errors import (
    InvalidCalendarObject,
    RecurrenceBudgetExceeded,
    TooManyInstances,
)
from oxidav.calendars.recurrence import instances
from oxidav.calendars.rules import ExpansionBudget, RecurrenceLimits, budgeted, jumped
from oxidav.calendars.validation import instances_per_day, validate_object
from tests.support.calendar_samples import event, make_ics

NEVER = "FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30"


def _calendar(*props: str) -> icalendar.Calendar:
    return icalendar.Calendar.from_ical(make_ics(event("r", *props)))


def _events(calendar: icalendar.Calendar) -> list[icalendar.cal.Component]:
    return [c for c in calendar.subcomponents if c.name == "VEVENT"]


def test_a_rule_that_never_occurs_stops_after_the_budget() -> None:
    budget = ExpansionBudget(max_work=1000, max_instances=10)
    rule = budgeted(rrulestr(NEVER, dtstart=datetime(2026, 1, 1)), budget)
    with pytest.raises(RecurrenceBudgetExceeded):
        next(iter(rule), None)
    assert budget.spent == 1001


def test_put_validation_refuses_a_rule_that_never_occurs_within_its_budget() -> None:
    data = make_ics(event("n", "DTSTART:20260101T100000Z", "DURATION:PT1H", f"RRULE:{NEVER}"))
    limits = RecurrenceLimits(max_work=2000)
    with pytest.raises(InvalidCalendarObject, match="no instance"):
        validate_object(
            data.encode(), allowed_components={"VEVENT"}, max_size=1 << 20, limits=limits
        )


def test_far_dtstart_daily_rule_is_expanded_in_a_few_steps() -> None:
    calendar = _calendar("DTSTART:18000101T100000Z", "DURATION:PT1H", "RRULE:FREQ=DAILY")
    budget = ExpansionBudget(max_work=200, max_instances=100)
    window = (datetime(2026, 3, 1, tzinfo=UTC), datetime(2026, 3, 4, tzinfo=UTC))
    starts = [i.start for i in instances(_events(calendar), window, budget)]
    assert starts == [datetime(2026, 3, d, 10, tzinfo=UTC) for d in (1, 2, 3)]
    assert budget.spent < 200


def test_instances_per_object_are_capped() -> None:
    calendar = _calendar("DTSTART:20260101T100000Z", "DURATION:PT1H", "RRULE:FREQ=HOURLY")
    budget = ExpansionBudget(max_work=10**6, max_instances=100)
    window = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 2, 1, tzinfo=UTC))
    with pytest.raises(RecurrenceBudgetExceeded, match="caldav_max_instances"):
        list(instances(_events(calendar), window, budget))


def test_one_budget_is_shared_by_every_object_of_a_request() -> None:
    calendar = _calendar("DTSTART:20260101T100000Z", "DURATION:PT1H", "RRULE:FREQ=DAILY")
    budget = ExpansionBudget(max_work=100, max_instances=1000)
    window = (datetime(2026, 1, 1, tzinfo=UTC), datetime(2026, 1, 21, tzinfo=UTC))
    list(instances(_events(calendar), window, budget))
    with pytest.raises(RecurrenceBudgetExceeded):
        for _ in range(10):
            list(instances(_events(calendar), window, budget))


@pytest.mark.parametrize(
    ("rule", "per_day"),
    [
        ("FREQ=SECONDLY", 86400),
        ("FREQ=MINUTELY;INTERVAL=15", 96),
        ("FREQ=HOURLY", 24),
        ("FREQ=DAILY", 1),
        ("FREQ=DAILY;BYHOUR=9,17;BYMINUTE=0,30", 4),
        ("FREQ=SECONDLY;BYSECOND=0;BYMINUTE=0", 24),
        ("FREQ=HOURLY;INTERVAL=2;BYMINUTE=0,20,40", 36),
        ("FREQ=WEEKLY;BYDAY=MO,TU", 1),
    ],
)
def test_instances_per_day_bound(rule: str, per_day: int) -> None:
    assert instances_per_day(icalendar.prop.vRecur.from_ical(rule)) == per_day


@pytest.mark.parametrize(
    ("rule", "error"),
    [
        ("FREQ=SECONDLY", InvalidCalendarObject),
        ("FREQ=MINUTELY", InvalidCalendarObject),
        ("FREQ=DAILY;BYHOUR=0,1,2,3,4,5,6,7,8,9,10,11,12;BYMINUTE=0,30", InvalidCalendarObject),
        ("FREQ=DAILY;COUNT=10001", TooManyInstances),
    ],
)
def test_put_validation_refuses_dense_or_long_rules(rule: str, error: type[Exception]) -> None:
    data = make_ics(event("d", "DTSTART:20260101T100000Z", "DURATION:PT1H", f"RRULE:{rule}"))
    with pytest.raises(error):
        validate_object(data.encode(), allowed_components={"VEVENT"}, max_size=1 << 20)


def test_put_validation_accepts_hourly_and_sparse_rules() -> None:
    for rule in ("FREQ=HOURLY", "FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29", "FREQ=DAILY;COUNT=10000"):
        data = make_ics(event("o", "DTSTART:20260101T100000Z", "DURATION:PT1H", f"RRULE:{rule}"))
        validate_object(data.encode(), allowed_components={"VEVENT"}, max_size=1 << 20)


def test_parsed_cache_is_bounded_in_bytes() -> None:
    cache = ParsedCache(size=1000, max_text_bytes=4000)
    for n in range(50):
        cache.get(f"etag{n}", make_ics(event(f"u{n}", "DTSTART:20260101T100000Z")))
    assert cache.text_bytes <= 4000
    assert 0 < len(cache) < 50


# -- jumped rules == straightforward expansion --------------------------------------------------

_FREQS = {
    "SECONDLY": timedelta(seconds=1),
    "MINUTELY": timedelta(minutes=1),
    "HOURLY": timedelta(hours=1),
    "DAILY": timedelta(days=1),
    "WEEKLY": timedelta(weeks=1),
    "MONTHLY": timedelta(days=31),
    "YEARLY": timedelta(days=366),
}
_DAYS = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"]


@st.composite
def _rules(draw: st.DrawFn) -> tuple[str, datetime, datetime, str]:
    freq = draw(st.sampled_from(list(_FREQS)))
    interval = draw(st.integers(1, 5))
    parts = [f"FREQ={freq}", f"INTERVAL={interval}"]
    if draw(st.booleans()):
        parts.append("BYDAY=" + ",".join(draw(st.sets(st.sampled_from(_DAYS), min_size=1))))
    if draw(st.booleans()):
        parts.append("BYMONTH=" + ",".join(map(str, draw(st.sets(st.integers(1, 12), min_size=1)))))
    if draw(st.booleans()):
        days = draw(st.sets(st.integers(-31, 31).filter(bool), min_size=1, max_size=3))
        parts.append("BYMONTHDAY=" + ",".join(map(str, days)))
    if freq in ("DAILY", "WEEKLY", "MONTHLY") and draw(st.booleans()):
        parts.append(
            "BYHOUR="
            + ",".join(map(str, draw(st.sets(st.integers(0, 23), min_size=1, max_size=2))))
        )
    if freq in ("MONTHLY", "YEARLY") and len(parts) == 2 and draw(st.booleans()):
        parts.append(f"BYYEARDAY={draw(st.integers(-366, 366).filter(bool))}")
    if draw(st.booleans()):
        parts.append(f"BYSETPOS={draw(st.sampled_from([1, 2, -1]))}")
    if draw(st.booleans()):
        parts.append(f"COUNT={draw(st.integers(1, 3000))}")
    elif draw(st.booleans()):
        parts.append("UNTIL=20270101T000000Z")
    window_start = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(hours=draw(st.integers(0, 9000)))
    # The reference expansion walks from DTSTART: keep it within some 8000 periods.
    periods = draw(st.integers(0, 8000))
    earliest = datetime(1800, 1, 2, tzinfo=UTC)
    dtstart = window_start - min(_FREQS[freq] * periods, window_start - earliest)
    dtstart = dtstart.replace(minute=draw(st.integers(0, 59)), second=0)
    zone = draw(st.sampled_from(["Z", "Europe/Berlin", "floating"]))
    if zone == "Z":
        start_prop = f"DTSTART:{dtstart:%Y%m%dT%H%M%S}Z"
    elif zone == "floating":
        start_prop = f"DTSTART:{dtstart:%Y%m%dT%H%M%S}"
    else:
        local = dtstart.astimezone(ZoneInfo(zone))
        start_prop = f"DTSTART;TZID={zone}:{local:%Y%m%dT%H%M%S}"
    window_end = window_start + _FREQS[freq] * draw(st.integers(1, 300))
    return ";".join(parts), window_start, window_end, start_prop


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_rules())
def test_jumped_expansion_equals_the_straightforward_one(
    case: tuple[str, datetime, datetime, str],
) -> None:
    rule, window_start, window_end, start_prop = case
    calendar = _calendar(start_prop, "DURATION:PT1H", f"RRULE:{rule}")
    try:
        series = list(recurring_ical_events.of(calendar).series)
    except Exception:  # a rule dateutil itself refuses (e.g. an empty BYHOUR/INTERVAL mix)
        return
    # Rules that (almost) never occur would make the reference walk to the year 9999: skip.
    for rule in series[0].recurrence.rrules[1:]:
        probe = ExpansionBudget(max_work=60_000, max_instances=10**9)
        try:
            for n, _ in enumerate(budgeted(rule, probe)):
                if n > 20_000:
                    break
        except RecurrenceBudgetExceeded:
            assume(False)
    expected = {
        o.start for o in recurring_ical_events.of(calendar).between(window_start, window_end)
    }
    budget = ExpansionBudget(max_work=10**8, max_instances=10**7)
    found = {i.start for i in instances(_events(calendar), (window_start, window_end), budget)}
    assert found == expected


def test_jump_keeps_count_and_until() -> None:
    budget = ExpansionBudget(max_work=10**6, max_instances=10**6)
    rule = rrulestr("FREQ=DAILY;COUNT=10", dtstart=datetime(2026, 1, 1))
    moved = jumped(rule, datetime(2026, 1, 8), budget)
    assert moved is not None and list(moved) == list(rule)[7:]
    assert jumped(rule, datetime(2026, 2, 1), budget) is None
    with_until = rrulestr("FREQ=WEEKLY;UNTIL=20260301T000000", dtstart=datetime(2026, 1, 1))
    assert jumped(with_until, datetime(2026, 6, 1), budget) is None
    monthly = rrulestr("FREQ=MONTHLY;BYDAY=-1FR", dtstart=datetime(1800, 1, 31))
    far = jumped(monthly, datetime(2600, 3, 1), budget)
    assert far is not None and far._dtstart == datetime(2600, 1, 31)
    assert list(far.between(datetime(2600, 1, 1), datetime(2601, 1, 1))) == list(
        monthly.between(datetime(2600, 1, 1), datetime(2601, 1, 1))
    )
