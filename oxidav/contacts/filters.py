"""The addressbook-query filter model, parsed from its XML (RFC 6352 §10.5, §10.6).

``Filter`` holds ``PropFilter``s combined by ``test`` (anyof / allof); a ``PropFilter`` holds
either ``is-not-defined`` or ``TextMatch``es and ``ParamFilter``s, again combined by its own
``test``. ``parse_filter`` and ``parse_limit`` build them from the request elements and raise
typed errors (``supported-filter``, ``supported-collation``) for what cannot be served.
Evaluation lives in ``evaluate``.
"""

from __future__ import annotations

from dataclasses import dataclass

from lxml import etree

from oxidav.collation import CARDDAV_DEFAULT_COLLATION as DEFAULT_COLLATION
from oxidav.collation import COLLATIONS, DEFAULT_MATCH_TYPE, MATCH_TYPES
from oxidav.contacts.errors import (
    CARDDAV_NS,
    BadRequestError,
    UnsupportedCollationError,
    UnsupportedFilterError,
)

ANYOF = "anyof"
ALLOF = "allof"
_C = f"{{{CARDDAV_NS}}}"


@dataclass(frozen=True)
class TextMatch:
    """RFC 6352 §10.5.4: ``text`` compared with ``collation`` and ``match_type``; ``negate``
    inverts the result."""

    text: str
    collation: str = DEFAULT_COLLATION
    match_type: str = DEFAULT_MATCH_TYPE
    negate: bool = False


@dataclass(frozen=True)
class ParamFilter:
    """RFC 6352 §10.5.2: a parameter of the property exists (no child), does not exist
    (``is_not_defined``), or has a value matching ``text_match``."""

    name: str
    is_not_defined: bool = False
    text_match: TextMatch | None = None


@dataclass(frozen=True)
class PropFilter:
    """RFC 6352 §10.5.1. ``name`` is upper-case; ``group`` is set when the filter names a
    grouped property (``item1.EMAIL``)."""

    name: str
    group: str | None = None
    test: str = ANYOF
    is_not_defined: bool = False
    text_matches: tuple[TextMatch, ...] = ()
    param_filters: tuple[ParamFilter, ...] = ()

    @property
    def is_empty(self) -> bool:
        """An empty prop-filter tests only that the property exists."""
        return not (self.is_not_defined or self.text_matches or self.param_filters)


@dataclass(frozen=True)
class Filter:
    """RFC 6352 §10.5: an empty filter matches every card."""

    test: str = ANYOF
    prop_filters: tuple[PropFilter, ...] = ()


def parse_filter(element: etree._Element) -> Filter:
    """Build a ``Filter`` from a ``CARDDAV:filter`` element."""
    if element.tag != _C + "filter":
        raise UnsupportedFilterError(f"expected CARDDAV:filter, got {element.tag}")
    prop_filters = []
    for child in _elements(element):
        if child.tag != _C + "prop-filter":
            raise UnsupportedFilterError(f"unsupported filter element {child.tag}")
        prop_filters.append(_prop_filter(child))
    return Filter(test=_test(element), prop_filters=tuple(prop_filters))


def parse_limit(element: etree._Element | None) -> int | None:
    """``nresults`` of a ``CARDDAV:limit`` (RFC 6352 §10.6) or ``DAV:limit`` (RFC 5323 §5.17)
    element; None when there is no element."""
    if element is None:
        return None
    for child in _elements(element):
        if etree.QName(child).localname == "nresults":
            try:
                value = int((child.text or "").strip())
            except ValueError:
                raise BadRequestError("nresults must be an integer") from None
            if value < 0:
                raise BadRequestError("nresults must not be negative")
            return value
    raise BadRequestError("limit without nresults")


def _elements(element: etree._Element) -> list[etree._Element]:
    return [child for child in element if isinstance(child.tag, str)]


def _test(element: etree._Element) -> str:
    test = element.get("test", ANYOF)
    if test not in (ANYOF, ALLOF):
        raise UnsupportedFilterError(f"test must be anyof or allof, not {test!r}")
    return test


def _name(element: etree._Element) -> str:
    name = (element.get("name") or "").strip()
    if not name:
        raise UnsupportedFilterError(f"{etree.QName(element).localname} needs a name attribute")
    return name.upper()


def _prop_filter(element: etree._Element) -> PropFilter:
    name = _name(element)
    group: str | None = None
    if "." in name:
        group, name = name.rsplit(".", 1)
    is_not_defined = False
    text_matches: list[TextMatch] = []
    param_filters: list[ParamFilter] = []
    for child in _elements(element):
        if child.tag == _C + "is-not-defined":
            is_not_defined = True
        elif child.tag == _C + "text-match":
            text_matches.append(_text_match(child))
        elif child.tag == _C + "param-filter":
            param_filters.append(_param_filter(child))
        else:
            raise UnsupportedFilterError(f"unsupported prop-filter element {child.tag}")
    if is_not_defined and (text_matches or param_filters):
        raise UnsupportedFilterError("is-not-defined cannot be combined with other tests")
    return PropFilter(
        name=name,
        group=group,
        test=_test(element),
        is_not_defined=is_not_defined,
        text_matches=tuple(text_matches),
        param_filters=tuple(param_filters),
    )


def _param_filter(element: etree._Element) -> ParamFilter:
    children = _elements(element)
    if len(children) > 1:
        raise UnsupportedFilterError("a param-filter has at most one test")
    if not children:
        return ParamFilter(name=_name(element))
    child = children[0]
    if child.tag == _C + "is-not-defined":
        return ParamFilter(name=_name(element), is_not_defined=True)
    if child.tag == _C + "text-match":
        return ParamFilter(name=_name(element), text_match=_text_match(child))
    raise UnsupportedFilterError(f"unsupported param-filter element {child.tag}")


def _text_match(element: etree._Element) -> TextMatch:
    collation = element.get("collation", DEFAULT_COLLATION)
    if collation not in COLLATIONS:
        raise UnsupportedCollationError(f"collation {collation!r} is not supported")
    match_type = element.get("match-type", DEFAULT_MATCH_TYPE)
    if match_type not in MATCH_TYPES:
        raise UnsupportedFilterError(f"match-type {match_type!r} is not supported")
    negate = element.get("negate-condition", "no")
    if negate not in ("yes", "no"):
        raise UnsupportedFilterError("negate-condition must be yes or no")
    return TextMatch(
        text=element.text or "",
        collation=collation,
        match_type=match_type,
        negate=negate == "yes",
    )
