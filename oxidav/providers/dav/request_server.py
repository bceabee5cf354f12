"""oxidav's RequestServer: WsgiDAV's, plus the methods WsgiDAV lacks (REPORT first of all).

WsgiDAV answers 405 for any method it does not know before a provider hook runs, so new methods
are added here (docs/wsgidav.md#new-methods). The REPORTs and the SEARCH handler are not hard-coded
nor registered at import: ``make_app`` lists them in a ``DavExtensions``, which the resolver hands
to each request server, and ``supported-report-set`` is computed from it (two applications in one
process answer what each was given).

Collections with a request body are made the same way for MKCALENDAR (RFC 4791 §5.3.1) and
extended MKCOL (RFC 5689 §3): the parent collection creates the child if it implements
``create_calendar_collection`` / ``create_extended_collection`` (``CollectionMaker``); a
provider may also intercept either method in its ``custom_request_handler``. OPTIONS
advertises the DAV classes and extensions of the whole server (RFC 4791 §5.1, RFC 6352 §6.1,
RFC 5689 §3.1).

GET and HEAD of a collection answer 200 with a short text saying what the URL is (RFC 4918
§9.4 leaves that body to the server), where WsgiDAV without its dir browser answers 403: some
clients check that a WebDAV URL works by GETting it, and Nextcloud answers them the same way.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from lxml import etree
from wsgidav import util
from wsgidav.dav_error import (
    HTTP_BAD_REQUEST,
    HTTP_CONFLICT,
    HTTP_FORBIDDEN,
    HTTP_MEDIATYPE_NOT_SUPPORTED,
    HTTP_METHOD_NOT_ALLOWED,
    HTTP_NOT_FOUND,
    DAVError,
    DAVErrorCondition,
)
from wsgidav.request_server import RequestServer

from oxidav.environ import ENVIRON_DAV_EXTENSIONS
from oxidav.providers.dav.propfind import propfind
from oxidav.providers.dav.xml_input import XmlInput, replace_body, request_xml

#: Extensions every oxidav response to OPTIONS lists after WsgiDAV's classes ("1" or "1,2").
DAV_EXTENSIONS = ("3", "calendar-access", "addressbook", "extended-mkcol")
CALDAV_NS = "urn:ietf:params:xml:ns:caldav"
HTTP_CREATED_STATUS = "201 Created"
#: The body of a GET of a collection.
COLLECTION_TEXT = (
    b"This is a WebDAV collection of oxidav. Open it with a WebDAV client: a file manager's "
    b"network drive, rclone, the Nextcloud desktop client, or a calendar or contacts app.\n"
)


class CollectionMaker(Protocol):
    """A collection that can create children from a request body (MKCALENDAR, extended MKCOL).

    ``body`` is the parsed ``CALDAV:mkcalendar`` / ``DAV:mkcol`` element, or None without a
    body. The method raises ``DAVError`` (with its precondition) to refuse."""

    def create_calendar_collection(self, name: str, body: etree._Element | None) -> None: ...

    def create_extended_collection(self, name: str, body: etree._Element | None) -> None: ...


class Report(Protocol):
    """One REPORT type (RFC 3253 §3.6), identified by the Clark name of its body element."""

    name: str

    def applies_to(self, resource: Any) -> bool:
        """Whether this report may be run on ``resource`` (listed in its supported-report-set)."""
        ...

    def handle(
        self,
        server: OxiRequestServer,
        environ: dict[str, Any],
        start_response: Any,
        resource: Any,
        body: etree._Element,
    ) -> Iterable[bytes]:
        """Answer the report."""
        ...


#: The SEARCH (RFC 5323) handler: ``handler(server, environ, start_response, body)``.
SearchHandler = Callable[["OxiRequestServer", dict[str, Any], Any, etree._Element], Iterable[bytes]]


class DavExtensions:
    """The REPORTs and the SEARCH handler (None: SEARCH is 405) of one application.

    Several reports may share a name (calendars and address books both answer
    DAV:sync-collection): the first listed that applies to the resource answers."""

    def __init__(self, reports: Iterable[Report] = (), search: SearchHandler | None = None) -> None:
        self.reports: dict[str, Report] = {}
        self.search = search
        for report in reports:
            existing = self.reports.get(report.name)
            if existing is None:
                self.reports[report.name] = report
                continue
            known = existing.reports if isinstance(existing, _FirstApplicable) else (existing,)
            self.reports[report.name] = _FirstApplicable(report.name, (*known, report))

    def supported(self, resource: Any) -> list[str]:
        """Clark names of the reports that apply to ``resource``."""
        return [name for name, report in self.reports.items() if report.applies_to(resource)]


class ChosenReport:
    """A report that answers as the report ``choose(resource)`` gives, and applies where it
    gives one."""

    name: str

    def choose(self, resource: Any) -> Report | None:
        raise NotImplementedError

    def applies_to(self, resource: Any) -> bool:
        return self.choose(resource) is not None

    def handle(
        self,
        server: OxiRequestServer,
        environ: dict[str, Any],
        start_response: Any,
        resource: Any,
        body: etree._Element,
    ) -> Iterable[bytes]:
        report = self.choose(resource)
        assert report is not None  # do_REPORT asked applies_to first
        return report.handle(server, environ, start_response, resource, body)


class _FirstApplicable(ChosenReport):
    """Reports sharing one name, each for its own kind of resource."""

    def __init__(self, name: str, reports: tuple[Report, ...]) -> None:
        self.name = name
        self.reports = reports

    def choose(self, resource: Any) -> Report | None:
        return next((r for r in self.reports if r.applies_to(resource)), None)


def supported_reports(resource: Any) -> list[str]:
    """Clark names of the reports that apply to ``resource`` in the application serving its
    request (none outside one)."""
    extensions = resource.environ.get(ENVIRON_DAV_EXTENSIONS)
    return extensions.supported(resource) if isinstance(extensions, DavExtensions) else []


class OxiRequestServer(RequestServer):  # type: ignore[misc]
    def __init__(
        self,
        dav_provider: Any,
        xml_input: XmlInput | None = None,
        extensions: DavExtensions | None = None,
    ) -> None:
        super().__init__(dav_provider)
        self._xml_input = xml_input or XmlInput()
        self._extensions = extensions or DavExtensions()
        self._possible_methods.append("REPORT")
        self._possible_methods.append("SEARCH")
        if not dav_provider.is_readonly():
            self._possible_methods.append("MKCALENDAR")

    def __call__(self, environ: dict[str, Any], start_response: Any) -> Iterator[bytes]:
        """Read (bounded) and check the XML body before any handler runs (``xml_input``)."""
        self._xml_input.prepare(environ)
        environ[ENVIRON_DAV_EXTENSIONS] = self._extensions
        yield from super().__call__(environ, start_response)

    def do_OPTIONS(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        result: Iterable[bytes] = super().do_OPTIONS(
            environ,
            _options_headers(
                start_response, self._possible_methods, self._extensions.search is not None
            ),
        )
        return result

    def _send_resource(
        self, environ: dict[str, Any], start_response: Any, *, is_head_method: bool = False
    ) -> Iterator[bytes]:
        """GET / HEAD: WsgiDAV's, except that a collection answers ``COLLECTION_TEXT`` where
        WsgiDAV refuses it with 403. WsgiDAV's is a generator whose checks run on the first
        step: the resource is looked up a second time only after that refusal."""
        answer = super()._send_resource(environ, start_response, is_head_method=is_head_method)
        try:
            first = next(answer)
        except StopIteration:
            return
        except DAVError as error:
            resource = None
            if error.value == HTTP_FORBIDDEN:
                resource = self._davProvider.get_resource_inst(environ["PATH_INFO"], environ)
            if resource is None or not resource.is_collection:
                raise
            self._evaluate_if_headers(resource, environ)
            start_response(
                "200 OK",
                [
                    ("Content-Type", "text/plain; charset=utf-8"),
                    ("Content-Length", str(len(COLLECTION_TEXT))),
                ],
            )
            yield b"" if is_head_method else COLLECTION_TEXT
            return
        yield first
        yield from answer

    def do_PROPFIND(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        """WsgiDAV's PROPFIND, streamed and with each property answered once
        (``dav_propfind``), with ``DAV:propname`` understood (RFC 4918 §9.1: WsgiDAV 4.4
        looks for a ``DAV:name`` element instead and answers a propname request with no
        properties at all)."""
        _rename_propname(environ)
        return propfind(self, environ, start_response)

    def do_COPY(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        return self._copy_or_move_mounted(environ, start_response, super().do_COPY)

    def do_MOVE(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        return self._copy_or_move_mounted(environ, start_response, super().do_MOVE)

    def _copy_or_move_mounted(
        self, environ: dict[str, Any], start_response: Any, handler: Callable[..., Any]
    ) -> Iterable[bytes]:
        """WsgiDAV's COPY / MOVE, handed the Destination with the provider's ``mount_path``
        in front, as it expects it (oxidav's layers see it without: ``oxidav.base_path``)."""
        mount_path = str(self._davProvider.mount_path or "")
        destination = environ.get("HTTP_DESTINATION")
        if not mount_path or not destination:
            result: Iterable[bytes] = handler(environ, start_response)
            return result
        try:
            parts = urlsplit(str(destination))
        except ValueError:
            raise DAVError(HTTP_BAD_REQUEST, "malformed Destination header") from None
        environ["HTTP_DESTINATION"] = urlunsplit(parts._replace(path=mount_path + parts.path))
        try:
            result = handler(environ, start_response)  # answered before it returns
        finally:
            environ["HTTP_DESTINATION"] = destination
        return result

    def do_MKCALENDAR(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        """RFC 4791 §5.3.1: create a calendar collection, its properties set from the body."""
        return self._make_collection(environ, start_response, "create_calendar_collection")

    def do_MKCOL(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        """RFC 4918 MKCOL, or RFC 5689 extended MKCOL when there is a body."""
        if not _has_body(environ):
            result: Iterable[bytes] = super().do_MKCOL(environ, start_response)
            return result
        return self._make_collection(environ, start_response, "create_extended_collection")

    def _make_collection(
        self, environ: dict[str, Any], start_response: Any, method: str
    ) -> Iterable[bytes]:
        path = environ["PATH_INFO"]
        provider = self._davProvider
        if environ.get("HTTP_DEPTH", "0") not in ("0", ""):
            raise DAVError(HTTP_BAD_REQUEST, "Depth must be 0")
        if provider.exists(path, environ):
            raise DAVError(HTTP_METHOD_NOT_ALLOWED, "the URL is already mapped")
        parent = provider.get_resource_inst(util.get_uri_parent(path), environ)
        if parent is None or not parent.is_collection:
            raise DAVError(HTTP_CONFLICT, "the parent collection does not exist")
        maker = getattr(parent, method, None)
        if maker is None:
            if method == "create_extended_collection":
                raise DAVError(HTTP_MEDIATYPE_NOT_SUPPORTED, "MKCOL with a body is not supported")
            raise DAVError(
                HTTP_FORBIDDEN,
                "calendars cannot be created here",
                err_condition=DAVErrorCondition(f"{{{CALDAV_NS}}}calendar-collection-location-ok"),
            )
        self._check_write_permission(parent, "0", environ)
        body = request_xml(environ, allow_empty=True)
        maker(util.get_uri_name(path), body)
        start_response(HTTP_CREATED_STATUS, [("Content-Length", "0")])
        return [b""]

    def do_SEARCH(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        """RFC 5323 SEARCH, answered by the registered handler."""
        search = self._extensions.search
        if search is None:
            raise DAVError(HTTP_METHOD_NOT_ALLOWED)
        body = request_xml(environ)
        result: Iterable[bytes] = search(self, environ, start_response, body)
        return result

    def do_REPORT(self, environ: dict[str, Any], start_response: Any) -> Iterable[bytes]:
        resource = self._davProvider.get_resource_inst(environ["PATH_INFO"], environ)
        if resource is None:
            raise DAVError(HTTP_NOT_FOUND)
        body = request_xml(environ)
        report = self._extensions.reports.get(body.tag)
        if report is None or not report.applies_to(resource):
            raise DAVError(
                403, "Unsupported report", err_condition=_precondition("supported-report")
            )
        result: Iterable[bytes] = report.handle(self, environ, start_response, resource, body)
        return result


def _rename_propname(environ: dict[str, Any]) -> None:
    root = request_xml(environ, allow_empty=True)
    if root is None:
        return
    renamed = False
    for child in root:
        if child.tag == "{DAV:}propname":
            child.tag = "{DAV:}name"
            renamed = True
    if renamed:
        replace_body(environ, root)


def _has_body(environ: dict[str, Any]) -> bool:
    if "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower():
        return True
    return util.get_content_length(environ) > 0  # type: ignore[no-any-return]


def _merge_list(existing: str, extra: Iterable[str]) -> str:
    items = [item.strip() for item in existing.split(",") if item.strip()]
    items += [item for item in extra if item not in items]
    return ", ".join(items)


def _options_headers(start_response: Any, methods: list[str], searchable: bool) -> Any:
    """Wrap ``start_response`` so OPTIONS lists the server's DAV extensions and the methods
    WsgiDAV does not know (REPORT, MKCALENDAR) in ``DAV`` and ``Allow``."""

    def wrapped(status: str, headers: list[tuple[str, str]], exc_info: Any = None) -> Any:
        result = []
        for key, value in headers:
            if key.lower() == "dav":
                value = _merge_list(value, DAV_EXTENSIONS)
            elif key.lower() == "allow":
                extra = ("REPORT", "MKCALENDAR", *(("SEARCH",) if searchable else ()))
                value = _merge_list(value, [m for m in extra if m in methods])
            result.append((key, value))
        if searchable:
            result.append(("DASL", "<DAV:basicsearch>"))  # RFC 5323 §3.2
        return start_response(status, result, exc_info)

    return wrapped


def _precondition(name: str) -> Any:
    from wsgidav.dav_error import DAVErrorCondition

    return DAVErrorCondition(f"{{DAV:}}{name}")
