"""Index extraction: the values of a card that addressbook-query text-matches look at.

``match_value`` defines, once, the string a text-match compares with (RFC 6352 §10.5.4): the
unescaped property value, structured values (N, ORG, ADR) with their ``;`` separators, and a
4.0 ``TEL`` URI without its ``tel:`` scheme so that 3.0 and 4.0 numbers match alike. The exact
evaluation and the card index both use it, so the SQL pre-filter and the evaluation agree.
"""

from __future__ import annotations

from oxidav.collation import fold
from oxidav.contacts.vcard import Property, VCard

#: Properties kept in the card index (a text-match on any other property is evaluated on
#: the parsed card only).
INDEXED_PROPERTIES = frozenset({"FN", "N", "EMAIL", "TEL", "ORG", "UID", "NICKNAME"})


def match_value(prop: Property) -> str:
    """The text a ``text-match`` on this property compares with."""
    text = prop.text()
    if prop.name == "TEL" and text[:4].lower() == "tel:":
        return text[4:]
    return text


def index_entries(card: VCard) -> list[tuple[str, str]]:
    """(property name, folded match value) for every indexed property instance, without
    duplicates, in card order."""
    seen: set[tuple[str, str]] = set()
    entries: list[tuple[str, str]] = []
    for prop in card.properties:
        if prop.name in INDEXED_PROPERTIES:
            entry = (prop.name, fold(match_value(prop)))
            if entry not in seen:
                seen.add(entry)
                entries.append(entry)
    return entries
