"""The SQL pre-filter of an addressbook-query: a superset of the matching cards, from the index.

``prefilter`` turns the parts of a ``Filter`` that the card index can answer (positive
text-matches and existence tests on indexed properties) into a ``Prefilter``: its ``shape``
(the structure of the condition, with parameter names in place of values) and the values of
those parameters. ``prefilter_condition`` builds the condition on ``Card`` of a shape, with
bind parameters only (``:book`` is the address book), so one statement per shape can be
compiled once and run for every request of that shape (``ContactStore.query``).

The condition never excludes a card the exact evaluation would keep: every text-match is
compared on folded keys (see ``collation``), negated matches, param-filters,
``is-not-defined`` and properties outside the index are left to the exact evaluation, and an
``anyof`` containing any of those is not restricted at all. None means "no restriction".
"""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import ColumnElement, and_, bindparam, or_, select

from oxidav.collation import CONTAINS, ENDS_WITH, EQUALS, STARTS_WITH, fold
from oxidav.contacts.filters import ALLOF, Filter, PropFilter, TextMatch
from oxidav.contacts.index import INDEXED_PROPERTIES
from oxidav.db.models.contacts import Card, CardIndex

#: ``(op, value parameter)``: the index value equals (``eq``) or is ``like`` the parameter.
ValueShape = tuple[str, str]
#: ``(test, property parameter, value shapes)``; no value shapes: the property exists.
PropShape = tuple[str, str, tuple[ValueShape, ...]]
#: ``(test, property shapes)``: the whole condition.
Shape = tuple[str, tuple[PropShape, ...]]

_ALL = "all"
_ANY = "any"


@dataclass(frozen=True, slots=True)
class Prefilter:
    """A pre-filter condition: ``shape`` decides the statement, ``params`` its values."""

    shape: Shape
    params: dict[str, str] = field(hash=False, compare=False)


def prefilter(flt: Filter) -> Prefilter | None:
    """The condition every card matching ``flt`` satisfies, or None (no restriction)."""
    params: dict[str, str] = {}
    shapes = [_prop_shape(prop_filter, params) for prop_filter in flt.prop_filters]
    known = tuple(shape for shape in shapes if shape is not None)
    if not known or (flt.test != ALLOF and len(known) != len(shapes)):
        return None
    return Prefilter((_ALL if flt.test == ALLOF else _ANY, known), params)


def prefilter_condition(shape: Shape) -> ColumnElement[bool]:
    """The condition on ``Card`` of ``shape``: bind parameters ``book`` and those named in
    the shape."""
    test, props = shape
    clauses = [_prop_condition(prop) for prop in props]
    return and_(*clauses) if test == _ALL else or_(*clauses)


def parameter_count(shape: Shape) -> int:
    """How many parameters a statement of ``shape`` takes (its size, for caching)."""
    return 1 + sum(1 + len(values) for _test, _prop, values in shape[1])


def _prop_shape(prop_filter: PropFilter, params: dict[str, str]) -> PropShape | None:
    if prop_filter.is_not_defined or prop_filter.name not in INDEXED_PROPERTIES:
        return None
    positive = [match for match in prop_filter.text_matches if not match.negate]
    restricts = positive and (
        prop_filter.test == ALLOF
        or (not prop_filter.param_filters and len(positive) == len(prop_filter.text_matches))
    )
    prop_param = _add(params, "p", prop_filter.name)
    test = _ALL if prop_filter.test == ALLOF else _ANY
    if not restricts:
        return (test, prop_param, ())
    return (test, prop_param, tuple(_value_shape(match, params) for match in positive))


def _value_shape(match: TextMatch, params: dict[str, str]) -> ValueShape:
    key = fold(match.text)
    if match.match_type == EQUALS:
        return ("eq", _add(params, "v", key))
    escaped = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = {
        CONTAINS: f"%{escaped}%",
        STARTS_WITH: f"{escaped}%",
        ENDS_WITH: f"%{escaped}",
    }[match.match_type]
    return ("like", _add(params, "v", pattern))


def _add(params: dict[str, str], prefix: str, value: str) -> str:
    name = f"{prefix}{len(params)}"
    params[name] = value
    return name


def _prop_condition(prop: PropShape) -> ColumnElement[bool]:
    test, prop_param, values = prop
    if not values:
        return _indexed(prop_param, None)
    clauses = [_indexed(prop_param, value) for value in values]
    return and_(*clauses) if test == _ALL else or_(*clauses)


def _indexed(prop_param: str, value: ValueShape | None) -> ColumnElement[bool]:
    """``cards.id`` is among the cards with an index row for the property (matching
    ``value``)."""
    query = select(CardIndex.card_id).where(
        CardIndex.addressbook_id == bindparam("book"), CardIndex.prop == bindparam(prop_param)
    )
    if value is not None:
        op, value_param = value
        if op == "eq":
            query = query.where(CardIndex.value == bindparam(value_param))
        else:
            query = query.where(CardIndex.value.like(bindparam(value_param), escape="\\"))
    return Card.id.in_(query)
