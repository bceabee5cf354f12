"""The vCard content-line model: parse, inspect and serialize (RFC 6350 §3.3, RFC 2426 §4).

vobject's lexer reads the text (line unfolding, content-line and parameter syntax). Values are
kept *raw*, still escaped as on the wire, and never decoded by a vobject "behavior": vobject's
vCard behavior only knows 3.0 and would, for instance, split a 4.0 ``PHOTO:data:…,…`` URI at
its comma. Keeping values raw makes a parse/serialize round trip lossless, photos included;
the 3.0 <-> 4.0 conversion (``convert``) rewrites only the lines it must. vobject is imported
by ``parse_vcards`` on its first call, not with this module: a server that serves only files
never loads it.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

CRLF = "\r\n"
FOLD_OCTETS = 75


class VCardSyntaxError(ValueError):
    """The text is not a sequence of well-formed vCard content lines and components."""


@dataclass
class Property:
    """One content line: ``[group "."] name *(";" param) ":" value``.

    ``name`` is upper-case; ``params`` keeps the order of the wire, each as (upper-case name,
    values). A parameter written without ``=`` (``TEL;WORK:…``, vCard 2.1 style, still sent by
    some clients) has no values. ``value`` is the raw, still escaped value.
    """

    name: str
    value: str
    params: list[tuple[str, list[str]]] = field(default_factory=list)
    group: str | None = None

    def param(self, name: str) -> list[str] | None:
        """All values of parameter ``name`` (several occurrences are merged); None if absent."""
        found: list[str] | None = None
        for pname, values in self.params:
            if pname == name:
                found = (found or []) + values
        return found

    def has_param(self, name: str) -> bool:
        return any(pname == name for pname, _ in self.params)

    def types(self) -> list[str]:
        """The TYPE values, upper-cased: comma lists split (also inside quotes, as clients mean
        ``TYPE="work,voice"`` as two types) and bare parameters counted as types."""
        result: list[str] = []
        for pname, values in self.params:
            if pname == "TYPE":
                for value in values:
                    result.extend(part.strip().upper() for part in value.split(",") if part)
            elif not values:
                result.append(pname)
        return result

    def set_param(self, name: str, values: list[str]) -> None:
        """Replace every occurrence of ``name`` by one with ``values`` (kept in place)."""
        out: list[tuple[str, list[str]]] = []
        placed = False
        for pname, old in self.params:
            if pname == name:
                if not placed:
                    out.append((name, values))
                    placed = True
            else:
                out.append((pname, old))
        if not placed:
            out.append((name, values))
        self.params = out

    def remove_param(self, name: str) -> None:
        self.params = [(pname, values) for pname, values in self.params if pname != name]

    def text(self) -> str:
        """The value unescaped as TEXT (RFC 6350 §3.4): ``\\n`` is a line break, ``\\,``
        ``\\;`` ``\\\\`` stand for themselves. Compound values keep their ``;`` separators."""
        return unescape_text(self.value)

    def components(self) -> list[str]:
        """A structured value (N, ADR, ORG …) split at unescaped ``;``, each part unescaped."""
        return [unescape_text(part) for part in split_unescaped(self.value, ";")]

    def serialize(self) -> str:
        head = f"{self.group}.{self.name}" if self.group else self.name
        parts = [head]
        for pname, values in self.params:
            parts.append(pname if not values else f"{pname}={','.join(map(_quote, values))}")
        return fold_line(";".join(parts) + ":" + self.value)


@dataclass
class VCard:
    """One ``BEGIN:VCARD`` … ``END:VCARD`` component: its properties in wire order (VERSION
    included, BEGIN/END not)."""

    properties: list[Property]

    @property
    def version(self) -> str | None:
        prop = self.first("VERSION")
        return prop.value.strip() if prop else None

    def get(self, name: str) -> list[Property]:
        return [prop for prop in self.properties if prop.name == name]

    def first(self, name: str) -> Property | None:
        return next((prop for prop in self.properties if prop.name == name), None)

    def serialize(self) -> str:
        lines = ["BEGIN:VCARD" + CRLF]
        lines.extend(prop.serialize() for prop in self.properties)
        lines.append("END:VCARD" + CRLF)
        return "".join(lines)


def parse_vcards(text: str) -> list[VCard]:
    """Parse every top-level vCard of ``text``.

    Raises ``VCardSyntaxError`` for a line that is not a content line, a property outside a
    vCard, a nested component, or a vCard that is never closed.
    """
    from vobject.base import ParseError, getLogicalLines, parseLine

    if text.startswith("\ufeff"):
        text = text[1:]
    cards: list[VCard] = []
    current: list[Property] | None = None
    for line, number in getLogicalLines(io.StringIO(text), False):
        if not line.strip():
            continue
        try:
            name, raw_params, value, group = parseLine(line, number)
        except ParseError:
            raise VCardSyntaxError(f"line {number} is not a vCard content line") from None
        name = name.upper()
        if name == "BEGIN":
            if current is not None:
                raise VCardSyntaxError(f"line {number}: nested component {value!r}")
            if value.strip().upper() != "VCARD":
                raise VCardSyntaxError(f"line {number}: {value!r} is not a vCard")
            current = []
        elif name == "END":
            if current is None or value.strip().upper() != "VCARD":
                raise VCardSyntaxError(f"line {number}: END without a matching BEGIN:VCARD")
            cards.append(VCard(current))
            current = None
        elif current is None:
            raise VCardSyntaxError(f"line {number}: property {name} outside BEGIN:VCARD")
        else:
            current.append(Property(name, value, _params(raw_params), group))
    if current is not None:
        raise VCardSyntaxError("BEGIN:VCARD is never closed by END:VCARD")
    return cards


def _params(raw: list[list[str]]) -> list[tuple[str, list[str]]]:
    return [(item[0].upper(), list(item[1:])) for item in raw]


def _quote(value: str) -> str:
    # RFC 6350 §3.3: a parameter value containing ":", ";" or "," must be a quoted-string;
    # DQUOTE itself cannot appear in one (RFC 6868 ^' is its 4.0 spelling).
    if any(ch in value for ch in ":;,") or value != value.strip():
        return '"' + value.replace('"', "^'") + '"'
    return value


def fold_line(line: str) -> str:
    """Fold a content line at 75 octets (RFC 6350 §3.2) without splitting a UTF-8 sequence;
    returns it with its CRLF."""
    if len(line) <= FOLD_OCTETS and line.isascii():
        return line + CRLF
    if line.isascii():
        chunks = [line[:FOLD_OCTETS]]
        chunks.extend(
            line[start : start + FOLD_OCTETS - 1]
            for start in range(FOLD_OCTETS, len(line), FOLD_OCTETS - 1)
        )
        return (CRLF + " ").join(chunks) + CRLF
    out: list[str] = []
    current: list[str] = []
    size = 0
    limit = FOLD_OCTETS
    for ch in line:
        width = len(ch.encode("utf-8"))
        if size + width > limit:
            out.append("".join(current))
            current, size, limit = [], 0, FOLD_OCTETS - 1
        current.append(ch)
        size += width
    out.append("".join(current))
    return (CRLF + " ").join(out) + CRLF


_UNESCAPES = {"n": "\n", "N": "\n", "\\": "\\", ",": ",", ";": ";", ":": ":"}


def unescape_text(raw: str) -> str:
    """Undo TEXT escaping (RFC 6350 §3.4). An unknown escape keeps the escaped character."""
    if "\\" not in raw:
        return raw
    out: list[str] = []
    chars = iter(raw)
    for ch in chars:
        if ch == "\\":
            nxt = next(chars, "")
            out.append(_UNESCAPES.get(nxt, nxt))
        else:
            out.append(ch)
    return "".join(out)


def escape_text(text: str) -> str:
    """TEXT escaping (RFC 6350 §3.4) of a plain string."""
    return (
        text.replace("\\", "\\\\")
        .replace(",", "\\,")
        .replace(";", "\\;")
        .replace("\r\n", "\\n")
        .replace("\n", "\\n")
    )


def split_unescaped(raw: str, separator: str) -> list[str]:
    """Split a raw value at every ``separator`` that is not preceded by a backslash escape."""
    parts: list[str] = []
    current: list[str] = []
    escaped = False
    for ch in raw:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            current.append(ch)
            escaped = True
        elif ch == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(ch)
    parts.append("".join(current))
    return parts
