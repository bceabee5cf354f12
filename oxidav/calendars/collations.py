"""Text matching with the collations CalDAV and CardDAV require (RFC 4790, RFC 5051).

- ``i;octet``: the octets as they are.
- ``i;ascii-casemap``: ASCII letters folded to one case, everything else as is (RFC 4790 §9.2).
- ``i;unicode-casemap``: Unicode case folding plus compatibility decomposition (RFC 5051), so
  "STRASSE" matches "straße" and "é" matches "e\u0301".

``text_matches`` does the RFC 4791 §9.7.5 substring test and, for CardDAV (RFC 6352 §10.5.4),
the "equals", "starts-with" and "ends-with" match types.
"""

from __future__ import annotations

import unicodedata
from typing import Literal

MatchType = Literal["equals", "contains", "starts-with", "ends-with"]

DEFAULT_COLLATION = "i;ascii-casemap"
SUPPORTED_COLLATIONS = frozenset({"i;octet", "i;ascii-casemap", "i;unicode-casemap"})

_ASCII_UPPER = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "abcdefghijklmnopqrstuvwxyz",
)


def fold(text: str, collation: str) -> str:
    """``text`` in the canonical form of ``collation``; raises KeyError if unsupported."""
    if collation == "i;octet":
        return text
    if collation == "i;ascii-casemap":
        return text.translate(_ASCII_UPPER)
    if collation == "i;unicode-casemap":
        return unicodedata.normalize("NFKD", unicodedata.normalize("NFKD", text).casefold())
    raise KeyError(collation)


def text_matches(
    value: str, needle: str, collation: str = DEFAULT_COLLATION, match_type: MatchType = "contains"
) -> bool:
    """Whether ``value`` matches ``needle`` under ``collation`` (no negation applied)."""
    haystack, wanted = fold(value, collation), fold(needle, collation)
    if match_type == "contains":
        return wanted in haystack
    if match_type == "equals":
        return haystack == wanted
    if match_type == "starts-with":
        return haystack.startswith(wanted)
    return haystack.endswith(wanted)
