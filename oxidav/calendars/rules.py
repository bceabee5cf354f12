"""Recurrence rules under a work budget, and jumped close to a window before they are iterated.

dateutil's ``rrule`` walks a rule period by period from DTSTART, and keeps walking (up to the
year 9999) through periods its BYxxx parts filter out: cost grows with the distance from
DTSTART and is unbounded for a rule that never occurs. Here:

- ``BudgetedRule`` is dateutil's iteration, unchanged, that charges one unit of an
  ``ExpansionBudget`` per period it visits; an exhausted budget raises
  ``RecurrenceBudgetExceeded``. It keeps no cache of generated instances.
- ``jumped`` moves a rule's DTSTART forward by a whole number of *invariance steps*, to just
  before a window: a step after which the rule's pattern repeats exactly. For SECONDLY ..
  WEEKLY every BYxxx part is either a filter on the instant or an expansion within one period,
  so one step is INTERVAL periods. For MONTHLY and YEARLY the step is INTERVAL periods when the
  months' lengths and weekdays do not matter (only BYMONTH, BYHOUR, BYMINUTE, BYSECOND and
  month days 1..28), else the 400-year Gregorian cycle (4800 months), within which the calendar
  repeats. A rule with COUNT is jumped only when each period yields exactly one instance, so
  that the instances skipped can be subtracted from COUNT.

The jumped rule yields exactly the instances of the original rule at or after its new DTSTART.
"""

from __future__ import annotations

import math
import types
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import dateutil.rrule as du  # type: ignore[import-untyped]

from oxidav.calendars.errors import RecurrenceBudgetExceeded

_FIXED_SECONDS = {
    du.SECONDLY: 1,
    du.MINUTELY: 60,
    du.HOURLY: 3600,
    du.DAILY: 86400,
    du.WEEKLY: 7 * 86400,
}
#: Months in which the Gregorian calendar (month lengths, weekdays, leap years) repeats.
GREGORIAN_CYCLE_MONTHS = 400 * 12


class ExpansionBudget:
    """Work allowed to one request (or one validation): ``max_work`` periods visited plus
    instances produced, and at most ``max_instances`` instances of any one object."""

    def __init__(self, max_work: int, max_instances: int) -> None:
        self.max_work = max_work
        self.max_instances = max_instances
        self.spent = 0

    def spend(self, units: int = 1) -> None:
        self.spent += units
        if self.spent > self.max_work:
            raise RecurrenceBudgetExceeded(
                f"recurrence expansion needs more than {self.max_work} steps"
                " (caldav_max_recurrence_work)"
            )


@dataclass(frozen=True)
class RecurrenceLimits:
    """The operator's recurrence limits (settings ``caldav_min_recurrence_interval``,
    ``caldav_max_instances``, ``caldav_max_recurrence_work``)."""

    #: A rule may produce at most one instance per this many seconds, averaged over a day.
    min_interval: int = 3600
    #: Instances one object may generate (COUNT, RDATEs) and produce for one request.
    max_instances: int = 10_000
    #: Periods visited plus instances produced for one request or one validation.
    max_work: int = 100_000

    def budget(self) -> ExpansionBudget:
        return ExpansionBudget(self.max_work, self.max_instances)


DEFAULT_LIMITS = RecurrenceLimits()


class _CountingIterinfo(du._iterinfo):  # type: ignore[misc]
    """dateutil's per-iteration helper; every ``*dayset`` call is one period visited."""

    def _charge(self) -> None:
        self.rrule.budget.spend()

    def ydayset(self, year: int, month: int, day: int) -> Any:
        self._charge()
        return super().ydayset(year, month, day)

    def mdayset(self, year: int, month: int, day: int) -> Any:
        self._charge()
        return super().mdayset(year, month, day)

    def wdayset(self, year: int, month: int, day: int) -> Any:
        self._charge()
        return super().wdayset(year, month, day)

    def ddayset(self, year: int, month: int, day: int) -> Any:
        self._charge()
        return super().ddayset(year, month, day)


# dateutil's own ``rrule._iter``, bound to module globals where ``_iterinfo`` counts.
_counting_iter = types.FunctionType(
    du.rrule._iter.__code__,
    {**vars(du), "_iterinfo": _CountingIterinfo},
    "_iter",
    du.rrule._iter.__defaults__,
    du.rrule._iter.__closure__,
)


