"""Exact evaluation of a calendar-query filter against one calendar object (RFC 4791 §9.7).

Semantics, spelled out because the RFC leaves some of it to the reader:

- All tests in a filter element are ANDed; a comp-filter matches if *some* component of that
  name passes all of them, a prop-filter if *some* instance of the property does (so a
  negated text-match on ATTENDEE matches if any attendee lacks the text).
- A comp-filter whose subtree holds a time-range is evaluated per *instance*: every
  occurrence of a recurring component (RRULE, RDATE, EXDATE, overrides) is tested on its own,
  with the properties of the component it comes from, and a nested VALARM time-range is tested
  against that instance's trigger times.
- A prop-filter without a test matches if the property exists; is-not-defined if it does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta, tzinfo
from typing import TYPE_CHECKING, Any

from oxidav.calendars.filters import CompFilter, ParamFilter, PropFilter, TextMatch, TimeRange
from oxidav.calendars.recurrence import Instance, instances, max_duration, single_instance
from oxidav.calendars.rules import DEFAULT_LIMITS, ExpansionBudget
from oxidav.calendars.timerange import alarm_overlaps, instance_overlaps, property_overlaps
from oxidav.calendars.timeutil import FLOATING_SLACK
from oxidav.collation import text_matches

if TYPE_CHECKING:
    from icalendar.cal import Component

#: At most this many instances of one object are examined for one comp-filter.
MAX_INSTANCES = 100_000


def properties(component: Component, name: str) -> list[Any]:
    """Every instance of property ``name`` of ``component``."""
    value = component.get(name)
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def property_texts(prop: Any) -> list[str]:
    """The text(s) a text-match is applied to: unescaped TEXT, each CATEGORIES value and the
    whole list, or the iCalendar form of any other value."""
    from icalendar.prop import vCategory

    if isinstance(prop, vCategory):
        cats = [str(cat) for cat in prop.cats]
        return [*cats, ",".join(cats)]
    if isinstance(prop, str):
        return [str(prop)]
    to_ical = getattr(prop, "to_ical", None)
    if to_ical is None:
        return [str(prop)]
    raw = to_ical()
    return [raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)]


def _text_ok(values: Sequence[str], match: TextMatch) -> bool:
    hit = any(text_matches(value, match.text, match.collation) for value in values)
    return hit != match.negate


def _param_ok(prop: Any, pf: ParamFilter) -> bool:
    params = getattr(prop, "params", None) or {}
    value = params.get(pf.name)
    if pf.is_not_defined:
        return value is None
    if value is None:
        return False
    if pf.text_match is None:
        return True
    values = value if isinstance(value, list | tuple) else [value]
    return _text_ok([str(v) for v in values], pf.text_match)


def _alarm_reach(component: Component) -> timedelta | None:
    """How far any relative alarm of ``component`` triggers from its start or end; None if an
    alarm has an absolute trigger (then any instance may carry it)."""
    reach = timedelta(0)
    for alarm in component.walk("VALARM"):
        trigger = alarm.get("TRIGGER")
        if trigger is None:
            continue
        if not isinstance(trigger.dt, timedelta):
            return None
        extra = timedelta(0)
        interval = alarm.get("DURATION")
        if alarm.get("REPEAT") is not None and interval is not None:
            extra = abs(interval.dt) * int(alarm.get("REPEAT"))
        reach = max(reach, abs(trigger.dt) + extra)
    return reach


def _first_time_range(cf: CompFilter) -> TimeRange | None:
    for sub in cf.comp_filters:
        if sub.time_range is not None:
            return sub.time_range
        nested = _first_time_range(sub)
        if nested is not None:
            return nested
    return None


class FilterEvaluator:
    """Evaluates filters for one query: ``floating`` is the zone of DATEs and floating times."""

    def __init__(
        self,
        floating: tzinfo = UTC,
        max_instances: int = MAX_INSTANCES,
        budget: ExpansionBudget | None = None,
    ) -> None:
        self.floating = floating
        self.max_instances = max_instances
        #: Shared by every object this evaluator tests: the request's recurrence budget.
        self.budget = budget if budget is not None else DEFAULT_LIMITS.budget()

    def matches(self, calendar: Component, root: CompFilter) -> bool:
        """Whether the calendar object ``calendar`` (a VCALENDAR) passes ``root``."""
        if calendar.name != root.name:
            return False
        if not self._props_ok(calendar, root.prop_filters):
            return False
        return all(self._top(calendar, cf) for cf in root.comp_filters)

    # -- properties ---------------------------------------------------------------------------

    def _prop_ok(self, component: Component, pf: PropFilter) -> bool:
        props = properties(component, pf.name)
        if pf.is_not_defined:
            return not props
        return any(self._prop_instance_ok(prop, pf) for prop in props)

    def _prop_instance_ok(self, prop: Any, pf: PropFilter) -> bool:
        if pf.time_range is not None and not property_overlaps(prop, pf.time_range, self.floating):
            return False
        if pf.text_match is not None and not _text_ok(property_texts(prop), pf.text_match):
            return False
        return all(_param_ok(prop, param) for param in pf.param_filters)

    def _props_ok(self, component: Component, filters: Sequence[PropFilter]) -> bool:
        return all(self._prop_ok(component, pf) for pf in filters)

    # -- components ---------------------------------------------------------------------------

    def _top(self, calendar: Component, cf: CompFilter) -> bool:
        """A comp-filter on the components of the VCALENDAR."""
        comps = [c for c in calendar.subcomponents if c.name == cf.name]
        if cf.is_not_defined:
            return not comps
        if not comps:
            return False
        if not cf.has_time_range:
            return any(self._static(c, cf) for c in comps)
        static_ok: dict[int, bool] = {}
        for count, instance in enumerate(instances(comps, self._window(cf, comps), self.budget)):
            if count >= self.max_instances:
                return False
            key = id(instance.component)
            if key not in static_ok:
                static_ok[key] = self._props_ok(instance.component, cf.prop_filters)
            if static_ok[key] and self._instance_ok(instance, cf):
                return True
        return False

    def _window(
        self, cf: CompFilter, comps: Sequence[Component]
    ) -> tuple[datetime | None, datetime | None]:
        """Instance starts outside this window cannot pass ``cf`` (a superset, never exact)."""
        pad = max_duration(comps) + FLOATING_SLACK
        rng = cf.time_range
        if rng is None:
            rng = _first_time_range(cf)
            reaches = [_alarm_reach(c) for c in comps]
            if rng is None or any(r is None for r in reaches):
                return None, None
            pad += max((r for r in reaches if r is not None), default=timedelta(0))
        return (
            rng.start - pad if rng.start is not None else None,
            rng.end + pad if rng.end is not None else None,
        )

    def _instance_ok(self, instance: Instance, cf: CompFilter) -> bool:
        if cf.time_range is not None and not instance_overlaps(
            instance, cf.time_range, self.floating
        ):
            return False
        return all(self._sub(instance.component, sub, instance) for sub in cf.comp_filters)

    def _static(self, component: Component, cf: CompFilter) -> bool:
        """A comp-filter with no time-range anywhere below it, on one component."""
        return self._props_ok(component, cf.prop_filters) and all(
            self._sub(component, sub, None) for sub in cf.comp_filters
        )

    def _sub(self, parent: Component, cf: CompFilter, parent_instance: Instance | None) -> bool:
        """A comp-filter on the subcomponents (VALARM, ...) of one component instance."""
        comps = [c for c in parent.subcomponents if c.name == cf.name]
        if cf.is_not_defined:
            return not comps
        for comp in comps:
            if cf.time_range is not None:
                if comp.name == "VALARM":
                    owner = parent_instance or single_instance(parent)
                    if not alarm_overlaps(comp, owner, cf.time_range, self.floating):
                        continue
                elif not instance_overlaps(single_instance(comp), cf.time_range, self.floating):
                    continue
            if not self._props_ok(comp, cf.prop_filters):
                continue
            nested_parent = single_instance(comp)
            if all(self._sub(comp, sub, nested_parent) for sub in cf.comp_filters):
                return True
        return False


def matches(calendar: Component, root: CompFilter, floating: tzinfo = UTC) -> bool:
    """Shorthand for ``FilterEvaluator(floating).matches(calendar, root)``."""
    return FilterEvaluator(floating).matches(calendar, root)
