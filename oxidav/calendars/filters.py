"""The calendar-query filter (RFC 4791 §9.7) as data, parsed from its XML.

``parse_filter`` turns a ``CALDAV:filter`` element into a tree of frozen dataclasses and refuses,
with the precondition RFC 4791 §7.8 names, what it cannot evaluate exactly: a malformed filter
(``valid-filter``), an unknown collation (``supported-collation``), a time-range on a component
that has no time (``supported-filter``). Evaluation lives in ``evaluate``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from lxml import etree

from oxidav.calendars.errors import (
    InvalidFilter,
    InvalidTimeRange,
    UnsupportedCollation,
    UnsupportedFilter,
    caldav,
)
from oxidav.calendars.timeutil import parse_utc
from oxidav.collation import CALDAV_DEFAULT_COLLATION as DEFAULT_COLLATION
from oxidav.collation import COLLATIONS as SUPPORTED_COLLATIONS

#: Components a time-range may apply to (RFC 4791 §9.9).
TIMED_COMPONENTS = frozenset({"VEVENT", "VTODO", "VJOURNAL", "VFREEBUSY", "VALARM"})

_FILTER = caldav("filter")
_COMP_FILTER = caldav("comp-filter")
_PROP_FILTER = caldav("prop-filter")
_PARAM_FILTER = caldav("param-filter")
_TEXT_MATCH = caldav("text-match")
_TIME_RANGE = caldav("time-range")
_IS_NOT_DEFINED = caldav("is-not-defined")


@dataclass(frozen=True)
class TimeRange:
    """CALDAV:time-range: [start, end) in UTC; a missing bound is unbounded (§9.9)."""

    start: datetime | None
    end: datetime | None

    def contains(self, instant: datetime) -> bool:
        """start <= instant < end."""
        return (self.start is None or self.start <= instant) and (
            self.end is None or instant < self.end
        )


@dataclass(frozen=True)
class TextMatch:
    """CALDAV:text-match (§9.7.5): substring match under a collation, maybe negated."""

    text: str
    collation: str = DEFAULT_COLLATION
    negate: bool = False


@dataclass(frozen=True)
class ParamFilter:
    """CALDAV:param-filter (§9.7.3)."""

    name: str
    is_not_defined: bool = False
    text_match: TextMatch | None = None


@dataclass(frozen=True)
class PropFilter:
    """CALDAV:prop-filter (§9.7.2)."""

    name: str
    is_not_defined: bool = False
    time_range: TimeRange | None = None
    text_match: TextMatch | None = None
    param_filters: tuple[ParamFilter, ...] = ()


@dataclass(frozen=True)
class CompFilter:
    """CALDAV:comp-filter (§9.7.1); the root one names VCALENDAR."""

    name: str
    is_not_defined: bool = False
    time_range: TimeRange | None = None
    prop_filters: tuple[PropFilter, ...] = ()
    comp_filters: tuple[CompFilter, ...] = field(default_factory=tuple)

    @property
    def has_time_range(self) -> bool:
        """Whether this filter or one nested in it tests a component's time."""
        return self.time_range is not None or any(c.has_time_range for c in self.comp_filters)


def _name(element: etree._Element) -> str:
    name = element.get("name")
    if not name:
        raise InvalidFilter(f"{etree.QName(element).localname} without a name attribute")
    return name.upper()


def parse_time_range(element: etree._Element) -> TimeRange:
    """A CALDAV:time-range element (also used by expand and limit-recurrence-set)."""
    start_text, end_text = element.get("start"), element.get("end")
    if start_text is None and end_text is None:
        raise InvalidTimeRange("time-range needs a start or an end")
    try:
        start = parse_utc(start_text) if start_text is not None else None
        end = parse_utc(end_text) if end_text is not None else None
    except ValueError as exc:
        raise InvalidTimeRange(str(exc)) from None
    if start is not None and end is not None and end <= start:
        raise InvalidTimeRange("time-range end must be after its start")
    return TimeRange(start, end)


