"""The multistatus plumbing of the object REPORTs of CalDAV and CardDAV.

- ``ReportProps``: the ``DAV:prop`` / ``DAV:allprop`` / ``DAV:propname`` of a REPORT body and
  each object's property list for ``util.add_property_response``; a room names its data
  property (calendar-data, address-data) and how that is asked for and rendered. A property
  named twice is answered once.
- ``matches_response``: a query's answer, with the 507 for the request-URI when a limit cut
  it short (RFC 5323 §5.17, RFC 6352 §8.6.1, RFC 6578 §3.6).
- ``multiget_response``: a multiget's answer, a 404 response for each href that names no
  member (RFC 4791 §7.9, RFC 6352 §8.7); ``MultigetReport`` is the report itself, for a
  collection with ``load_members(names)``, ``member_properties(props, row)`` and
  ``backend.settings``.

Invariants: answers are streamed (``multistatus``), never built whole; a multiget answers each
resource once however often and however spelled it is named, names at most
``max_report_hrefs`` hrefs, and holds about ``LOAD_BUDGET`` bytes of members at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from lxml import etree
from wsgidav.dav_error import HTTP_BAD_REQUEST, HTTP_FORBIDDEN, DAVError, DAVErrorCondition

from oxidav.providers.dav.multistatus import response_bytes, send_multistatus, status_bytes
from oxidav.providers.dav.xml import GETETAG, text_element

INSUFFICIENT_STORAGE = "HTTP/1.1 507 Insufficient Storage"
NOT_FOUND = "HTTP/1.1 404 Not Found"
MATCHES_WITHIN_LIMITS = "{DAV:}number-of-matches-within-limits"
#: Bytes of members a multiget holds loaded at once (a larger member is loaded alone).
LOAD_BUDGET = 1 << 20
#: Most members a multiget loads in one query.
MAX_LOAD_BATCH = 100
#: Properties answered when a REPORT names none (RFC 6352 §8.6 makes DAV:prop optional).
DEFAULT_PROPS = ("{DAV:}getetag",)

PropList = list[tuple[str, Any]]
RowT = TypeVar("RowT")


def limit_exceeded(href: str) -> bytes:
    """The response for the request-URI that says more members matched than were sent."""
    return status_bytes(href, INSUFFICIENT_STORAGE, error=MATCHES_WITHIN_LIMITS)


def nresults(limit: etree._Element | None) -> int | None:
    """``DAV:nresults`` of a ``DAV:limit`` element (RFC 5323 §5.17); None without a limit."""
    if limit is None:
        return None
    text = limit.findtext("{DAV:}nresults")
    try:
        value = int((text or "").strip())
    except ValueError:
        raise DAVError(HTTP_BAD_REQUEST, "DAV:limit needs an integer nresults") from None
    if value < 0:
        raise DAVError(HTTP_BAD_REQUEST, "nresults must not be negative")
    return value


class ReportProps:
    """The properties a REPORT asks for: names, and how to render ``data_property``."""

    #: The room's data property (CALDAV:calendar-data, CARDDAV:address-data).
    data_property: str = ""

    def __init__(self, prop: etree._Element | None, mode: str = "named") -> None:
        self.mode = mode
        self.names: list[str] = []
        if mode != "named":
            return
        if prop is None:
            self.names = list(DEFAULT_PROPS)
            return
        seen: set[str] = set()
        for child in prop:
            if not isinstance(child.tag, str) or child.tag in seen:
                continue  # a comment, or a property asked for again: answered once
            seen.add(child.tag)
            self.names.append(child.tag)
            if child.tag == self.data_property:
                self.read_data_request(child)

    def read_data_request(self, element: etree._Element) -> None:
        """Read how the data property is to be shaped; raises the room's DAVError."""

    @classmethod
    def from_body(cls, body: etree._Element) -> Any:
        if body.find("{DAV:}allprop") is not None:
            return cls(None, "allprop")
        if body.find("{DAV:}propname") is not None:
            return cls(None, "name")
        return cls(body.find("{DAV:}prop"))

    @property
    def etag_only(self) -> bool:
        """Whether DAV:getetag is all that is asked (a sync's usual question): a member's row
        answers it alone (``collections.row_etag``), with no resource built."""
        return self.mode == "named" and self.names == [GETETAG]

    @property
    def wants_data(self) -> bool:
        return self.data_property in self.names

    def property_list(self, resource: Any, render: Callable[[], str]) -> PropList:
        """The ``(name, value)`` list of ``resource``; ``render()`` gives the data text."""
        if self.mode != "named":
            return list(resource.get_properties(self.mode))
        result: PropList = []
        for name in self.names:
            try:
                if name == self.data_property:
                    value: Any = text_element(self.data_property, render())
                else:
                    value = resource.get_property_value(name)
            except DAVError as exc:
                value = exc
            result.append((name, value))
        return result


