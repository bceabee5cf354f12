"""The SQL pre-filter of an addressbook-query: a superset of the matching cards, from the index.

``prefilter_clause`` turns the parts of a ``Filter`` that the card index can answer (positive
text-matches and existence tests on indexed properties) into a condition on ``cards.id``. It
never excludes a card the exact evaluation would keep: every text-match is compared on folded
keys (see ``collation``), negated matches, param-filters, ``is-not-defined`` and properties
outside the index are left to the exact evaluation, and an ``anyof`` containing any of those
is not restricted at all. None means "no restriction".
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, or_, select

from oxidav.collation import CONTAINS, ENDS_WITH, EQUALS, STARTS_WITH, fold
from oxidav.contacts.filters import ALLOF, Filter, PropFilter, TextMatch
from oxidav.contacts.index import INDEXED_PROPERTIES
from oxidav.db.models.contacts import Card, CardIndex


def prefilter_clause(book_id: int, flt: Filter) -> ColumnElement[bool] | None:
    """A condition on ``Card`` that every card matching ``flt`` satisfies, or None."""
    clauses = [_prop_clause(book_id, prop_filter) for prop_filter in flt.prop_filters]
    if not clauses:
        return None
    if flt.test == ALLOF:
        known = [clause for clause in clauses if clause is not None]
        return and_(*known) if known else None
    if any(clause is None for clause in clauses):
        return None
    return or_(*[clause for clause in clauses if clause is not None])


def _prop_clause(book_id: int, prop_filter: PropFilter) -> ColumnElement[bool] | None:
    if prop_filter.is_not_defined or prop_filter.name not in INDEXED_PROPERTIES:
        return None
    exists = _indexed(book_id, prop_filter.name, None)
    positive = [match for match in prop_filter.text_matches if not match.negate]
    if prop_filter.test == ALLOF:
        if positive:
            return and_(*[_indexed(book_id, prop_filter.name, match) for match in positive])
        return exists
    only_positive_text = (
        not prop_filter.param_filters
        and positive
        and len(positive) == len(prop_filter.text_matches)
    )
    if only_positive_text:
        return or_(*[_indexed(book_id, prop_filter.name, match) for match in positive])
    return exists


def _indexed(book_id: int, prop: str, match: TextMatch | None) -> ColumnElement[bool]:
    """``cards.id`` is among the cards with an index row for ``prop`` (matching ``match``)."""
    query = select(CardIndex.card_id).where(
        CardIndex.addressbook_id == book_id, CardIndex.prop == prop
    )
    if match is not None:
        query = query.where(_value_condition(match))
    return Card.id.in_(query)


def _value_condition(match: TextMatch) -> ColumnElement[bool]:
    key = fold(match.text)
    if match.match_type == EQUALS:
        return CardIndex.value == key
    escaped = key.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    pattern = {
        CONTAINS: f"%{escaped}%",
        STARTS_WITH: f"{escaped}%",
        ENDS_WITH: f"%{escaped}",
    }[match.match_type]
    return CardIndex.value.like(pattern, escape="\\")