def _text_match(element: etree._Element) -> TextMatch:
    collation = element.get("collation", DEFAULT_COLLATION)
    if collation not in SUPPORTED_COLLATIONS:
        raise UnsupportedCollation(f"collation {collation!r} is not supported")
    negate = element.get("negate-condition", "no").lower()
    if negate not in ("yes", "no"):
        raise InvalidFilter("negate-condition must be yes or no")
    return TextMatch(text=element.text or "", collation=collation, negate=negate == "yes")


def _children(element: etree._Element) -> list[etree._Element]:
    return [child for child in element if isinstance(child.tag, str)]


def _param_filter(element: etree._Element) -> ParamFilter:
    name = _name(element)
    is_not_defined, text_match = False, None
    for child in _children(element):
        if child.tag == _IS_NOT_DEFINED:
            is_not_defined = True
        elif child.tag == _TEXT_MATCH and text_match is None:
            text_match = _text_match(child)
        else:
            raise InvalidFilter(f"unexpected {child.tag} in param-filter")
    if is_not_defined and text_match is not None:
        raise InvalidFilter("param-filter cannot have is-not-defined and text-match")
    return ParamFilter(name, is_not_defined, text_match)


def _prop_filter(element: etree._Element) -> PropFilter:
    name = _name(element)
    is_not_defined = False
    time_range: TimeRange | None = None
    text_match: TextMatch | None = None
    params: list[ParamFilter] = []
    for child in _children(element):
        if child.tag == _IS_NOT_DEFINED:
            is_not_defined = True
        elif child.tag == _TIME_RANGE and time_range is None and text_match is None:
            time_range = parse_time_range(child)
        elif child.tag == _TEXT_MATCH and text_match is None and time_range is None:
            text_match = _text_match(child)
        elif child.tag == _PARAM_FILTER:
            params.append(_param_filter(child))
        else:
            raise InvalidFilter(f"unexpected {child.tag} in prop-filter {name}")
    if is_not_defined and (time_range or text_match or params):
        raise InvalidFilter(f"prop-filter {name}: is-not-defined excludes other tests")
    return PropFilter(name, is_not_defined, time_range, text_match, tuple(params))


def _comp_filter(element: etree._Element, depth: int) -> CompFilter:
    name = _name(element)
    if depth == 0 and name != "VCALENDAR":
        raise InvalidFilter("the outermost comp-filter must name VCALENDAR")
    if depth > 0 and name == "VCALENDAR":
        raise InvalidFilter("VCALENDAR can only be the outermost comp-filter")
    is_not_defined = False
    time_range: TimeRange | None = None
    props: list[PropFilter] = []
    comps: list[CompFilter] = []
    for child in _children(element):
        if child.tag == _IS_NOT_DEFINED:
            is_not_defined = True
        elif child.tag == _TIME_RANGE and time_range is None:
            if name not in TIMED_COMPONENTS:
                raise UnsupportedFilter(f"time-range on {name} is not supported")
            time_range = parse_time_range(child)
        elif child.tag == _PROP_FILTER:
            props.append(_prop_filter(child))
        elif child.tag == _COMP_FILTER:
            comps.append(_comp_filter(child, depth + 1))
        else:
            raise InvalidFilter(f"unexpected {child.tag} in comp-filter {name}")
    if is_not_defined and (time_range or props or comps):
        raise InvalidFilter(f"comp-filter {name}: is-not-defined excludes other tests")
    if depth == 0 and is_not_defined:
        raise InvalidFilter("VCALENDAR is always defined")
    return CompFilter(name, is_not_defined, time_range, tuple(props), tuple(comps))


def parse_filter(element: etree._Element) -> CompFilter:
    """The root comp-filter of a ``CALDAV:filter`` element."""
    if element.tag != _FILTER:
        raise InvalidFilter(f"expected CALDAV:filter, got {element.tag}")
    children = _children(element)
    if len(children) != 1 or children[0].tag != _COMP_FILTER:
        raise InvalidFilter("filter must hold exactly one comp-filter")
    return _comp_filter(children[0], 0)