def matches_response(
    environ: dict[str, Any],
    start_response: Any,
    request_href: str,
    responses: Iterable[tuple[str, PropList]],
    truncated: bool,
) -> Iterable[bytes]:
    """The multistatus of a query, streamed: one response per ``(href, properties)``, then
    the 507 for ``request_href`` if ``truncated``."""

    def pieces() -> Iterator[bytes]:
        for href, props in responses:
            yield response_bytes(href, props)
        if truncated:
            yield limit_exceeded(request_href)

    return send_multistatus(environ, start_response, pieces())


def requested_hrefs(body: etree._Element, limit: int) -> list[str]:
    """The ``DAV:href`` texts of a multiget body, at most ``limit`` of them.

    More is refused as a whole with 403 and ``DAV:number-of-matches-within-limits``: that
    condition is the one RFC 5323 §5.17, RFC 6352 §8.6.1 and RFC 6578 §3.6 give for "more
    than the server answers", and 403 is the status RFC 4791 §1.3 / RFC 3253 §1.6 give a
    failed precondition that repeating will not fix. Not a 207 cut short with a 507 response
    for the request-URI: a multiget names what it wants, and a client that overlooks the 507
    would take the missing hrefs for gone; not a 507 status either, which Nextcloud clients
    read as "quota exceeded" and others as a transient server fault to retry.
    """
    elements = body.findall("{DAV:}href")
    if len(elements) > limit:
        raise DAVError(
            HTTP_FORBIDDEN,
            f"a multiget may name at most {limit} hrefs, this one names {len(elements)}",
            err_condition=DAVErrorCondition(MATCHES_WITHIN_LIMITS),
        )
    return [(el.text or "").strip() for el in elements]


def distinct_hrefs(hrefs: Iterable[str]) -> list[str]:
    """``hrefs`` without repeats, in order: two hrefs that spell the same path (an absolute
    URL and a path, percent-encoded or not) count once, answered under the first spelling."""
    seen: set[str] = set()
    result: list[str] = []
    for href in hrefs:
        key = href_path(href)
        if key not in seen:
            seen.add(key)
            result.append(href)
    return result


def multiget_responses(
    collection_href: str,
    hrefs: Sequence[str],
    load: Callable[[Sequence[str]], Mapping[str, RowT]],
    properties: Callable[[RowT], PropList],
) -> Iterator[bytes]:
    """The responses of a multiget of ``hrefs`` (distinct) on the collection at
    ``collection_href``: a 404 for each href that names no member.

    Members are loaded a few at a time, so a multiget of many large objects holds about
    ``LOAD_BUDGET`` bytes of them at once: the first batch is one member, then as many as fit
    the budget at the largest size seen so far."""
    base = unquote(collection_href)
    named = [(href, member_name(base, href)) for href in hrefs]
    batch_size = 1
    largest = 1
    start = 0
    while start < len(named):
        batch = named[start : start + batch_size]
        start += len(batch)
        rows = load([name for _, name in batch if name])
        for href, name in batch:
            row = rows.get(name or "")
            if row is None:
                yield status_bytes(href, NOT_FOUND)
            else:
                largest = max(largest, int(getattr(row, "size", 0)))
                yield response_bytes(href, properties(row))
        del rows
        batch_size = max(1, min(MAX_LOAD_BATCH, LOAD_BUDGET // largest))


def multiget_response(
    environ: dict[str, Any],
    start_response: Any,
    collection_href: str,
    body: etree._Element,
    load: Callable[[Sequence[str]], Mapping[str, RowT]],
    properties: Callable[[RowT], PropList],
    max_hrefs: int,
) -> Iterable[bytes]:
    """The multistatus of a multiget on the collection at ``collection_href``, streamed:
    ``load`` reads named members (a batch at a time), ``properties`` answers for each.
    At most ``max_hrefs`` hrefs; repeats of one are answered once."""
    hrefs = distinct_hrefs(requested_hrefs(body, max_hrefs))
    return send_multistatus(
        environ, start_response, multiget_responses(collection_href, hrefs, load, properties)
    )


class MultigetReport:
    """calendar-multiget (RFC 4791 §7.9) or addressbook-multiget (RFC 6352 §8.7): the named
    members of one collection of ``collection_type``; an href that names no member of it
    gets its own 404 response."""

    def __init__(self, name: str, collection_type: type, props_type: type[ReportProps]) -> None:
        self.name = name
        self.collection_type = collection_type
        self.props_type = props_type

    def applies_to(self, resource: Any) -> bool:
        return isinstance(resource, self.collection_type)

    def handle(
        self,
        server: Any,
        environ: dict[str, Any],
        start_response: Any,
        resource: Any,
        body: etree._Element,
    ) -> Iterable[bytes]:
        props = self.props_type.from_body(body)
        return multiget_response(
            environ,
            start_response,
            str(resource.get_href()),
            body,
            resource.load_members,
            lambda row: resource.member_properties(props, row),
            resource.backend.settings.max_report_hrefs,
        )


def href_path(href: str) -> str:
    """The decoded path an href names (an absolute URL's path, percent-decoded)."""
    return unquote(urlsplit(href).path)


def member_name(base: str, href: str) -> str | None:
    """The member name an href names inside the collection at ``base`` (decoded), else None."""
    path = href_path(href)
    if not path.startswith(base):
        return None
    name = path[len(base) :]
    return name if name and "/" not in name else None