class BudgetedRule(du.rrule):  # type: ignore[misc]
    """A dateutil ``rrule`` without instance cache whose iteration charges ``budget``."""

    _iter = _counting_iter

    def __init__(self, budget: ExpansionBudget, **kwargs: Any) -> None:
        super().__init__(cache=False, **kwargs)
        self.budget = budget


def _arguments(rule: Any) -> dict[str, Any]:
    """The keyword arguments that rebuild ``rule`` (as ``rrule.replace`` does)."""
    kwargs: dict[str, Any] = {
        "freq": rule._freq,
        "dtstart": rule._dtstart,
        "interval": rule._interval,
        "count": rule._count,
        "until": rule._until,
        "wkst": rule._wkst,
    }
    kwargs.update(rule._original_rule)
    return kwargs


def budgeted(rule: Any, budget: ExpansionBudget, **changes: Any) -> BudgetedRule:
    """``rule`` (a dateutil rrule) rebuilt as a ``BudgetedRule``, with ``changes`` applied.
    Attributes recurring-ical-events sets on its rules (``until``, ``string``) are kept."""
    result = BudgetedRule(budget, **{**_arguments(rule), **changes})
    for name in ("until", "string"):
        if name in vars(rule):
            setattr(result, name, vars(rule)[name])
    return result


def _calendar_free(rule: Any) -> bool:
    """MONTHLY/YEARLY: the instances do not depend on month lengths or weekdays."""
    return not (
        rule._byweekday
        or rule._bynweekday
        or rule._byyearday
        or rule._byweekno
        or rule._bysetpos
        or rule._byeaster
        or rule._bynmonthday
        or any(day > 28 for day in rule._bymonthday or ())
    )


def _one_per_period(rule: Any) -> bool:
    """Each period of the rule yields exactly one instance (no BYxxx part was given)."""
    if any(value is not None for value in rule._original_rule.values()):
        return False
    if rule._freq in _FIXED_SECONDS:
        return True
    start = rule._dtstart
    if rule._freq == du.MONTHLY:
        return bool(start.day <= 28)
    return not (start.month == 2 and start.day == 29)


def _step(rule: Any) -> tuple[str, int] | None:
    """The rule's invariance step: ("seconds" | "months", size); None if it has none."""
    if rule._byeaster:
        return None
    if rule._freq in _FIXED_SECONDS:
        return "seconds", rule._interval * _FIXED_SECONDS[rule._freq]
    months = rule._interval * (12 if rule._freq == du.YEARLY else 1)
    if not _calendar_free(rule):
        months = math.lcm(months, GREGORIAN_CYCLE_MONTHS)
    return "months", months


def _naive(value: datetime, like: datetime) -> datetime:
    """``value`` as a wall-clock time in the zone of ``like`` (naive)."""
    if like.tzinfo is not None and value.tzinfo is not None:
        value = value.astimezone(like.tzinfo)
    return value.replace(tzinfo=None)


def jumped(rule: Any, before: datetime, budget: ExpansionBudget) -> BudgetedRule | None:
    """``rule`` as a ``BudgetedRule`` whose DTSTART is moved forward by whole invariance steps
    to at most ``before`` (aware or naive); None if no instance of the rule is left."""
    step = _step(rule)
    if step is None or (rule._count is not None and not _one_per_period(rule)):
        return budgeted(rule, budget)
    start: datetime = rule._dtstart
    naive_start, target = start.replace(tzinfo=None), _naive(before, start)
    if target <= naive_start:
        return budgeted(rule, budget)
    kind, size = step
    if kind == "seconds":
        gap = target - naive_start
        steps = (gap.days * 86400 + gap.seconds) // size
        moved = naive_start + timedelta(seconds=steps * size)
    else:
        months = (target.year - naive_start.year) * 12 + target.month - naive_start.month - 1
        steps = max(months, 0) // size
        year, month = divmod(naive_start.month - 1 + steps * size, 12)
        moved = naive_start.replace(year=naive_start.year + year, month=month + 1)
    if steps == 0:
        return budgeted(rule, budget)
    changes: dict[str, Any] = {"dtstart": moved.replace(tzinfo=start.tzinfo)}
    if rule._count is not None:
        if rule._count <= steps:
            return None
        changes["count"] = rule._count - steps
    until = rule._until
    if until is not None and _naive(until, start) < moved:
        return None
    return budgeted(rule, budget, **changes)
