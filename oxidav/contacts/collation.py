"""Collations and match types of the CardDAV text-match (RFC 6352 §8.3, §10.5.4; RFC 4790).

Three collations are supported: ``i;octet`` (code points compared as they are),
``i;ascii-casemap`` (ASCII letters compared case-insensitively, RFC 4790 §9.2) and the CardDAV
default ``i;unicode-casemap`` (RFC 5051). For the latter oxidav compares strings after Unicode
compatibility decomposition and full case folding *per character* (``fold``): "Straße" matches
"STRASSE" and a precomposed "é" matches "e" + U+0301.

``fold`` is also the key stored in the card index. Because it maps every character on its own,
for every collation C: value C-matches needle implies fold(value) matches fold(needle) in the
same match type. The SQL pre-filter on folded keys therefore never loses a card that the exact
evaluation would keep, whatever the collation.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

OCTET = "i;octet"
ASCII_CASEMAP = "i;ascii-casemap"
UNICODE_CASEMAP = "i;unicode-casemap"
COLLATIONS = (ASCII_CASEMAP, OCTET, UNICODE_CASEMAP)
DEFAULT_COLLATION = UNICODE_CASEMAP

EQUALS = "equals"
CONTAINS = "contains"
STARTS_WITH = "starts-with"
ENDS_WITH = "ends-with"
MATCH_TYPES = (EQUALS, CONTAINS, STARTS_WITH, ENDS_WITH)
DEFAULT_MATCH_TYPE = CONTAINS


@lru_cache(maxsize=8192)
def _fold_char(ch: str) -> str:
    return unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold())


def fold(text: str) -> str:
    """The ``i;unicode-casemap`` key of ``text``: NFKD + case folding, character by character."""
    if text.isascii():
        return text.lower()
    return "".join(_fold_char(ch) for ch in text)


def _ascii_lower(text: str) -> str:
    return text.translate(_ASCII_LOWER)


_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


def normalize(text: str, collation: str) -> str:
    """``text`` as the collation compares it."""
    if collation == UNICODE_CASEMAP:
        return fold(text)
    if collation == ASCII_CASEMAP:
        return _ascii_lower(text)
    if collation == OCTET:
        return text
    raise ValueError(f"unsupported collation {collation!r}")


def text_matches(value: str, needle: str, collation: str, match_type: str) -> bool:
    """Whether ``value`` matches ``needle`` (before any negate-condition)."""
    value = normalize(value, collation)
    needle = normalize(needle, collation)
    if match_type == CONTAINS:
        return needle in value
    if match_type == EQUALS:
        return value == needle
    if match_type == STARTS_WITH:
        return value.startswith(needle)
    if match_type == ENDS_WITH:
        return value.endswith(needle)
    raise ValueError(f"unsupported match type {match_type!r}")
