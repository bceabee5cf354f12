"""The multistatus plumbing of the object REPORTs of CalDAV and CardDAV.

- ``ReportProps``: the ``DAV:prop`` / ``DAV:allprop`` / ``DAV:propname`` of a REPORT body and
  each object's property list for ``util.add_property_response``; a room names its data
  property (calendar-data, address-data) and how that is asked for and rendered.
- ``matches_response``: a query's answer, with the 507 for the request-URI when a limit cut
  it short (RFC 5323 §5.17, RFC 6352 §8.6.1, RFC 6578 §3.6).
- ``multiget_response``: a multiget's answer, a 404 response for each href that names no
  member (RFC 4791 §7.9, RFC 6352 §8.7); ``MultigetReport`` is the report itself, for a
  collection with ``load_members(names)`` and ``member_properties(props, row)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, TypeVar
from urllib.parse import unquote, urlsplit

from lxml import etree
from wsgidav import util, xml_tools
from wsgidav.dav_error import HTTP_BAD_REQUEST, DAVError

from oxidav.providers.dav_xml import text_element

INSUFFICIENT_STORAGE = "HTTP/1.1 507 Insufficient Storage"
NOT_FOUND = "HTTP/1.1 404 Not Found"
#: Properties answered when a REPORT names none (RFC 6352 §8.6 makes DAV:prop optional).
DEFAULT_PROPS = ("{DAV:}getetag",)

PropList = list[tuple[str, Any]]
RowT = TypeVar("RowT")


def status_response(
    multistatus: etree._Element, href: str, status: str, error: str | None = None
) -> None:
    """A ``DAV:response`` with a bare status (RFC 4918 §14.24), optionally a ``DAV:error``."""
    response = etree.SubElement(multistatus, "{DAV:}response")
    etree.SubElement(response, "{DAV:}href").text = href
    etree.SubElement(response, "{DAV:}status").text = status
    if error is not None:
        etree.SubElement(etree.SubElement(response, "{DAV:}error"), error)


def limit_exceeded(multistatus: etree._Element, href: str) -> None:
    """The response for the request-URI that says more members matched than were sent."""
    status_response(
        multistatus, href, INSUFFICIENT_STORAGE, error="{DAV:}number-of-matches-within-limits"
    )


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
        for child in prop:
            if isinstance(child, etree._Comment | etree._ProcessingInstruction):
                continue
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
    """The multistatus of a query: one response per ``(href, properties)``, then the 507
    for ``request_href`` if ``truncated``."""
    multistatus = xml_tools.make_multistatus_el()
    for href, props in responses:
        util.add_property_response(multistatus, href, props)
    if truncated:
        limit_exceeded(multistatus, request_href)
    return util.send_multi_status_response(environ, start_response, multistatus)  # type: ignore[no-any-return]


def multiget_response(
    environ: dict[str, Any],
    start_response: Any,
    collection_href: str,
    body: etree._Element,
    load: Callable[[Sequence[str]], Mapping[str, RowT]],
    properties: Callable[[RowT], PropList],
) -> Iterable[bytes]:
    """The multistatus of a multiget on the collection at ``collection_href``: ``load``
    reads the named members in one batch, ``properties`` answers for each."""
    hrefs = [(el.text or "").strip() for el in body.findall("{DAV:}href")]
    base = unquote(collection_href)
    names = {href: member_name(base, href) for href in hrefs}
    rows = load([name for name in names.values() if name])
    multistatus = xml_tools.make_multistatus_el()
    for href in hrefs:
        row = rows.get(names[href] or "")
        if row is None:
            status_response(multistatus, href, NOT_FOUND)
        else:
            util.add_property_response(multistatus, href, properties(row))
    return util.send_multi_status_response(environ, start_response, multistatus)  # type: ignore[no-any-return]


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
        )


def member_name(base: str, href: str) -> str | None:
    """The member name an href names inside the collection at ``base`` (decoded), else None."""
    path = unquote(urlsplit(href).path)
    if not path.startswith(base):
        return None
    name = path[len(base) :]
    return name if name and "/" not in name else None
