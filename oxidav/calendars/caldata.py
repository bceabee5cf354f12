"""CALDAV:calendar-data in a REPORT: which data to return and in what shape (RFC 4791 §9.6).

``parse_calendar_data`` reads the request element: a partial selection of components and
properties (§9.6.1-9.6.4), ``expand`` (§9.6.5), ``limit-recurrence-set`` (§9.6.6) and
``limit-freebusy-set`` (§9.6.7). ``render_calendar_data`` applies it to one stored object; an
empty request returns the stored text unchanged, byte for byte.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, tzinfo
from typing import TYPE_CHECKING, Any

from lxml import etree

from oxidav.calendars.errors import InvalidFilter, UnsupportedCalendarData, caldav
from oxidav.calendars.filters import TimeRange, parse_time_range
from oxidav.calendars.recurrence import RECURRING_COMPONENTS, Instance, instances, max_duration
from oxidav.calendars.timerange import freebusy_periods, instance_overlaps
from oxidav.calendars.timeutil import FLOATING_SLACK, to_utc

if TYPE_CHECKING:
    from icalendar.cal import Component


_COMP, _PROP = caldav("comp"), caldav("prop")
_ALLPROP, _ALLCOMP = caldav("allprop"), caldav("allcomp")
_EXPAND, _LIMIT_RECURRENCE = caldav("expand"), caldav("limit-recurrence-set")
_LIMIT_FREEBUSY = caldav("limit-freebusy-set")
_RECURRENCE_RULES = ("RRULE", "RDATE", "EXDATE", "EXRULE")


@dataclass(frozen=True)
class PropSelector:
    name: str
    novalue: bool = False


@dataclass(frozen=True)
class CompSelector:
    """CALDAV:comp: the properties and subcomponents of one component type to return."""

    name: str
    allprop: bool = False
    props: tuple[PropSelector, ...] = ()
    allcomp: bool = False
    comps: tuple[CompSelector, ...] = ()


@dataclass(frozen=True)
class CalendarDataRequest:
    select: CompSelector | None = None
    expand: TimeRange | None = None
    limit_recurrence: TimeRange | None = None
    limit_freebusy: TimeRange | None = None

    @property
    def is_plain(self) -> bool:
        """True when the stored text can be returned as it is."""
        return (
            self.select is None
            and self.expand is None
            and self.limit_recurrence is None
            and self.limit_freebusy is None
        )


def _bounded(element: etree._Element) -> TimeRange:
    rng = parse_time_range(element)
    if rng.start is None or rng.end is None:
        raise InvalidFilter(f"{etree.QName(element).localname} needs both start and end")
    return rng


def _comp_selector(element: etree._Element) -> CompSelector:
    name = (element.get("name") or "").upper()
    if not name:
        raise InvalidFilter("comp without a name")
    allprop = allcomp = False
    props: list[PropSelector] = []
    comps: list[CompSelector] = []
    for child in element:
        if child.tag == _ALLPROP:
            allprop = True
        elif child.tag == _ALLCOMP:
            allcomp = True
        elif child.tag == _PROP:
            prop_name = (child.get("name") or "").upper()
            if not prop_name:
                raise InvalidFilter("prop without a name")
            props.append(PropSelector(prop_name, child.get("novalue", "no").lower() == "yes"))
        elif child.tag == _COMP:
            comps.append(_comp_selector(child))
    return CompSelector(name, allprop, tuple(props), allcomp, tuple(comps))


def parse_calendar_data(element: etree._Element) -> CalendarDataRequest:
    """Read a CALDAV:calendar-data element of a REPORT request."""
    content_type = element.get("content-type", "text/calendar")
    version = element.get("version", "2.0")
    if content_type.split(";")[0].strip().lower() != "text/calendar" or version != "2.0":
        raise UnsupportedCalendarData(f"calendar data {content_type} {version} is not offered")
    select = expand = limit_recurrence = limit_freebusy = None
    for child in element:
        if child.tag == _COMP:
            select = _comp_selector(child)
        elif child.tag == _EXPAND:
            expand = _bounded(child)
        elif child.tag == _LIMIT_RECURRENCE:
            limit_recurrence = _bounded(child)
        elif child.tag == _LIMIT_FREEBUSY:
            limit_freebusy = _bounded(child)
    if expand is not None and limit_recurrence is not None:
        raise InvalidFilter("expand and limit-recurrence-set exclude each other")
    return CalendarDataRequest(select, expand, limit_recurrence, limit_freebusy)


# -- expand -------------------------------------------------------------------------------------


def _utc_value(value: Any) -> Any:
    """A zoned DATE-TIME in UTC; DATEs and floating times stay as they are (§9.6.5)."""
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(UTC)
    return value


def _to_utc_properties(component: Component) -> None:
    from icalendar.prop import vDDDTypes

    for name in list(component.keys()):
        prop = component[name]
        if isinstance(prop, vDDDTypes) and isinstance(prop.dt, datetime) and prop.dt.tzinfo:
            component[name] = vDDDTypes(prop.dt.astimezone(UTC))


def instance_component(instance: Instance) -> Component:
    """One instance as a stand-alone component: its own DTSTART/DTEND/DUE and RECURRENCE-ID,
    no recurrence rules, all zoned times in UTC (RFC 4791 §9.6.5)."""
    from icalendar.prop import vDDDTypes

    source = instance.component
    result = source.copy()
    for name in _RECURRENCE_RULES:
        result.pop(name, None)
    _to_utc_properties(result)
    if instance.start is not None and "DTSTART" in source:
        result["DTSTART"] = vDDDTypes(_utc_value(instance.start))
    if instance.end is not None:
        for end_name in ("DTEND", "DUE"):
            if end_name in source:
                result[end_name] = vDDDTypes(_utc_value(instance.end))
    if instance.recurrence_id is not None:
        result["RECURRENCE-ID"] = vDDDTypes(_utc_value(instance.recurrence_id))
    for sub in source.subcomponents:
        result.add_component(sub)
    return result


def _overlapping(
    calendar: Component, name: str, rng: TimeRange, floating: tzinfo
) -> Iterator[Instance]:
    comps = [c for c in calendar.subcomponents if c.name == name]
    pad = max_duration(comps) + FLOATING_SLACK
    window = (
        rng.start - pad if rng.start is not None else None,
        rng.end + FLOATING_SLACK if rng.end is not None else None,
    )
    for instance in instances(comps, window):
        if instance_overlaps(instance, rng, floating):
            yield instance


def _empty_like(calendar: Component) -> Component:
    result = calendar.copy()
    return result


def expand(calendar: Component, rng: TimeRange, floating: tzinfo = UTC) -> Component:
    """The recurrence sets of ``calendar`` expanded to the instances overlapping ``rng``."""
    result = _empty_like(calendar)
    names = [str(c.name) for c in calendar.subcomponents if c.name != "VTIMEZONE"]
    for name in dict.fromkeys(names):
        if name in RECURRING_COMPONENTS:
            for instance in _overlapping(calendar, name, rng, floating):
                result.add_component(instance_component(instance))
        else:
            for component in calendar.subcomponents:
                if component.name == name:
                    copy = component.copy()
                    _to_utc_properties(copy)
                    for sub in component.subcomponents:
                        copy.add_component(sub)
                    result.add_component(copy)
    return result


# -- limit-recurrence-set / limit-freebusy-set --------------------------------------------------


def _keep_override(component: Component, rng: TimeRange, floating: tzinfo) -> bool:
    recurrence_id = component.get("RECURRENCE-ID")
    if recurrence_id is None:
        return True
    rid = to_utc(recurrence_id.dt, floating)
    if str(recurrence_id.params.get("RANGE", "")).upper() == "THISANDFUTURE":
        return rng.end is None or rid < rng.end
    own = next(instances([component], (None, None)))
    return rng.contains(rid) or instance_overlaps(own, rng, floating)


def limit_recurrence_set(calendar: Component, rng: TimeRange, floating: tzinfo = UTC) -> Component:
    """The masters, plus only the overrides that affect instances in ``rng`` (§9.6.6)."""
    result = _empty_like(calendar)
    for component in calendar.subcomponents:
        if component.name not in RECURRING_COMPONENTS or _keep_override(component, rng, floating):
            result.add_component(component)
    return result


def limit_freebusy_set(calendar: Component, rng: TimeRange, floating: tzinfo = UTC) -> Component:
    """VFREEBUSY components with only the FREEBUSY periods that overlap ``rng`` (§9.6.7)."""
    result = _empty_like(calendar)
    for component in calendar.subcomponents:
        if component.name != "VFREEBUSY":
            result.add_component(component)
            continue
        copy = component.copy()
        copy.pop("FREEBUSY", None)
        for start, end, fbtype in freebusy_periods(component, floating):
            if (rng.start is None or rng.start < end) and (rng.end is None or start < rng.end):
                copy.add("FREEBUSY", (start, end), parameters={"FBTYPE": fbtype})
        for sub in component.subcomponents:
            copy.add_component(sub)
        result.add_component(copy)
    return result


# -- partial calendar data ----------------------------------------------------------------------


def _novalue(prop: Any) -> Any:
    import icalendar
    from icalendar.prop import vText

    empty: Any = vText("")
    empty.params = getattr(prop, "params", icalendar.Parameters())
    return empty


def select(component: Component, selector: CompSelector) -> Component:
    """Only the properties and subcomponents ``selector`` names (§9.6.1)."""
    result = component.copy()
    result.clear()
    for name, value in component.items():
        wanted = selector.allprop or any(p.name == name for p in selector.props)
        if not wanted:
            continue
        novalue = any(p.name == name and p.novalue for p in selector.props)
        if novalue:
            value = [_novalue(v) for v in value] if isinstance(value, list) else _novalue(value)
        result[name] = value
    for sub in component.subcomponents:
        if selector.allcomp:
            result.add_component(sub)
            continue
        for child in selector.comps:
            if child.name == sub.name:
                result.add_component(select(sub, child))
    return result


def render_calendar_data(
    text: str,
    calendar: Component | None,
    request: CalendarDataRequest,
    floating: tzinfo = UTC,
) -> str:
    """The calendar-data of one object as ``request`` asks for it. ``calendar`` is the parsed
    ``text`` (parsed here if None and needed)."""
    if request.is_plain:
        return text
    if calendar is None:
        import icalendar

        calendar = icalendar.Calendar.from_ical(text)
    if request.expand is not None:
        calendar = expand(calendar, request.expand, floating)
    elif request.limit_recurrence is not None:
        calendar = limit_recurrence_set(calendar, request.limit_recurrence, floating)
    if request.limit_freebusy is not None:
        calendar = limit_freebusy_set(calendar, request.limit_freebusy, floating)
    if request.select is not None:
        if request.select.name != calendar.name:
            return ""
        calendar = select(calendar, request.select)
    return str(calendar.to_ical().decode("utf-8"))
