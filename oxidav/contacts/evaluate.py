"""Exact evaluation of an addressbook-query filter against one parsed card (RFC 6352 §10.5).

Semantics: a prop-filter matches when the card has at least one property instance of its name
(and group, if given) that satisfies the prop-filter's text-matches and param-filters, combined
by its ``test``; an empty prop-filter only needs the property to exist; ``is-not-defined``
needs it to be absent. A text-match with ``negate-condition="yes"`` is satisfied by an instance
whose value does *not* match, so it never matches a card that lacks the property. A
param-filter text-match is satisfied when any value of the parameter matches (``TYPE`` values
split at commas, bare 2.1-style parameters counted as TYPE values); negation inverts that.
"""

from __future__ import annotations

from oxidav.collation import text_matches
from oxidav.contacts.filters import ALLOF, Filter, ParamFilter, PropFilter, TextMatch
from oxidav.contacts.index import match_value
from oxidav.contacts.vcard import Property, VCard


def card_matches(card: VCard, flt: Filter) -> bool:
    """Whether ``card`` matches the whole filter."""
    if not flt.prop_filters:
        return True
    results = (prop_filter_matches(card, prop_filter) for prop_filter in flt.prop_filters)
    return all(results) if flt.test == ALLOF else any(results)


def prop_filter_matches(card: VCard, prop_filter: PropFilter) -> bool:
    props = [prop for prop in card.properties if _selected(prop, prop_filter)]
    if prop_filter.is_not_defined:
        return not props
    if prop_filter.is_empty:
        return bool(props)
    return any(_instance_matches(prop, prop_filter) for prop in props)


def _selected(prop: Property, prop_filter: PropFilter) -> bool:
    if prop.name != prop_filter.name:
        return False
    return prop_filter.group is None or (prop.group or "").upper() == prop_filter.group


def _instance_matches(prop: Property, prop_filter: PropFilter) -> bool:
    value = match_value(prop)
    text_results = (_text_ok(value, text_match) for text_match in prop_filter.text_matches)
    param_results = (_param_ok(prop, param_filter) for param_filter in prop_filter.param_filters)
    if prop_filter.test == ALLOF:
        return all(text_results) and all(param_results)
    return any(text_results) or any(param_results)


def _text_ok(value: str, text_match: TextMatch) -> bool:
    hit = text_matches(value, text_match.text, text_match.collation, text_match.match_type)
    return hit != text_match.negate


def _param_ok(prop: Property, param_filter: ParamFilter) -> bool:
    values: list[str] | None
    if param_filter.name == "TYPE":
        types = prop.types()
        values = types if types or prop.has_param("TYPE") else None
    else:
        values = prop.param(param_filter.name)
    if param_filter.is_not_defined:
        return values is None
    if values is None:
        return False
    text_match = param_filter.text_match
    if text_match is None:
        return True
    hit = any(
        text_matches(value, text_match.text, text_match.collation, text_match.match_type)
        for value in values
    )
    return hit != text_match.negate
