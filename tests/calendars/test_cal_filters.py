"""Parsing of calendar-query filters (RFC 4791 §9.7) and the collations (RFC 4790, 5051)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from lxml import etree

from oxidav.calendars.errors import (
    InvalidFilter,
    InvalidTimeRange,
    UnsupportedCollation,
    UnsupportedFilter,
)
from oxidav.calendars.filters import CompFilter, PropFilter, TextMatch, TimeRange, parse_filter
from oxidav.collation import normalize, text_matches
from tests.support.calendar_samples import CAL_NS, filter_xml, make_filter


def test_full_filter_is_parsed() -> None:
    root = make_filter(
        '<C:comp-filter name="vevent">'
        '<C:time-range start="20060104T000000Z" end="20060105T000000Z"/>'
        '<C:prop-filter name="ATTENDEE">'
        '<C:text-match collation="i;octet" negate-condition="yes">mailto:a</C:text-match>'
        '<C:param-filter name="PARTSTAT"><C:is-not-defined/></C:param-filter>'
        "</C:prop-filter>"
        '<C:comp-filter name="VALARM"><C:time-range start="20060104T000000Z"/></C:comp-filter>'
        "</C:comp-filter>"
    )
    assert root.name == "VCALENDAR"
    (event,) = root.comp_filters
    assert event.name == "VEVENT"
    assert event.time_range == TimeRange(
        datetime(2006, 1, 4, tzinfo=UTC), datetime(2006, 1, 5, tzinfo=UTC)
    )
    (attendee,) = event.prop_filters
    assert attendee.text_match == TextMatch("mailto:a", "i;octet", True)
    assert attendee.param_filters[0].is_not_defined
    assert event.comp_filters[0].time_range == TimeRange(datetime(2006, 1, 4, tzinfo=UTC), None)
    assert event.has_time_range and root.has_time_range


def test_default_collation_is_ascii_casemap() -> None:
    root = make_filter(
        '<C:comp-filter name="VTODO"><C:prop-filter name="SUMMARY">'
        "<C:text-match>x</C:text-match></C:prop-filter></C:comp-filter>"
    )
    assert root.comp_filters[0].prop_filters[0] == PropFilter(
        "SUMMARY", text_match=TextMatch("x", "i;ascii-casemap", False)
    )


@pytest.mark.parametrize(
    ("inner", "error"),
    [
        ('<C:comp-filter name="VEVENT"><C:time-range/></C:comp-filter>', InvalidTimeRange),
        (
            '<C:comp-filter name="VEVENT"><C:time-range start="20060104"/></C:comp-filter>',
            InvalidTimeRange,
        ),
        (
            '<C:comp-filter name="VEVENT"><C:time-range start="20060104T000000"/></C:comp-filter>',
            InvalidTimeRange,
        ),
        (
            '<C:comp-filter name="VEVENT"><C:time-range start="20060105T000000Z" '
            'end="20060104T000000Z"/></C:comp-filter>',
            InvalidTimeRange,
        ),
        (
            '<C:comp-filter name="VEVENT"><C:prop-filter name="SUMMARY">'
            '<C:text-match collation="i;basic">x</C:text-match></C:prop-filter></C:comp-filter>',
            UnsupportedCollation,
        ),
        (
            '<C:comp-filter name="VTIMEZONE"><C:time-range start="20060104T000000Z"/>'
            "</C:comp-filter>",
            UnsupportedFilter,
        ),
        ("<C:comp-filter><C:is-not-defined/></C:comp-filter>", InvalidFilter),
        (
            '<C:comp-filter name="VEVENT"><C:is-not-defined/><C:prop-filter name="X"/>'
            "</C:comp-filter>",
            InvalidFilter,
        ),
        ('<C:comp-filter name="VCALENDAR"/>', InvalidFilter),
        ('<C:comp-filter name="VEVENT"><C:bogus/></C:comp-filter>', InvalidFilter),
        (
            '<C:comp-filter name="VEVENT"><C:prop-filter name="X">'
            '<C:text-match negate-condition="maybe">x</C:text-match></C:prop-filter>'
            "</C:comp-filter>",
            InvalidFilter,
        ),
    ],
)
def test_invalid_filters_name_their_precondition(inner: str, error: type[Exception]) -> None:
    with pytest.raises(error):
        make_filter(inner)


def test_root_must_be_vcalendar() -> None:
    xml = f'<C:filter xmlns:C="{CAL_NS}"><C:comp-filter name="VEVENT"/></C:filter>'
    with pytest.raises(InvalidFilter) as info:
        parse_filter(etree.fromstring(xml))
    assert info.value.condition == f"{{{CAL_NS}}}valid-filter"
    with pytest.raises(InvalidFilter):
        parse_filter(etree.fromstring(f'<C:filter xmlns:C="{CAL_NS}"/>'))


def test_empty_vcalendar_filter() -> None:
    assert parse_filter(etree.fromstring(filter_xml(""))) == CompFilter("VCALENDAR")


@pytest.mark.parametrize(
    ("value", "needle", "collation", "expected"),
    [
        ("Hello World", "WORLD", "i;ascii-casemap", True),
        ("Hello World", "WORLD", "i;octet", False),
        ("Grüße", "GRÜSSE", "i;unicode-casemap", True),
        ("Grüße", "GRÜSSE", "i;ascii-casemap", False),
        ("e\u0301t\u00e9", "ÉTÉ", "i;unicode-casemap", True),
        ("ﬁle", "FILE", "i;unicode-casemap", True),
    ],
)
def test_collations(value: str, needle: str, collation: str, expected: bool) -> None:
    assert text_matches(value, needle, collation) is expected


def test_match_types_for_carddav() -> None:
    assert text_matches("Alice Smith", "alice", match_type="starts-with")
    assert not text_matches("Alice Smith", "smith", match_type="starts-with")
    assert text_matches("Alice Smith", "SMITH", match_type="ends-with")
    assert text_matches("Alice", "ALICE", match_type="equals")
    assert not text_matches("Alice S", "ALICE", match_type="equals")


def test_unknown_collation_raises() -> None:
    with pytest.raises(ValueError):
        normalize("x", "i;nope")


def test_calendars_and_contacts_fold_text_the_same_way() -> None:
    """One collation module: a CalDAV text-match folds like a CardDAV one, character by
    character (oxidav.collation's invariant). Combining marks of one letter in two orders were
    equal to CalDAV before (whole-string NFKD reorders them) and are not now, as for CardDAV."""
    reordered = ("a\u0301\u0323", "a\u0323\u0301")
    assert not text_matches(*reordered, "i;unicode-casemap")
    assert text_matches("Straße", "STRASSE", "i;unicode-casemap", "equals")
