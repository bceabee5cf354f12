"""Text matching with the collations CalDAV and CardDAV use (RFC 4790, RFC 5051).

- ``i;octet``: code points compared as they are.
- ``i;ascii-casemap``: ASCII letters compared case-insensitively (RFC 4790 §9.2), everything
  else as is. The CalDAV default (RFC 4791 §7.5.1).
- ``i;unicode-casemap``: Unicode compatibility decomposition and full case folding (RFC 5051),
  so "STRASSE" matches "straße" and a precomposed "é" matches "e" + U+0301. The CardDAV default
  (RFC 6352 §8.3).

``text_matches`` does the CalDAV substring test (RFC 4791 §9.7.5) and the CardDAV match types
"equals", "contains", "starts-with", "ends-with" (RFC 6352 §10.5.4).

Invariant: ``fold`` — the ``i;unicode-casemap`` form, also the key stored in the card index —
maps every character on its own, so ``fold(a + b) == fold(a) + fold(b)``. Hence, for every
collation C, "value C-matches needle" implies "fold(value) matches fold(needle)" in the same
match type, and a pre-filter on folded keys never loses an object the exact test would keep.
(The price: combining marks of one base letter are not put in canonical order across
characters, so "a" + U+0301 + U+0323 does not match "a" + U+0323 + U+0301; clients send
normalized text.)
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

OCTET = "i;octet"
ASCII_CASEMAP = "i;ascii-casemap"
UNICODE_CASEMAP = "i;unicode-casemap"
COLLATIONS = frozenset({OCTET, ASCII_CASEMAP, UNICODE_CASEMAP})
CALDAV_DEFAULT_COLLATION = ASCII_CASEMAP
CARDDAV_DEFAULT_COLLATION = UNICODE_CASEMAP

EQUALS = "equals"
CONTAINS = "contains"
STARTS_WITH = "starts-with"
ENDS_WITH = "ends-with"
MATCH_TYPES = (EQUALS, CONTAINS, STARTS_WITH, ENDS_WITH)
DEFAULT_MATCH_TYPE = CONTAINS

_ASCII_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}


@lru_cache(maxsize=8192)
def _fold_char(ch: str) -> str:
    return unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", ch).casefold())


def fold(text: str) -> str:
    """The ``i;unicode-casemap`` form of ``text``: NFKD and case folding, character by
    character (the module's invariant)."""
    if text.isascii():
        return text.lower()
    return "".join(_fold_char(ch) for ch in text)


def normalize(text: str, collation: str) -> str:
    """``text`` as ``collation`` compares it; ``ValueError`` for a collation not supported."""
    if collation == UNICODE_CASEMAP:
        return fold(text)
    if collation == ASCII_CASEMAP:
        return text.translate(_ASCII_LOWER)
    if collation == OCTET:
        return text
    raise ValueError(f"unsupported collation {collation!r}")


def text_matches(
    value: str,
    needle: str,
    collation: str = CALDAV_DEFAULT_COLLATION,
    match_type: str = DEFAULT_MATCH_TYPE,
) -> bool:
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
